#!/usr/bin/env python3
"""A synthetic 1.1 B-parameter Q4_0 GGUF file for tools/measure_load_memory.sh: TinyLlama's
shape (d 2048, 22 layers, 32 query heads on 4 K/V heads of 64, SwiGLU FFN 5632, vocabulary
32000, untied head), every 2-D tensor Q4_0 (random nibbles, fp16 scales of about 0.02; nothing
is quantized, so it takes seconds), the norms F32, and a SentencePiece vocabulary of placeholder
pieces. About 0.6 GB.

Run: python3 tools/make_1b_gguf.py OUT.gguf   (needs gguf and numpy from PyPI)
"""
import sys

import numpy as np
import gguf

D, LAYERS, HEADS, KV_HEADS, DH, FFN, VOCAB = 2048, 22, 32, 4, 64, 5632, 32000


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_1b_gguf.py OUT.gguf")
    rng = np.random.default_rng(2)
    w = gguf.GGUFWriter(sys.argv[1], "llama")
    w.add_context_length(2048)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(DH)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581t%d" % i for i in range(VOCAB - len(tokens))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    count = 0

    def q4_0(name, rows, cols):
        nonlocal count
        nb = cols // 32
        blocks = rng.integers(0, 256, size=(rows, nb, 18), dtype=np.uint8)
        scale = (rng.uniform(0.01, 0.03, size=(rows, nb)).astype(np.float16)).view(np.uint8)
        blocks[:, :, 0:2] = scale.reshape(rows, nb, 2)
        w.add_tensor(name, blocks.reshape(rows, nb * 18),  # a byte shape: (rows, cols) as Q4_0
                     raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        count += rows * cols

    def norm(name):
        nonlocal count
        w.add_tensor(name, np.ones(D, np.float32))
        count += D

    q4_0("token_embd.weight", VOCAB, D)
    for i in range(LAYERS):
        p = "blk.%d." % i
        norm(p + "attn_norm.weight")
        q4_0(p + "attn_q.weight", HEADS * DH, D)
        q4_0(p + "attn_k.weight", KV_HEADS * DH, D)
        q4_0(p + "attn_v.weight", KV_HEADS * DH, D)
        q4_0(p + "attn_output.weight", D, HEADS * DH)
        norm(p + "ffn_norm.weight")
        q4_0(p + "ffn_gate.weight", FFN, D)
        q4_0(p + "ffn_up.weight", FFN, D)
        q4_0(p + "ffn_down.weight", D, FFN)
    norm("output_norm.weight")
    q4_0("output.weight", VOCAB, D)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("%s: %.3f B parameters" % (sys.argv[1], count / 1e9))


if __name__ == "__main__":
    main()
