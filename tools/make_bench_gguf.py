#!/usr/bin/env python3
"""The GGUF file of clformer-bench's LLM shape, for tools/compare_llamacpp.sh: a Llama with
random weights (d 768, 12 layers, 12 query heads on 4 K/V heads of 64, SwiGLU FFN 2048,
vocabulary 32000, untied head: 124 M parameters, tools/bench/llm.c), all 2-D weights F16 and the
norms F32, with a SentencePiece vocabulary of placeholder pieces (llama.cpp loads no model
without one). llama-quantize --pure makes the Q8_0, Q4_0 and Q4_K files from it, so both
programs read the same bytes.

Run: python3 tools/make_bench_gguf.py OUT.gguf   (needs gguf and numpy from PyPI)
"""
import sys

import numpy as np
import gguf

D, LAYERS, HEADS, KV_HEADS, DH, FFN, VOCAB = 768, 12, 12, 4, 64, 2048, 32000


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bench_gguf.py OUT.gguf")
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(sys.argv[1], "llama")
    w.add_context_length(4096)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(DH)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    # SentencePiece: <unk> <s> </s>, the 256 byte pieces, then placeholders
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581t%d" % i for i in range(VOCAB - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def mat(name, rows, cols):
        a = rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(cols**-0.5)
        w.add_tensor(name, a.astype(np.float16))

    def norm(name):
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


if __name__ == "__main__":
    main()
