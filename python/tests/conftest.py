"""Shared fixtures: the device (CLF_DEVICE, as the C suite), the repository's test data and a
small safetensors reader (the references are committed safetensors files, written by the
tools/ scripts from transformers and sentence-transformers)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import clformer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CI = os.environ.get("CI", "") in ("true", "1", "yes")

_NP = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=_NP[info["dtype"]]).reshape(
            info["shape"])
    return out


@pytest.fixture(scope="session")
def ctx():
    """One context for the session, on $CLF_DEVICE (else the default device)."""
    c = clformer.Context(os.environ.get("CLF_DEVICE") or None)
    yield c
    c.close()


@pytest.fixture(scope="session")
def device_spec():
    return os.environ.get("CLF_DEVICE") or None


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2, as tools/fetch_minilm.sh puts it (scripts/run.sh fetches it). Without
    it the tests that need it skip, except under CI, where they fail."""
    d = Path(os.environ.get("CLF_MINILM_DIR", ROOT / "models" / "all-MiniLM-L6-v2"))
    if not (d / "model.safetensors").exists():
        if CI:
            pytest.fail(f"{d} is missing (tools/fetch_minilm.sh fetches it)")
        pytest.skip(f"{d} is missing (tools/fetch_minilm.sh fetches it)")
    return d
