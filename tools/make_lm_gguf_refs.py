#!/usr/bin/env python3
"""Float64 references of every GGUF language-model fixture (tests/data/lm/gguf/*.gguf), computed
by transformers on the file's own weights, for tests/test_lm_quant.c's test_gguf_reference.

Each file is read with the gguf package (GGUFReader), every tensor dequantized by its
gguf.quants.dequantize (Q8_0, Q4_0, Q4_K, Q6_K, F16: the package's reading of ggml's block
layouts, not clformer's), mapped back to Hugging Face names (Llama's Q and K rows un-permuted:
llama.cpp's converter permutes them for the interleaved rotation; GPT-2's matrices transposed back
to Conv1D's (in, out)), and loaded into a LlamaForCausalLM, Qwen2ForCausalLM or GPT2LMHeadModel
built from the file's <arch>.* keys, in float64. transformers' own GGUF loader is not used: it
keeps quantized weights packed and multiplies in float32.

Written next to each file as <name>.reference.safetensors, in test_lm's reference format:
    ids      (2, 9) I32     two random prompts of 9 tokens
    logits   (2, 9, V) F32  their full-sequence logits (float64, stored as F32)
    prompt0  (9) I32, prompt1 (5) I32
    greedy0, greedy1 (20) I32: 20 greedy tokens after each prompt (eos ignored)

Rotary frequencies: base^(-2i/Dh) in float32 as transformers computes them, divided by the
file's rope_freqs factors where it has them (Llama 3.1's scaling, as llama.cpp applies it).

Run: python3 tools/make_lm_gguf_refs.py   (needs torch, transformers, gguf and numpy from PyPI)
"""
import glob
import os
import zlib

import numpy as np
import torch
import gguf
from gguf import quants
from safetensors.torch import save_file
import transformers

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GGUF_DIR = os.path.join(ROOT, "tests", "data", "lm", "gguf")


def field(r, key, default=None):
    f = r.get_field(key)
    if f is None:
        return default
    v = f.contents()
    return v


def tensors(r):
    """name -> float64 array in GGUF's (rows, columns) order, dequantized by the gguf package."""
    out = {}
    for t in r.tensors:
        a = quants.dequantize(t.data, t.tensor_type)
        shape = [int(n) for n in reversed(t.shape.tolist())]
        out[t.name] = np.asarray(a, np.float64).reshape(shape)
    return out


