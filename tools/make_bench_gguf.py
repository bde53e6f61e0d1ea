#!/usr/bin/env python3
"""Llama-shaped GGUF files with random weights, for measurements (never for tests):

  make_bench_gguf.py OUT.gguf        clformer-bench's LLM shape (d 768, 12 layers, 12 query
                                     heads on 4 K/V heads of 64, SwiGLU FFN 2048, vocabulary
                                     32000, untied head: 124 M parameters, tools/bench/llm.c),
                                     2-D weights F16, for tools/compare_llamacpp.sh (llama-quantize
                                     --pure makes its Q8_0, Q4_0 and Q4_K files, so both programs
                                     read the same bytes)
  make_bench_gguf.py --q8_0 OUT.gguf the same with its 2-D weights Q8_0 (gguf's quantizer), for
                                     the MPI pipeline and tensor-parallel measurements
  make_bench_gguf.py --1b OUT.gguf   TinyLlama's shape (d 2048, 22 layers, 32 query heads on 4 K/V
                                     heads of 64, FFN 5632, vocabulary 32000, untied: 1.1 B), 2-D
                                     weights Q4_0 of random nibbles and fp16 scales of about 0.02
                                     (nothing quantized: seconds), for
                                     tools/measure_load_memory.sh; about 0.6 GB

Norms F32; a SentencePiece vocabulary of placeholder pieces (llama.cpp loads no model without
one). Needs gguf and numpy from PyPI.
"""
import sys

import numpy as np
import gguf

SHAPES = {  # d, layers, heads, kv heads, head size, FFN, vocabulary
    "124m": (768, 12, 12, 4, 64, 2048, 32000),
    "1b": (2048, 22, 32, 4, 64, 5632, 32000),
}


def main():
    args = sys.argv[1:]
    big = args[:1] == ["--1b"]
    q8 = args[:1] == ["--q8_0"]
    if big or q8:
        args = args[1:]
    if len(args) != 1:
        sys.exit("usage: make_bench_gguf.py [--1b | --q8_0] OUT.gguf")
    D, LAYERS, HEADS, KV_HEADS, DH, FFN, VOCAB = SHAPES["1b" if big else "124m"]
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(args[0], "llama")
    w.add_context_length(2048 if big else 4096)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(DH)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0 if big else
                    gguf.LlamaFileType.MOSTLY_Q8_0 if q8 else gguf.LlamaFileType.MOSTLY_F16)
    # SentencePiece: <unk> <s> </s>, the 256 byte pieces, then placeholders
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581t%d" % i for i in range(VOCAB - len(tokens))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    count = 0

    def mat(name, rows, cols):
        nonlocal count
        count += rows * cols
        if not big:
            a = rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(cols**-0.5)
            if q8:
                Q8 = gguf.GGMLQuantizationType.Q8_0
                w.add_tensor(name, gguf.quants.quantize(a, Q8), raw_dtype=Q8)
            else:
                w.add_tensor(name, a.astype(np.float16))
            return
        nb = cols // 32
        blocks = rng.integers(0, 256, size=(rows, nb, 18), dtype=np.uint8)
        scale = rng.uniform(0.01, 0.03, size=(rows, nb)).astype(np.float16).view(np.uint8)
        blocks[:, :, 0:2] = scale.reshape(rows, nb, 2)
        # a byte shape: (rows, nb * 18) bytes are (rows, cols) Q4_0 weights
        w.add_tensor(name, blocks.reshape(rows, nb * 18), raw_dtype=gguf.GGMLQuantizationType.Q4_0)

    def norm(name):
        nonlocal count
        count += D
        w.add_tensor(name, np.ones(D, np.float32))

    mat("token_embd.weight", VOCAB, D)
    for i in range(LAYERS):
        p = "blk.%d." % i
        norm(p + "attn_norm.weight")
        mat(p + "attn_q.weight", HEADS * DH, D)
        mat(p + "attn_k.weight", KV_HEADS * DH, D)
        mat(p + "attn_v.weight", KV_HEADS * DH, D)
        mat(p + "attn_output.weight", D, HEADS * DH)
        norm(p + "ffn_norm.weight")
        mat(p + "ffn_gate.weight", FFN, D)
        mat(p + "ffn_up.weight", FFN, D)
        mat(p + "ffn_down.weight", D, FFN)
    norm("output_norm.weight")
    mat("output.weight", VOCAB, D)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("%s: %.3f B parameters" % (args[0], count / 1e9))


if __name__ == "__main__":
    main()
