#!/usr/bin/env python3
"""Reference token ids and embeddings of all-MiniLM-L6-v2 for clformer's tests.

Runs sentence-transformers (PyPI) on the model fetched by tools/fetch_minilm.sh, in float64, for
about 20 varied sentences, and writes tests/data/minilm_fixtures.json:
  {"model_sha256": ..., "max_seq_length": 256,
   "sentences": [{"text": ..., "ids": [...], "embedding": [...]}, ...]}
ids are what sentence-transformers feeds the model (its tokenizer, truncation included).

Run: python3 tools/make_minilm_fixtures.py [MODEL_DIR]   (needs torch, sentence-transformers)
"""
import hashlib
import json
import os
import sys

import torch
from sentence_transformers import SentenceTransformer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

LONG = ("The quick brown fox jumps over the lazy dog while the committee, having deliberated "
        "for several hours about the municipal budget, finally agreed that the library's "
        "opening hours should be extended on weekends; residents had petitioned for years, "
        "citing students, shift workers and retirees who could not visit during the week. ")

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Hi",
    "",
    "Héllo Wörld! Ça va? Naïve café, résumé and façade.",
    "北京是中国的首都，也是一座历史悠久的城市。",
    "日本語のテキストと English mixed together.",
    "안녕하세요, 세계! Korean text decomposes into jamo.",
    "Numbers: 3.14159, 1,000,000 and 42nd; version 2.0.1-beta (c) 2026.",
    "ALL CAPS SENTENCE WITH MiXeD cAsE words",
    "Punctuation!!! ...?? -- (brackets) [square] {curly} <angle> @#$%^&*_+=|\\/~`",
    "e-mail: someone@example.com, url: https://example.org/path?q=1&b=2#frag",
    "Привет, мир! Как дела? Ёжик в тумане.",
    "Ελληνικά: Αθήνα, Θεσσαλονίκη — ΆΈΉΊΌΎΏ",
    "Emoji are unknown to this vocabulary 😀👍🏽 ☃ ✓",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    LONG,                      # about 70 tokens
    LONG * 3 + "The end.",     # past 128 tokens
    LONG * 5,                  # past 256 tokens: truncated
]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models",
                                                                   "all-MiniLM-L6-v2")
    weights = os.path.join(model_dir, "model.safetensors")
    sha = hashlib.sha256(open(weights, "rb").read()).hexdigest()
    model = SentenceTransformer(model_dir, device="cpu")
    model.to(torch.float64)
    features = model.tokenize(SENTENCES)
    emb = model.encode(SENTENCES, batch_size=8, convert_to_numpy=True, normalize_embeddings=False)
    out = {"model_sha256": sha, "max_seq_length": model.max_seq_length, "sentences": []}
    for i, text in enumerate(SENTENCES):
        n = int(features["attention_mask"][i].sum())
        ids = [int(x) for x in features["input_ids"][i][:n]]
        out["sentences"].append({"text": text, "ids": ids,
                                 "embedding": [float(x) for x in emb[i]]})
        print("%3d tokens  %s" % (n, text[:60]))
    path = os.path.join(ROOT, "tests", "data", "minilm_fixtures.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote", path, "dtype", emb.dtype)


if __name__ == "__main__":
    main()
