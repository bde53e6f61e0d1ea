"""clformer.SentenceModel on all-MiniLM-L6-v2 against sentence-transformers' embeddings
(tests/data/minilm_fixtures.json, written by tools/make_minilm_fixtures.py), batch sizes that
split the set unevenly, the options, the bad calls, and memory over many batches."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import clformer
from conftest import DATA, minilm_dir


@pytest.fixture(scope="module")
def model(ctx):
    m = clformer.SentenceModel(minilm_dir(), context=ctx)
    yield m
    m.close()


@pytest.fixture(scope="module")
def fixtures():
    data = json.loads((DATA / "minilm_fixtures.json").read_text("utf-8"))
    texts = [s["text"] for s in data["sentences"]]
    want = np.array([s["embedding"] for s in data["sentences"]], dtype=np.float64)
    return texts, want


def cosines(a, b):
    a = np.asarray(a, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("batch_size", [32, 1, 7])
def test_embeddings_equal_sentence_transformers(model, fixtures, batch_size):
    texts, want = fixtures
    got = model.encode(texts, batch_size=batch_size)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    c = cosines(got, want)
    assert c.min() >= 0.99999, f"smallest cosine {c.min():.8f} ({texts[int(c.argmin())]!r})"


def test_options(model, fixtures, capsys):
    texts, want = fixtures
    assert model.normalizes and model.get_sentence_embedding_dimension() == 384
    one = model.encode(texts[3])
    assert one.shape == (384,) and abs(np.linalg.norm(one) - 1) < 1e-5
    raw = model.encode(texts[:5], normalize_embeddings=False)
    norms = np.linalg.norm(raw, axis=1)
    assert np.all(np.abs(norms - 1) > 1e-3)
    assert cosines(raw, want[:5]).min() >= 0.99999
    assert model.normalizes  # the model's own setting is back
    assert np.allclose(model.encode(texts[:5], normalize_embeddings=True),
                       raw / norms[:, None], atol=1e-6)
    bar = model.encode(texts, batch_size=4, show_progress_bar=True)
    assert cosines(bar, want).min() >= 0.99999
    assert "Batches:" in capsys.readouterr().err
    assert model.encode([]).shape == (0, 384)  # as sentence-transformers


def test_bad_calls(model, ctx, tmp_path):
    with pytest.raises(clformer.InvalidArgumentError, match="must be a str"):
        model.encode(["fine", None])
    with pytest.raises(clformer.InvalidArgumentError, match="NUL"):
        model.encode(["a\0b"])
    with pytest.raises(clformer.InvalidArgumentError, match="batch_size"):
        model.encode(["a"], batch_size=0)
    with pytest.raises(clformer.Error, match="config.json"):
        clformer.SentenceModel(tmp_path, context=ctx)
    m = clformer.SentenceModel(minilm_dir(), context=ctx, weights="f16")
    assert cosines(m.encode(["A man is eating food."]),
                   model.encode(["A man is eating food."]).astype(np.float64))[0] > 0.9999
    m.close()
    with pytest.raises(clformer.ClosedError):
        m.encode(["a"])


def test_gil_is_released(model, fixtures):
    """Another Python thread runs while encode is in the C library."""
    texts, _ = fixtures
    many = texts * 4
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    t0 = time.perf_counter()
    model.encode(many, batch_size=64)  # one call into C
    busy = time.perf_counter() - t0
    stop.set()
    t.join()
    assert busy > 0.05 and ticks[0] > 10000, f"{ticks[0]} ticks in {busy:.2f} s"


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_memory_flat_over_1000_batches(model, fixtures):
    texts, _ = fixtures
    batch = sorted(texts, key=len)[:2]
    for _ in range(50):  # warm: workspaces grown, kernels built
        model.encode(batch)
    before = _rss_kib()
    for _ in range(1000):
        model.encode(batch)
    grown = _rss_kib() - before
    print(f"RSS over 1000 batches: {grown:+d} KiB")
    assert grown < 8 * 1024, f"RSS grew {grown} KiB over 1000 batches"
