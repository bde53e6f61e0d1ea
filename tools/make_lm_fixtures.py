#!/usr/bin/env python3
"""Reference data for clformer's decoder-only LLM tests, from Hugging Face transformers.

Builds tiny random-weight models of each supported family with transformers (2 layers, d <= 128,
a vocabulary of a few hundred; norm weights, norm biases and linear biases randomized so none is
trivial), saves each as a Hugging Face folder under tests/data/lm/<name>/ (config.json and
model.safetensors, or shards with model.safetensors.index.json), and computes in float64:
  reference.safetensors:
    ids        (2, 9) I32     two prompts of 9 tokens
    logits     (2, 9, V) F32  the full-sequence logits of ids (float64, stored as F32)
    prompt0    (9) I32, prompt1 (5) I32: prompts of different lengths
    greedy0, greedy1 (20) I32: 20 greedy tokens after each prompt (eos ignored)
gpt2, llama and llama_gqa carry the tokenizer.json of tools/make_bpe_fixtures.py (gpt2, llama2,
llama3 styles; their vocabularies sized to match), and cli.json holds, for clformer-generate's
test, cli_<name>.txt: four lines, a prompt, its ids with the template, 12 greedy new ids (eos
ignored) and their text (special tokens skipped).
The config's eos_token_id is set to greedy0's 8th token (or its first that differs from its
first), so that generation stopping at eos can be checked. The models:
  gpt2          GPT2LMHeadModel, F32, one file
  llama         LlamaForCausalLM, 4 heads (no grouping), untied head, F32, sharded
  llama_gqa     LlamaForCausalLM, 8 query heads on 2 K/V heads, head_dim 16 with hidden 96
                (q != d), llama3 rope scaling, rope_theta 5e5, tied head, F32
  qwen2         Qwen2ForCausalLM, 4 heads on 2 K/V heads, QKV biases, BF16 weights (the
                reference runs on the BF16-rounded weights in float64)
  mistral_mqa   MistralForCausalLM, 4 query heads on 1 K/V head (multi-query), a sliding window
                of 5 tokens (shorter than the 9-token prompts and 20 new tokens), F32

Run: python3 tools/make_lm_fixtures.py   (needs torch, transformers, safetensors from PyPI)
"""
import zlib
import os

import shutil

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "lm")
BPE = os.path.join(OUT, "..", "bpe")
TOKENIZER = {"gpt2": "gpt2", "llama": "llama2", "llama_gqa": "llama3"}
PROMPT = "The quick brown fox, 12 emoji 😀 and 東京"


def vocab_of(name, fallback):
    if name not in TOKENIZER:
        return fallback
    return Tokenizer.from_file(os.path.join(BPE, TOKENIZER[name] + ".json")).get_vocab_size()
NEW = 20


def models():
    yield "gpt2", GPT2LMHeadModel(GPT2Config(
        vocab_size=vocab_of("gpt2", 257), n_positions=64, n_embd=64, n_layer=2, n_head=4,
        layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0)), None, None
    yield "llama", LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab_of("llama", 301), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128,
        rms_norm_eps=1e-5, tie_word_embeddings=False)), None, "60KB"
    yield "llama_gqa", LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab_of("llama_gqa", 263), hidden_size=96, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64})), None, None
    yield "qwen2", Qwen2ForCausalLM(Qwen2Config(
        vocab_size=311, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})), torch.bfloat16, None
    yield "mistral_mqa", MistralForCausalLM(MistralConfig(
        vocab_size=277, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=128,
        sliding_window=5, rms_norm_eps=1e-5, tie_word_embeddings=False)), None, None


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) +
                        0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


@torch.no_grad()
def greedy(model, prompt):
    ids = list(prompt)
    for _ in range(NEW):
        logits = model(torch.tensor([ids])).logits[0, -1]
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):]


def main():
    torch.manual_seed(0)
    cli = {}
    for name, model, dtype, shard in models():
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) % 1000 + 17)
        randomize(model, gen)
        # The rotary frequencies stay float32, as from_pretrained(dtype=...) leaves them (a
        # module-wide .to(dtype) would round those buffers too).
        freqs = {n: b.clone() for n, b in model.named_buffers() if n.endswith("inv_freq")}
        if dtype is not None:  # store in dtype; the reference uses the rounded weights
            model = model.to(dtype)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
        ref = model.to(torch.float64).eval()
        for n, b in ref.named_buffers():
            if n in freqs:
                b.copy_(freqs[n].to(torch.float64))
        V = ref.config.vocab_size
        ids = torch.randint(0, V, (2, 9), generator=gen)
        logits = ref(ids).logits
        p0, p1 = ids[0].tolist(), ids[1, :5].tolist()
        g0, g1 = greedy(ref, p0), greedy(ref, p1)
        eos = g0[7] if g0[7] != g0[0] else next(t for t in g0 if t != g0[0])
        model.config.eos_token_id = eos
        save_model = model.to(dtype if dtype is not None else torch.float32)
        kw = {"max_shard_size": shard} if shard else {}
        save_model.save_pretrained(d, safe_serialization=True, **kw)
        for extra in ("generation_config.json",):
            if os.path.exists(os.path.join(d, extra)):
                os.remove(os.path.join(d, extra))
        save_file({
            "ids": ids.to(torch.int32),
            "logits": logits.to(torch.float32).contiguous(),
            "prompt0": torch.tensor(p0, dtype=torch.int32),
            "prompt1": torch.tensor(p1, dtype=torch.int32),
            "greedy0": torch.tensor(g0, dtype=torch.int32),
            "greedy1": torch.tensor(g1, dtype=torch.int32),
        }, os.path.join(d, "reference.safetensors"))
        if name in TOKENIZER:
            shutil.copy(os.path.join(BPE, TOKENIZER[name] + ".json"), os.path.join(d, "tokenizer.json"))
            tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
            pids = tok.encode(PROMPT).ids
            new = greedy(ref, pids)[:12]
            cli[name] = {"prompt": PROMPT, "prompt_ids": pids, "new_ids": new,
                         "text": tok.decode(new, skip_special_tokens=True)}
        files = sorted(os.listdir(d))
        print(name, files, "eos", eos, "greedy0", g0)
    for name, c in cli.items():
        with open(os.path.join(OUT, "cli_%s.txt" % name), "w", encoding="utf-8") as f:
            f.write("%s\n%s\n%s\n%s\n" % (c["prompt"], " ".join(map(str, c["prompt_ids"])),
                                          " ".join(map(str, c["new_ids"])), c["text"]))


if __name__ == "__main__":
    main()
