#!/usr/bin/env python3
"""Reference logits for clformer's F16-weight LLM tests, from Hugging Face transformers.

For each fixture folder of tools/make_lm_fixtures.py (tests/data/lm/<name>/), loads the model in
float64, rounds the weight of every linear layer to fp16 (round to nearest even, as clformer's
loader does with weight_dtype CLF_F16: the attention and MLP projections, GPT-2's Conv1D layers
and the LM head, a tied head untied first so that the token embeddings keep their values; biases,
norms and embeddings unrounded), runs the fixture's ids (2, 9) in float64, and writes
tests/data/lm/<name>/reference_f16w.safetensors:
    logits_f16w (2, 9, V) F32   the full-sequence logits on the rounded weights
The existing fixture files are only read.

Run: python3 tools/make_lm_f16_fixtures.py   (needs torch, transformers, safetensors from PyPI)
"""
import os

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM
from transformers.pytorch_utils import Conv1D

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "lm")
NAMES = ["gpt2", "llama", "llama_gqa", "qwen2", "mistral_mqa"]


@torch.no_grad()
def main():
    for name in NAMES:
        d = os.path.join(OUT, name)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
        head = model.get_output_embeddings()
        head.weight = torch.nn.Parameter(head.weight.detach().clone())  # untie
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Linear, Conv1D)):
                mod.weight.copy_(mod.weight.to(torch.float16).to(torch.float64))
        ref = load_file(os.path.join(d, "reference.safetensors"))
        logits = model(ref["ids"].to(torch.long)).logits
        save_file({"logits_f16w": logits.to(torch.float32).contiguous()},
                  os.path.join(d, "reference_f16w.safetensors"))
        print(name, tuple(logits.shape), float(logits.abs().max()))


if __name__ == "__main__":
    main()
