#!/usr/bin/env python3
"""ONNX Runtime's speed on this machine's CPU for clformer-bench's model_minilm record:
all-MiniLM-L6-v2 exported from PyTorch with torch.onnx (the BERT encoder and the mean pooling of
sentence-transformers in one graph), a batch of 32 sentences of 128 tokens (random ids, no
padding), float32, ONNX Runtime's CPU provider using every core with all graph optimizations.
Prints one JSON object.

Run: python3 tools/bench_minilm_onnx.py [MODEL_DIR]   (needs torch, transformers, onnx,
onnxruntime from PyPI)
"""
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModel

B, N = 32, 128


class Pooled(torch.nn.Module):
    """The encoder and sentence-transformers' mean pooling over the attention mask."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                      token_type_ids=token_type_ids).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "models",
                                                                   "all-MiniLM-L6-v2")
    threads = os.cpu_count()
    model = Pooled(AutoModel.from_pretrained(model_dir)).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, 30000, (B, N), generator=g)
    mask = torch.ones(B, N, dtype=torch.long)
    types = torch.zeros(B, N, dtype=torch.long)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "minilm.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (ids, mask, types), path, dynamo=False,
                              input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["sentence_embedding"], opset_version=17)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feed = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
            "token_type_ids": types.numpy()}
    sess.run(None, feed)  # warm-up
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        out = sess.run(None, feed)[0]
        times.append(time.perf_counter() - t0)
    assert out.shape == (B, 384) and np.isfinite(out).all()
    ms = statistics.median(times) * 1000
    print(json.dumps({"op": "model_minilm_onnx", "batch": B, "tokens": N, "threads": threads,
                      "onnxruntime": ort.__version__, "ms": ms,
                      "sentences_per_s": B / (ms / 1000)}))


if __name__ == "__main__":
    main()
