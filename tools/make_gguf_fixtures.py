#!/usr/bin/env python3
"""A GGUF file for clformer's reader tests, written by the gguf package.

Writes tests/data/gguf/reader.gguf (version 3, alignment 64) and tests/fuzz/corpus/gguf/seed.gguf
(the same file; the fuzz corpus starts from it). tests/test_gguf.c knows its contents:

metadata
    general.architecture = "llama" (string), general.alignment = 64 (u32)
    test.u8 = 200, test.i8 = -100, test.u16 = 60000, test.i16 = -30000, test.u32 = 4000000000,
    test.i32 = -2000000000, test.u64 = 2**63 + 5, test.i64 = -(2**40), test.f32 = 0.5,
    test.f64 = 3.25, test.bool = true
    test.strings = ["a", "", "héllo"], test.ints = [1, -2, 3] (i32), test.floats = [0.25, -1.5]
    (f32), test.nested = [[1, 2], [3]] (arrays of i32)
tensors (ggml order ne[0] first)
    f32   (3, 2)     F32   values i / 8, i = 0 .. 5
    f16   (4)        F16   values 1, 2, 3, 4
    q8_0  (64, 2)    Q8_0  gguf.quantize of (i - 64) / 16, i = 0 .. 127
    q4_0  (32, 3)    Q4_0  gguf.quantize of sin(i), i = 0 .. 95
    q4_k  (256, 1)   Q4_K  tools/make_quant_fixtures.py's packer on cos(i / 7)
    q6_k  (256, 1)   Q6_K  its packer on sin(i / 5)
    q5_k  (256, 1)   Q5_K  176 bytes of 0x11 (a type clformer does not read)

Run: python3 tools/make_gguf_fixtures.py   (needs gguf and numpy from PyPI)
"""
import os
import shutil
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quant_fixtures import pack_q4_k, pack_q6_k  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    out = os.path.join(ROOT, "tests", "data", "gguf")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "reader.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_custom_alignment(64)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**40))
    w.add_float32("test.f32", 0.5)
    w.add_float64("test.f64", 3.25)
    w.add_bool("test.bool", True)
    w.add_array("test.strings", ["a", "", "héllo"])
    w.add_key_value("test.ints", [1, -2, 3], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)
    w.add_key_value("test.floats", [0.25, -1.5], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.FLOAT32)
    w.add_array("test.nested", [[1, 2], [3]])
    # numpy shapes are PyTorch's order: (rows, row length)
    w.add_tensor("f32", (np.arange(6, dtype=np.float32) / 8).reshape(2, 3))
    w.add_tensor("f16", np.array([1, 2, 3, 4], np.float16))
    q8 = quants.quantize(((np.arange(128) - 64) / 16).astype(np.float32).reshape(2, 64), T.Q8_0)
    w.add_tensor("q8_0", q8, raw_dtype=T.Q8_0)
    q4 = quants.quantize(np.sin(np.arange(96)).astype(np.float32).reshape(3, 32), T.Q4_0)
    w.add_tensor("q4_0", q4, raw_dtype=T.Q4_0)
    w.add_tensor("q4_k", pack_q4_k(np.cos(np.arange(256) / 7))[0], raw_dtype=T.Q4_K)
    w.add_tensor("q6_k", pack_q6_k(np.sin(np.arange(256) / 5))[0], raw_dtype=T.Q6_K)
    w.add_tensor("q5_k", np.full((1, 176), 0x11, np.uint8), raw_dtype=T.Q5_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus", "gguf")
    os.makedirs(corpus, exist_ok=True)
    shutil.copy(path, os.path.join(corpus, "seed.gguf"))
    r = gguf.GGUFReader(path)
    for t in r.tensors:
        print(t.name, t.tensor_type.name, list(t.shape), int(t.data_offset), t.n_bytes)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