def unpermute(w, n_head):
    """The inverse of llama.cpp's permute: each head's rows (j, s) -> (s, j)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_like(r, arch, t):
    n = int(field(r, f"{arch}.block_count"))
    H = int(field(r, f"{arch}.attention.head_count"))
    KVH = int(field(r, f"{arch}.attention.head_count_kv", H))
    d = int(field(r, f"{arch}.embedding_length"))
    Dh = int(field(r, f"{arch}.attention.key_length", d // H))
    V = t["token_embd.weight"].shape[0]
    tied = "output.weight" not in t
    kw = dict(vocab_size=V, hidden_size=d, intermediate_size=int(field(r, f"{arch}.feed_forward_length")),
              num_hidden_layers=n, num_attention_heads=H, num_key_value_heads=KVH, head_dim=Dh,
              rms_norm_eps=float(field(r, f"{arch}.attention.layer_norm_rms_epsilon")),
              max_position_embeddings=int(field(r, f"{arch}.context_length")),
              rope_theta=float(field(r, f"{arch}.rope.freq_base", 10000.0)),
              tie_word_embeddings=tied)
    if arch == "llama":
        cfg = transformers.LlamaConfig(**kw)
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.Qwen2Config(**kw)
        model = transformers.Qwen2ForCausalLM(cfg)
    sd = {"model.embed_tokens.weight": t["token_embd.weight"],
          "model.norm.weight": t["output_norm.weight"]}
    if not tied:
        sd["lm_head.weight"] = t["output.weight"]
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    for i in range(n):
        for g, h in names.items():
            for kind in ("weight", "bias"):
                key = f"blk.{i}.{g}.{kind}"
                if key not in t:
                    continue
                a = t[key]
                if arch == "llama" and g in ("attn_q", "attn_k"):
                    a = unpermute(a, H if g == "attn_q" else KVH)
                sd[f"model.layers.{i}.{h}.{kind}"] = a
    return model, sd, Dh, float(kw["rope_theta"])


def gpt2(r, t):
    n = int(field(r, "gpt2.block_count"))
    d = int(field(r, "gpt2.embedding_length"))
    V = t["token_embd.weight"].shape[0]
    tied = "output.weight" not in t
    cfg = transformers.GPT2Config(vocab_size=V, n_embd=d, n_layer=n,
                                  n_head=int(field(r, "gpt2.attention.head_count")),
                                  n_positions=t["position_embd.weight"].shape[0],
                                  n_inner=int(field(r, "gpt2.feed_forward_length")),
                                  layer_norm_epsilon=float(field(r, "gpt2.attention.layer_norm_epsilon")),
                                  tie_word_embeddings=tied)
    model = transformers.GPT2LMHeadModel(cfg)
    sd = {"transformer.wte.weight": t["token_embd.weight"],
          "transformer.wpe.weight": t["position_embd.weight"],
          "transformer.ln_f.weight": t["output_norm.weight"],
          "transformer.ln_f.bias": t["output_norm.bias"]}
    if not tied:
        sd["lm_head.weight"] = t["output.weight"]
    names = {"attn_norm": "ln_1", "ffn_norm": "ln_2", "attn_qkv": "attn.c_attn",
             "attn_output": "attn.c_proj", "ffn_up": "mlp.c_fc", "ffn_down": "mlp.c_proj"}
    for i in range(n):
        for g, h in names.items():
            for kind in ("weight", "bias"):
                a = t[f"blk.{i}.{g}.{kind}"]
                if kind == "weight" and a.ndim == 2:  # Conv1D keeps (in, out)
                    a = a.T
                sd[f"transformer.h.{i}.{h}.{kind}"] = a
    return model, sd, None, None


def greedy(model, prompt):
    ids = list(prompt)
    for _ in range(20):
        logits = model(torch.tensor([ids])).logits[0, -1]
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):]


def reference(path):
    r = gguf.GGUFReader(path)
    arch = bytes(r.get_field("general.architecture").parts[-1]).decode()
    t = tensors(r)
    if arch in ("llama", "qwen2"):
        model, sd, Dh, base = llama_like(r, arch, t)
    elif arch == "gpt2":
        model, sd, Dh, base = gpt2(r, t)
    else:
        raise SystemExit(f"{path}: architecture {arch} has no reference here")
    model = model.to(torch.float64).eval()
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("inv_freq") and k != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"{path}: missing {missing}, unexpected {unexpected}")
    if model.config.tie_word_embeddings:
        model.tie_weights()
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr() \
            if arch != "gpt2" else model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    if Dh is not None:  # float32 frequencies, as transformers computes them, over rope_freqs
        inv = 1.0 / (base ** (torch.arange(0, Dh, 2, dtype=torch.int64).to(torch.float32) / Dh))
        if "rope_freqs.weight" in t:
            inv = inv / torch.from_numpy(t["rope_freqs.weight"].astype(np.float32))
        for name, b in model.named_buffers():
            if name.endswith("inv_freq"):
                b.copy_(inv.to(torch.float64))
    name = os.path.basename(path)[:-5]
    V = model.config.vocab_size
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) % 1000 + 29)
    ids = torch.randint(0, V, (2, 9), generator=gen)
    with torch.no_grad():
        logits = model(ids).logits
        p0, p1 = ids[0].tolist(), ids[1, :5].tolist()
        g0, g1 = greedy(model, p0), greedy(model, p1)
    out = os.path.join(GGUF_DIR, name + ".reference.safetensors")
    save_file({"ids": ids.to(torch.int32),
               "logits": logits.to(torch.float32).contiguous(),
               "prompt0": torch.tensor(p0, dtype=torch.int32),
               "prompt1": torch.tensor(p1, dtype=torch.int32),
               "greedy0": torch.tensor(g0, dtype=torch.int32),
               "greedy1": torch.tensor(g1, dtype=torch.int32)}, out)
    types = sorted({tt.tensor_type.name for tt in r.tensors if len(tt.shape) == 2})
    print(f"{name:18s} {arch:6s} {' '.join(types):22s} V {V:4d} greedy0 {g0[:6]}")


def main():
    torch.manual_seed(0)
    for path in sorted(glob.glob(os.path.join(GGUF_DIR, "*.gguf"))):
        reference(path)


if __name__ == "__main__":
    main()
