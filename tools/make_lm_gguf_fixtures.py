#!/usr/bin/env python3
"""GGUF files of the tiny language models in tests/data/lm/, as llama.cpp's converter lays them
out, for tests/test_lm_quant.c (a model from its GGUF file against the same model from its folder,
and against itself with its matrices dequantized).

Written with the gguf package (tensor names, metadata keys, and Llama's Q/K row permutation as in
llama.cpp's convert_hf_to_gguf.py), into tests/data/lm/gguf/:

    llama_q8_0.gguf       llama (untied): every 2-D projection and the head Q8_0 (gguf.quantize),
                          token_embd F32; Q and K rows permuted for interleaved RoPE
    llama_gqa_f32.gguf    llama_gqa (tied, 8 query heads, 2 K/V heads): all F32, no output.weight
    llama_gqa_mixed.gguf  llama_gqa as real quantized files mix types: token_embd (the tied head)
                          Q8_0, attn_q/attn_k/ffn_* Q8_0, attn_v and attn_output Q4_0
    qwen2_f32.gguf        qwen2 (Q/K/V biases, 4 query heads, 2 K/V heads; no permutation)
    gpt2_f32.gguf         gpt2 (tied, fused attn_qkv, position_embd): all F32, the Conv1D weights
                          transposed to (out, in) as the converter does
    llama_gqa_f16.gguf, qwen2_f16.gguf, gpt2_f16.gguf
                          every matrix F16 (gpt2's position_embd F32)
    qwen2_q4_0.gguf       Q4_0 projections and token_embd, the head Q8_0 (llama-quantize's pure
                          Q4_0 keeps a wider head; its Q6_K needs rows of 256)
    gpt2_q8_0.gguf        every matrix Q8_0 (the tied token_embd too)
    llama_q4_k_m.gguf, qwen2_q4_k_m.gguf
                          random models with 256-wide rows (synthetic(): d 256, FFN 256, 4 heads,
                          2 K/V heads, vocabulary 256, no tokenizer) in Q4_K_M's mixture: Q6_K
                          attn_v, ffn_down and output, Q4_K the rest, packed by
                          make_quant_fixtures' pack_q4_k / pack_q6_k
    llama_tp_q4_0.gguf    random, 6 query heads on 3 K/V heads, FFN 192, all Q4_0 (tied): the
                          tensor-parallel runs over 2 and 3 ranks
    gpt2_q4_k_m.gguf      gpt2 whose only 256-wide rows are ffn_down's (Q6_K); the rest takes
                          llama-quantize's fallback for narrow rows, here Q4_0

gpt2_f32 and llama_gqa_f32 carry their tokenizer.json as the converter writes a byte-level BPE
(tokenizer.ggml.model "gpt2", tokens, token types, merges, pre "gpt-2" / "llama-bpe"), and
tests/data/bpe/{gpt2,llama3,qwen2}.gguf hold test_bpe's byte-level tokenizers the same way.

Metadata: general.architecture and its <arch>.* hyperparameters (context_length,
embedding_length, block_count, feed_forward_length, attention.head_count(_kv), the norm eps,
rope.freq_base and rope.dimension_count), tokenizer.ggml.bos/eos_token_id from config.json;
Llama 3.1's rope scaling (llama_gqa) as the converter stores it, the rope_freqs tensor.

Run: python3 tools/make_lm_gguf_fixtures.py   (needs gguf and numpy from PyPI)
"""
import json
import os
import struct

import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quant_fixtures import pack_q4_k, pack_q6_k  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LM = os.path.join(ROOT, "tests", "data", "lm")

ST_TYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] == "BF16":
            a, b = info["data_offsets"]
            raw = np.frombuffer(data[a:b], np.uint16).astype(np.uint32) << 16
            out[name] = raw.view(np.float32).reshape(info["shape"])
            continue
        dt = ST_TYPES[info["dtype"]]
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dt).reshape(info["shape"]).astype(np.float32)
    return out


def read_model(name):
    d = os.path.join(LM, name)
    cfg = json.load(open(os.path.join(d, "config.json")))
    index = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    w = {}
    for f in files:
        w.update(read_safetensors(os.path.join(d, f)))
    return cfg, w


