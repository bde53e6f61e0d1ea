#!/usr/bin/env python3
"""sentence-transformers' speed on this machine's CPU for clformer-bench's model_minilm record:
all-MiniLM-L6-v2 on a batch of 32 sentences of 128 tokens (random ids, no padding), float32,
PyTorch using every core. Prints one JSON object.

Run: python3 tools/bench_minilm_torch.py [MODEL_DIR]   (needs torch, sentence-transformers)
"""
import json
import os
import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

B, N = 32, 128


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "models",
                                                                   "all-MiniLM-L6-v2")
    threads = os.cpu_count()
    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    g = torch.Generator().manual_seed(1)
    features = {
        "input_ids": torch.randint(1000, 30000, (B, N), generator=g),
        "attention_mask": torch.ones(B, N, dtype=torch.long),
        "token_type_ids": torch.zeros(B, N, dtype=torch.long),
    }
    times = []
    with torch.inference_mode():
        model(dict(features))  # warm-up
        for _ in range(5):
            t0 = time.perf_counter()
            out = model(dict(features))["sentence_embedding"]
            times.append(time.perf_counter() - t0)
    assert out.shape == (B, 384)
    ms = statistics.median(times) * 1000
    print(json.dumps({"op": "model_minilm_torch", "batch": B, "tokens": N, "threads": threads,
                      "torch": torch.__version__, "ms": ms, "sentences_per_s": B / (ms / 1000)}))


if __name__ == "__main__":
    main()
