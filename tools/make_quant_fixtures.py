#!/usr/bin/env python3
"""Reference data for clformer's block types (Q8_0, Q4_0, Q4_K, Q6_K), from the gguf package.

Writes tests/data/quant/ (little-endian raw files, read by tests/test_dtypes.c):
    <t>_src.f32   floats to quantize (Q8_0 and Q4_0 only): random blocks and awkward ones (zeros,
                  one value, ties at the rounding boundaries, negative maxima, tiny values)
    <t>.bin       the blocks: gguf.quantize(src) for Q8_0/Q4_0; for Q4_K/Q6_K (which gguf only
                  dequantizes) the packer below applied to random floats, then random bytes in
                  the quants and scales of a few more blocks
    <t>_deq.f32   gguf.dequantize(<t>.bin): what clf_dequantize and the kernels must reproduce

The Q4_K and Q6_K packers here follow ggml's block layouts (ggml-common.h) with plain per
sub-block scales (min/max for Q4_K, max magnitude for Q6_K); they are checked to round-trip
through gguf's dequantizer within their quantization step. tools/ scripts make model fixtures
with them too.

Run: python3 tools/make_quant_fixtures.py   (needs gguf and numpy from PyPI)
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "quant")


def pack_q4_k(x):
    """Q4_K blocks (144 bytes per 256 floats): w = d sc q - dmin m per sub-block of 32."""
    x = np.asarray(x, np.float32).reshape(-1, 8, 32)
    n = x.shape[0]
    lo = np.minimum(x.min(axis=2), 0.0)  # (n, 8): each sub-block's min (<= 0: m >= 0)
    hi = x.max(axis=2)
    step = (hi - lo) / 15.0  # per sub-block scale of the nibbles
    d = (step.max(axis=1) / 63.0).astype(np.float16)  # (n,)
    dmin = ((-lo).max(axis=1) / 63.0).astype(np.float16)
    d32, dm32 = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        # rounded up, so that the nibbles cover [lo, hi]
        sc = np.where(d32 > 0, np.ceil(step / d32), 0).clip(0, 63).astype(np.uint8)
        m = np.where(dm32 > 0, np.ceil(-lo / dm32), 0).clip(0, 63).astype(np.uint8)
        ds = d32 * sc.astype(np.float32)
        dm = dm32 * m.astype(np.float32)
        q = np.where(ds[:, :, None] > 0, np.rint((x + dm[:, :, None]) / ds[:, :, None]), 0)
    q = q.clip(0, 15).astype(np.uint8)  # (n, 8, 32)
    scales = np.zeros((n, 12), np.uint8)
    scales[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    scales[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(n, 128)  # sub-blocks 2j, 2j+1 share bytes
    blocks = np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                             scales, qs], axis=1)
    return blocks, 0.5 * ds + dm32 + 1e-6  # error bound per sub-block: half a step, m's rounding


def pack_q6_k(x):
    """Q6_K blocks (210 bytes per 256 floats): w = d sc (q - 32) per sub-block of 16."""
    x = np.asarray(x, np.float32).reshape(-1, 16, 16)
    n = x.shape[0]
    amax = np.abs(x).max(axis=2)  # (n, 16)
    step = amax / 31.0
    d = (step.max(axis=1) / 127.0).astype(np.float16)
    d32 = d.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32 > 0, np.ceil(step / d32), 0).clip(-128, 127).astype(np.int8)
        s = d32 * sc.astype(np.float32)
        q = np.where(s[:, :, None] != 0, np.rint(x / s[:, :, None]), 0)
    q = (q.clip(-32, 31) + 32).astype(np.uint8).reshape(n, 256)
    # element 128 h + 32 j + l: low nibble in ql[64 h + 32 (j & 1) + l] (high nibble for j >= 2),
    # its top two bits at 2j in qh[32 h + l]
    ql = np.zeros((n, 128), np.uint8)
    qh = np.zeros((n, 64), np.uint8)
    for h in range(2):
        for j in range(4):
            v = q[:, 128 * h + 32 * j: 128 * h + 32 * j + 32]
            o = 64 * h + 32 * (j & 1)
            ql[:, o:o + 32] |= (v & 15) << (4 * (j >> 1))
            qh[:, 32 * h:32 * h + 32] |= (v >> 4) << (2 * j)
    blocks = np.concatenate([ql, qh, sc.view(np.uint8), d.view(np.uint8).reshape(n, 2)], axis=1)
    return blocks, 0.5 * s + 1e-6  # error bound per sub-block: half a step


def awkward_blocks(rng):
    """Blocks of 32 that probe the rounding rules."""
    b = [np.zeros(32), np.full(32, 0.75), np.full(32, -3.0)]
    t = np.linspace(-1, 1, 32)
    b += [t, -t, t * 127.0, t * 1e-30, t * 6e4]
    half = np.arange(32) - 15.5  # ties for Q8_0 at d = 127 / 127 after scaling
    b += [half / 15.5 * 127.0 / 127.0 * 63.5, np.where(np.arange(32) == 7, -8.0, 1.0)]
    b += [np.where(np.arange(32) == 3, 5.0, -5.0), (np.arange(32) % 17) * 0.5 - 4.0]
    return np.concatenate(b).astype(np.float32)


def save(name, a):
    path = os.path.join(OUT, name)
    np.ascontiguousarray(a).tofile(path)
    return path


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261203)
    for name, t in (("q8_0", T.Q8_0), ("q4_0", T.Q4_0)):
        src = np.concatenate([awkward_blocks(rng), rng.standard_normal(32 * 40) * 3.0,
                              rng.uniform(-1, 1, 32 * 8) * 1e-3]).astype(np.float32)
        blocks = quants.quantize(src, t)
        deq = quants.dequantize(blocks, t)
        save(name + "_src.f32", src)
        save(name + ".bin", blocks)
        save(name + "_deq.f32", deq.astype(np.float32))
        print(name, src.size, "floats,", blocks.size, "bytes")
    for name, t, pack, nbytes in (("q4_k", T.Q4_K, pack_q4_k, 144), ("q6_k", T.Q6_K, pack_q6_k, 210)):
        x = (rng.standard_normal(256 * 12) * np.repeat(rng.uniform(0.01, 4, 12 * 8), 32)).astype(np.float32)
        blocks, bound = pack(x)
        deq = quants.dequantize(blocks, t).reshape(-1)
        # round trip through gguf's dequantizer: every weight within its sub-block's bound
        err = np.abs(deq - x).reshape(bound.shape + (-1,)).max(axis=2)
        assert np.all(err <= bound), (name, float((err - bound).max()))
        # random bytes (all are valid quants and scales), with finite d and dmin
        raw = rng.integers(0, 256, size=(4, nbytes), dtype=np.uint8)
        for i in range(4):
            for off in ((0, 2) if name == "q4_k" else (208,)):
                raw[i, off:off + 2] = np.array([rng.uniform(-0.5, 0.5)], np.float16).view(np.uint8)
        blocks = np.concatenate([blocks.reshape(-1, nbytes), raw])
        deq = quants.dequantize(blocks, t).reshape(-1)
        save(name + ".bin", blocks)
        save(name + "_deq.f32", deq.astype(np.float32))
        print(name, blocks.shape[0], "blocks, round-trip error <= one step")


if __name__ == "__main__":
    main()