def permute(w, n_head):
    """llama.cpp's LlamaModel.permute: each head's rows (s, j) -> (j, s), s the half."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def add(writer, name, a, t):
    a = np.ascontiguousarray(a, np.float32)
    if t == T.F32:
        writer.add_tensor(name, a)
    elif t == T.F16:
        writer.add_tensor(name, a.astype(np.float16))
    elif t in (T.Q4_K, T.Q6_K):  # gguf only dequantizes K-quants: make_quant_fixtures' packers
        blocks, _ = (pack_q4_k if t == T.Q4_K else pack_q6_k)(a)
        writer.add_tensor(name, blocks.reshape(a.shape[0], -1), raw_dtype=t)
    else:
        writer.add_tensor(name, quants.quantize(a, t), raw_dtype=t)


def llama_like(name, arch, out, types, permute_qk, tokenizer=None, model=None):
    """types: a function of the GGUF tensor name (2-D tensors) giving its type; model: (config,
    weights) in Hugging Face's names instead of the folder tests/data/lm/<name>."""
    cfg, w = model or read_model(name)
    H = cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads") or H
    Dh = cfg.get("head_dim") or cfg["hidden_size"] // H
    wr = gguf.GGUFWriter(os.path.join(LM, "gguf", out), arch)
    wr.add_context_length(cfg["max_position_embeddings"])
    wr.add_embedding_length(cfg["hidden_size"])
    wr.add_block_count(cfg["num_hidden_layers"])
    wr.add_feed_forward_length(cfg["intermediate_size"])
    wr.add_head_count(H)
    wr.add_head_count_kv(KVH)
    wr.add_key_length(Dh)
    wr.add_value_length(Dh)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    rp = cfg.get("rope_parameters") or {}
    wr.add_rope_freq_base(rp.get("rope_theta", cfg.get("rope_theta", 10000.0)))
    wr.add_rope_dimension_count(Dh)
    wr.add_vocab_size(cfg["vocab_size"])
    # the BOS id as the converter takes it: the tokenizer's (its template's), else config.json's
    bos = add_bpe_tokenizer(wr, os.path.join(LM, name, "tokenizer.json"), tokenizer) if tokenizer else None
    if bos is None:
        bos = cfg.get("bos_token_id")
    if bos is not None:
        wr.add_bos_token_id(bos)
    if cfg.get("eos_token_id") is not None:
        wr.add_eos_token_id(cfg["eos_token_id"])

    def t2(gname, a):
        add(wr, gname, a, types(gname))

    if rp.get("rope_type") == "llama3":  # the converter's rope_freqs: a divisor per frequency
        base, factor = rp["rope_theta"], rp.get("factor", 8.0)
        lo, hi = rp.get("low_freq_factor", 1.0), rp.get("high_freq_factor", 4.0)
        old = rp.get("original_max_position_embeddings", 8192)
        freqs = 1.0 / (base ** (np.arange(0, Dh, 2, dtype=np.float32) / Dh))
        factors = []
        for f in freqs:
            wl = 2 * np.pi / f
            if wl < old / hi:
                factors.append(1.0)
            elif wl > old / lo:
                factors.append(factor)
            else:
                s = (old / wl - lo) / (hi - lo)
                factors.append(1 / ((1 - s) / factor + s))
        add(wr, "rope_freqs.weight", np.array(factors, np.float32), T.F32)

    t2("token_embd.weight", w["model.embed_tokens.weight"])
    add(wr, "output_norm.weight", w["model.norm.weight"], T.F32)
    if not cfg.get("tie_word_embeddings"):
        t2("output.weight", w["lm_head.weight"])
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
        if permute_qk:
            q, k = permute(q, H), permute(k, KVH)
        t2(b + "attn_q.weight", q)
        t2(b + "attn_k.weight", k)
        t2(b + "attn_v.weight", w[p + "self_attn.v_proj.weight"])
        for s, g in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v")):
            bias = w.get(p + f"self_attn.{s}_proj.bias")
            if bias is not None:
                if permute_qk and s in "qk":
                    bias = permute(bias, H if s == "q" else KVH)
                add(wr, b + g + ".bias", bias, T.F32)
        t2(b + "attn_output.weight", w[p + "self_attn.o_proj.weight"])
        t2(b + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"])
        t2(b + "ffn_up.weight", w[p + "mlp.up_proj.weight"])
        t2(b + "ffn_down.weight", w[p + "mlp.down_proj.weight"])
        add(wr, b + "attn_norm.weight", w[p + "input_layernorm.weight"], T.F32)
        add(wr, b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"], T.F32)
    write(wr)


def gpt2(out, types=lambda n: T.F32):
    cfg, w = read_model("gpt2")
    wr = gguf.GGUFWriter(os.path.join(LM, "gguf", out), "gpt2")
    d = cfg["n_embd"]
    wr.add_context_length(cfg["n_positions"])
    wr.add_embedding_length(d)
    wr.add_block_count(cfg["n_layer"])
    wr.add_feed_forward_length(cfg.get("n_inner") or 4 * d)
    wr.add_head_count(cfg["n_head"])
    wr.add_layer_norm_eps(cfg["layer_norm_epsilon"])
    wr.add_vocab_size(cfg["vocab_size"])
    wr.add_bos_token_id(cfg["bos_token_id"])
    wr.add_eos_token_id(cfg["eos_token_id"])
    add_bpe_tokenizer(wr, os.path.join(LM, "gpt2", "tokenizer.json"), "gpt-2")
    g = lambda n: w.get("transformer." + n, w.get(n))  # noqa: E731
    add(wr, "token_embd.weight", g("wte.weight"), types("token_embd.weight"))
    add(wr, "position_embd.weight", g("wpe.weight"), T.F32)
    add(wr, "output_norm.weight", g("ln_f.weight"), T.F32)
    add(wr, "output_norm.bias", g("ln_f.bias"), T.F32)
    for i in range(cfg["n_layer"]):
        p, b = f"h.{i}.", f"blk.{i}."
        for hf, gg in (("ln_1", "attn_norm"), ("ln_2", "ffn_norm")):
            add(wr, b + gg + ".weight", g(p + hf + ".weight"), T.F32)
            add(wr, b + gg + ".bias", g(p + hf + ".bias"), T.F32)
        for hf, gg in (("attn.c_attn", "attn_qkv"), ("attn.c_proj", "attn_output"),
                       ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")):
            # Conv1D: (in, out)
            add(wr, b + gg + ".weight", g(p + hf + ".weight").T, types(b + gg + ".weight"))
            add(wr, b + gg + ".bias", g(p + hf + ".bias"), T.F32)
    write(wr)


# tokenizer.json's byte-level BPE as llama.cpp's converter writes it (its _set_vocab_gpt2): the
# tokens in id order, their types (added special tokens CONTROL, other added ones USER_DEFINED,
# the rest NORMAL), the merges as "left right", the pre-tokenizer's name, and whether the
# template adds a BOS token.
PRE_NAMES = {"gpt2": "gpt-2", "llama3": "llama-bpe", "qwen2": "qwen2"}


def add_bpe_tokenizer(wr, path, pre):
    t = json.load(open(path))
    vocab = dict(t["model"]["vocab"])
    added = {a["content"]: a for a in t["added_tokens"]}
    for a in t["added_tokens"]:
        vocab[a["content"]] = a["id"]
    n = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(n)]
    types = [gguf.TokenType.UNUSED] * n
    for tok, i in vocab.items():
        tokens[i] = tok
        a = added.get(tok)
        types[i] = gguf.TokenType.NORMAL if a is None else (
            gguf.TokenType.CONTROL if a["special"] else gguf.TokenType.USER_DEFINED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]]
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre(pre)
    wr.add_token_list(tokens)
    wr.add_token_types(types)
    wr.add_token_merges(merges)
    post = json.dumps(t.get("post_processor"))
    bos = None
    for a in t["added_tokens"]:
        if a["special"] and ('"id": "%s"' % a["content"]) in post:
            bos = a["id"]
    wr.add_add_bos_token(bos is not None)
    return bos


def bpe_files():
    """tests/data/bpe/<name>.gguf: the byte-level BPE fixtures of test_bpe, tokenizer only."""
    bpe = os.path.join(ROOT, "tests", "data", "bpe")
    for name, pre in PRE_NAMES.items():
        wr = gguf.GGUFWriter(os.path.join(bpe, name + ".gguf"), "llama")
        bos = add_bpe_tokenizer(wr, os.path.join(bpe, name + ".json"), pre)
        if bos is not None:
            wr.add_bos_token_id(bos)
        write(wr)


def synthetic(arch, seed, n=2, d=256, F=256, tied=False, H=4, KVH=2):
    """A random model in Hugging Face's names whose rows are whole 256-blocks (d 256, FFN 256: the
    folder fixtures' 64 and 96 are too narrow for K-quants), for the Q4_K_M-like files; or of n
    layers and other sizes (the split tests' deeper model, the tensor-parallel one)."""
    rng = np.random.default_rng(seed)
    V = 256
    Dh = d // H
    cfg = {"num_attention_heads": H, "num_key_value_heads": KVH, "hidden_size": d,
           "max_position_embeddings": 64, "num_hidden_layers": n, "intermediate_size": F,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "vocab_size": V, "eos_token_id": 2,
           "bos_token_id": 1, "tie_word_embeddings": tied}
    r = lambda *s: rng.normal(0.0, 0.05, s).astype(np.float32)  # noqa: E731
    g = lambda: (1.0 + 0.1 * rng.normal(size=d)).astype(np.float32)  # noqa: E731
    w = {"model.embed_tokens.weight": r(V, d), "model.norm.weight": g(), "lm_head.weight": r(V, d)}
    for i in range(n):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = r(H * Dh, d)
        w[p + "self_attn.k_proj.weight"] = r(KVH * Dh, d)
        w[p + "self_attn.v_proj.weight"] = r(KVH * Dh, d)
        if arch == "qwen2":
            w[p + "self_attn.q_proj.bias"] = r(H * Dh)
            w[p + "self_attn.k_proj.bias"] = r(KVH * Dh)
            w[p + "self_attn.v_proj.bias"] = r(KVH * Dh)
        w[p + "self_attn.o_proj.weight"] = r(d, H * Dh)
        w[p + "mlp.gate_proj.weight"] = r(F, d)
        w[p + "mlp.up_proj.weight"] = r(F, d)
        w[p + "mlp.down_proj.weight"] = r(d, F)
        w[p + "input_layernorm.weight"] = g()
        w[p + "post_attention_layernorm.weight"] = g()
    return cfg, w


def q4_k_m(n):
    """llama-quantize's Q4_K_M mixture: Q6_K attn_v, ffn_down and output, Q4_K the rest."""
    return T.Q6_K if ("attn_v" in n or "ffn_down" in n or n == "output.weight") else T.Q4_K


def write(wr):
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def main():
    os.makedirs(os.path.join(LM, "gguf"), exist_ok=True)
    q8 = lambda n: T.F32 if n == "token_embd.weight" else T.Q8_0  # noqa: E731
    llama_like("llama", "llama", "llama_q8_0.gguf", q8, True)
    llama_like("llama_gqa", "llama", "llama_gqa_f32.gguf", lambda n: T.F32, True, "llama-bpe")
    mixed = lambda n: T.Q4_0 if ("attn_v" in n or "attn_output" in n) else T.Q8_0  # noqa: E731
    llama_like("llama_gqa", "llama", "llama_gqa_mixed.gguf", mixed, True)
    llama_like("qwen2", "qwen2", "qwen2_f32.gguf", lambda n: T.F32, False)
    gpt2("gpt2_f32.gguf")
    # every type per architecture: F16; Q4_0 as llama-quantize's pure mixture keeps a Q8_0 head
    # (its Q6_K needs rows of 256); Q4_K_M on random models with 256-wide rows (gpt2's: only
    # ffn_down is wide enough, the others take llama-quantize's fallback for narrow rows, Q4_0)
    f16 = lambda n: T.F16  # noqa: E731
    q4 = lambda n: T.Q8_0 if n == "output.weight" else T.Q4_0  # noqa: E731
    llama_like("llama_gqa", "llama", "llama_gqa_f16.gguf", f16, True)
    llama_like("", "llama", "llama_q4_k_m.gguf", q4_k_m, True, model=synthetic("llama", 11))
    llama_like("qwen2", "qwen2", "qwen2_f16.gguf", f16, False)
    llama_like("qwen2", "qwen2", "qwen2_q4_0.gguf", q4, False)
    llama_like("", "qwen2", "qwen2_q4_k_m.gguf", q4_k_m, False, model=synthetic("qwen2", 12))
    gpt2("gpt2_f16.gguf", f16)
    gpt2("gpt2_q8_0.gguf", lambda n: T.Q8_0)
    gpt2("gpt2_q4_k_m.gguf", lambda n: T.Q6_K if "ffn_down" in n else T.Q4_0)
    # five layers, tied to a Q4_0 embedding: test_lm_split's model for 3 and 5 stages
    llama_like("", "llama", "llama_deep_q4_0.gguf", lambda n: T.Q4_0, True,
               model=synthetic("llama", 13, n=5, d=64, F=128, tied=True))
    # 6 query heads on 3 K/V heads of 16, FFN 192: cut 2 or 3 ways into whole Q4_0 blocks
    # (tests/mpi_test.sh's tensor parallel over 3 ranks)
    llama_like("", "llama", "llama_tp_q4_0.gguf", lambda n: T.Q4_0, True,
               model=synthetic("llama", 14, n=2, d=96, F=192, tied=True, H=6, KVH=3))
    bpe_files()


if __name__ == "__main__":
    main()
