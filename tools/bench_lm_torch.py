#!/usr/bin/env python3
"""transformers' speed on this machine's CPU for clformer-bench's llm_prefill and llm_decode
records: the same Llama-shaped model (d 768, 12 layers, 12 query heads on 4 K/V heads of 64,
SwiGLU 2048, vocabulary 32000, untied head; random weights), float32, PyTorch on every core.
A prompt of P tokens in one forward, then single-token steps with the KV cache and a greedy
argmax (what generation does). Prints one JSON object.

Run: python3 tools/bench_lm_torch.py [--quick]   (needs torch and transformers from PyPI)
"""
import json
import os
import statistics
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    quick = "--quick" in sys.argv
    P, steps = (128, 8) if quick else (512, 32)
    threads = os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                      num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
                      head_dim=64, max_position_embeddings=4096, rope_theta=500000.0,
                      tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    ids = (torch.arange(P) * 7919 % cfg.vocab_size).unsqueeze(0)
    with torch.inference_mode():
        model(ids)  # warm-up
        pre = []
        for _ in range(2 if quick else 3):
            t0 = time.perf_counter()
            out = model(ids, use_cache=True)
            pre.append(time.perf_counter() - t0)
        past = out.past_key_values
        tok = torch.argmax(out.logits[:, -1], dim=-1, keepdim=True)
        dec = []
        for i in range(steps + 1):
            t0 = time.perf_counter()
            out = model(tok, past_key_values=past, use_cache=True)
            past = out.past_key_values
            tok = torch.argmax(out.logits[:, -1], dim=-1, keepdim=True)
            if i > 0:
                dec.append(time.perf_counter() - t0)
    print(json.dumps({
        "torch": torch.__version__, "threads": threads,
        "parameters": sum(p.numel() for p in model.parameters()),
        "prefill_tokens_per_s": P / statistics.median(pre),
        "decode_tokens_per_s": 1.0 / statistics.median(dec),
    }))


if __name__ == "__main__":
    main()
