#!/usr/bin/env python3
"""The Python package's overhead: clformer.SentenceModel.encode's sentences/s against
clformer-embed's own figure (--stats) on the same sentences, batch size and device, in rounds
that alternate the two; optionally sentence-transformers (PyTorch) and ONNX Runtime in the same
run when they are installed. Prints a line per round and the median ratio.

Run with the interpreter that has the package (tests/python_test.sh installs it into
build/venv):
  build/venv/bin/python tools/bench_python_binding.py [--device SPEC] [--rounds 5]
      [--repeat 5] [--sentences FILE] [--batch-size 32] [--peers]
Default sentences: the project's sentence set (tests/data/minilm_fixtures.json) 8 times over.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def sentences(path):
    if path:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    with open(os.path.join(ROOT, "tests", "data", "minilm_fixtures.json"), encoding="utf-8") as f:
        return [s["text"] for s in json.load(f)["sentences"]] * 8


def cli_rate(embed, model, texts, batch, repeat, device):
    cmd = [embed, "--model", model, "--batch-size", str(batch), "--stats", str(repeat)]
    if device:
        cmd += ["--device", device]
    r = subprocess.run(cmd, input="\n".join(texts) + "\n", capture_output=True, text=True,
                       check=True)
    m = re.search(r"([0-9.]+) sentences/s", r.stderr)
    return float(m.group(1))


def py_rate(model, texts, batch, repeat):
    model.encode(texts, batch_size=batch)  # warm-up, as the CLI's first run
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        model.encode(texts, batch_size=batch)
        times.append(time.perf_counter() - t0)
    return len(texts) / statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device")
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--embed", default=os.path.join(ROOT, "build", "tools", "clformer-embed"))
    ap.add_argument("--sentences")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--peers", action="store_true",
                    help="also sentence-transformers and ONNX Runtime, if installed")
    a = ap.parse_args()
    import clformer

    texts = sentences(a.sentences)
    model = clformer.SentenceModel(a.model, device=a.device)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = re.search(r"Model name:\s*(.*)", cpu)
    print(f"CPU: {name.group(1) if name else '?'}; device: {model.context.device.name}; "
          f"{len(texts)} sentences, batches of {a.batch_size}")
    ratios = []
    for r in range(a.rounds):
        c = cli_rate(a.embed, a.model, texts, a.batch_size, a.repeat, a.device)
        p = py_rate(model, texts, a.batch_size, a.repeat)
        ratios.append(p / c)
        print(f"round {r + 1}: clformer-embed {c:.1f} sentences/s, Python encode {p:.1f}, "
              f"ratio {p / c:.3f}")
    print(f"median ratio Python / clformer-embed: {statistics.median(ratios):.3f}")
    if a.peers:
        peers(texts, a.model, a.batch_size, a.repeat, py_rate(model, texts, a.batch_size,
                                                                a.repeat))
    model.close()


def peers(texts, model_dir, batch, repeat, ours):
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers is not installed: no peer figures")
        return
    st = SentenceTransformer(model_dir, device="cpu")
    st.encode(texts, batch_size=batch)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        st.encode(texts, batch_size=batch)
        times.append(time.perf_counter() - t0)
    rate = len(texts) / statistics.median(times)
    print(f"sentence-transformers (CPU): {rate:.1f} sentences/s; clformer / it: {ours / rate:.3f}")


if __name__ == "__main__":
    sys.exit(main())
