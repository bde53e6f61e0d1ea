"""clformer.ops against float64 numpy references, on awkward sizes; the bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import clformer
from clformer import ops

rng = np.random.default_rng(7)


def softmax_ref(x, valid=None):
    """d2l's masked_softmax in float64, masked positions exactly 0 (a row seeing nothing: 0)."""
    x = np.asarray(x, np.float64)
    if valid is not None:
        cols = np.arange(x.shape[-1])
        keep = cols < valid[..., None]
        x = np.where(keep, x, -np.inf)
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1), 0)


def attention_ref(q, k, v, heads, kv_heads, valid=None, causal=False):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    B, Nq, W = q.shape
    Nk = k.shape[1]
    dh = W // heads
    out = np.zeros((B, Nq, W))
    for b in range(B):
        for h in range(heads):
            g = h // (heads // kv_heads)
            qs = q[b, :, h * dh:(h + 1) * dh]
            ks = k[b, :, g * dh:(g + 1) * dh]
            vs = v[b, :, g * dh:(g + 1) * dh]
            s = qs @ ks.T / math.sqrt(dh)
            lim = np.full(Nq, Nk)
            if valid is not None:
                lim = np.minimum(lim, valid[b] if np.ndim(valid[b]) else np.full(Nq, valid[b]))
            if causal:
                lim = np.minimum(lim, np.arange(Nq) + Nk - Nq + 1)
            out[b, :, h * dh:(h + 1) * dh] = softmax_ref(s, lim) @ vs
    return out


def close(got, want, tol, what):
    got = np.asarray(got, np.float64)
    err = np.max(np.abs(got - want)) if want.size else 0.0
    assert err <= tol, f"{what}: largest |error| {err:.3g} > {tol:.3g}"


def test_masked_softmax(ctx):
    x = rng.normal(size=(3, 5, 37)) * 4
    for valid in (None, np.array([0, 11, 37]), rng.integers(0, 40, size=(3, 5))):
        got = ops.masked_softmax(x, valid, context=ctx)
        assert got.dtype == np.float32 and got.shape == x.shape
        lim = None if valid is None else np.broadcast_to(
            np.clip(valid, 0, 37).reshape(3, -1), (3, 5))
        close(got, softmax_ref(x, lim), 2e-6, f"softmax valid={valid}")


def test_attention(ctx):
    # B 2, Nq 5, Nk 7, 6 heads of Dh 5 over 2 K/V heads (grouped-query)
    q = rng.normal(size=(2, 5, 30))
    k = rng.normal(size=(2, 7, 10))
    v = rng.normal(size=(2, 7, 10))
    for kw in ({}, {"valid_lens": np.array([3, 7])}, {"valid_lens": rng.integers(0, 8, (2, 5))},
               {"causal": True}):
        got = ops.attention(q, k, v, 6, kv_heads=2, context=ctx, **kw)
        want = attention_ref(q, k, v, 6, 2, kw.get("valid_lens"), kw.get("causal", False))
        close(got, want, 2e-5, f"attention {list(kw)}")
    # one sequence, 2-D in and out, as many K/V heads as query heads
    q2, k2, v2 = (rng.normal(size=(4, 12)) for _ in range(3))
    got = ops.attention(q2, k2, v2, 3, context=ctx)
    assert got.shape == (4, 12)
    close(got, attention_ref(q2[None], k2[None], v2[None], 3, 3)[0], 2e-5, "attention 2-D")


def test_layer_norm(ctx):
    x = rng.normal(size=(4, 3, 75)) * 3 + 1
    r = rng.normal(size=(4, 3, 75))
    w, b = rng.normal(size=75), rng.normal(size=75)
    for res in (None, r):
        z = x + (0 if res is None else res)
        mu = z.mean(-1, keepdims=True)
        var = ((z - mu) ** 2).mean(-1, keepdims=True)
        want = (z - mu) / np.sqrt(var + 1e-5) * w + b
        close(ops.layer_norm(x, w, b, 1e-5, residual=res, context=ctx), want, 2e-5, "layer_norm")


def test_positional_encoding(ctx):
    for d, off in ((33, 0), (64, 17)):
        x = rng.normal(size=(2, 9, d))
        pos = np.arange(off, off + 9)[:, None].astype(np.float64)
        j = np.arange(d)
        ang = pos / np.power(10000.0, (j - j % 2) / d)
        p = np.where(j % 2 == 0, np.sin(ang), np.cos(ang))
        close(ops.positional_encoding(x, off, context=ctx), x + p, 5e-5, f"posenc d={d}")


def test_linear(ctx):
    x = rng.normal(size=(3, 7, 45))
    w = rng.normal(size=(29, 45)) / 6
    b = rng.normal(size=29)
    z = x @ w.T + b
    acts = {None: z, "relu": np.maximum(z, 0),
            "gelu": 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2))),
            "gelu_tanh": 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3))),
            "silu": z / (1 + np.exp(-z))}
    for act, want in acts.items():
        close(ops.linear(x, w, b, act, context=ctx), want, 2e-5, f"linear {act}")
    close(ops.linear(x, w, context=ctx), x @ w.T, 2e-5, "linear without bias")


def test_tensors_stay_on_the_device(ctx):
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    w = rng.normal(size=(5, 8)).astype(np.float32)
    tx = clformer.Tensor.from_numpy(x, ctx)
    tw = clformer.Tensor.from_numpy(w, ctx)
    ty = ops.linear(tx, tw, context=ctx)
    assert isinstance(ty, clformer.Tensor) and ty.shape == (2, 3, 5) and ty.dtype == "F32"
    close(np.asarray(ty), x.astype(np.float64) @ w.T.astype(np.float64), 1e-5, "tensor linear")
    h = clformer.Tensor.from_numpy(x, ctx, "F16")
    assert h.dtype == "F16" and h.nbytes == x.size * 2
    assert np.array_equal(h.numpy(), x.astype(np.float16))
    i = clformer.Tensor.from_numpy(np.arange(6).reshape(2, 3), ctx)
    assert i.dtype == "I32" and i.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    for t in (tx, tw, ty, h, i):
        t.close()
    with pytest.raises(clformer.ClosedError):
        tx.numpy()
    with pytest.raises(clformer.ClosedError):
        ops.linear(tx, w, context=ctx)


def test_non_contiguous_and_other_float_types_are_copied(ctx):
    x = rng.normal(size=(6, 40))
    w = rng.normal(size=(40, 9))
    want = ops.linear(np.ascontiguousarray(x[::2]), np.ascontiguousarray(w.T), context=ctx)
    got = ops.linear(x[::2], w.T, context=ctx)  # strided views: copied, not refused
    assert np.array_equal(got, want)
    got16 = ops.linear(x[::2].astype(np.float16), w.T, context=ctx)
    assert got16.dtype == np.float32


def test_bad_inputs(ctx):
    x = rng.normal(size=(2, 4, 8))
    with pytest.raises(clformer.InvalidArgumentError, match="dtype int64"):
        ops.masked_softmax(np.ones((2, 3), dtype=np.int64), context=ctx)
    with pytest.raises(clformer.InvalidArgumentError, match="dtype object"):
        ops.layer_norm(np.array([["a"]], dtype=object), [1.0], [0.0], context=ctx)
    bad = x.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(clformer.InvalidArgumentError, match=r"NaN \(first at index \(1, 2, 3\)\)"):
        ops.masked_softmax(bad, context=ctx)
    with pytest.raises(clformer.ShapeMismatchError, match="not a whole number of 3 heads"):
        ops.attention(x, x, x, 3, context=ctx)
    with pytest.raises(clformer.ShapeMismatchError):
        ops.attention(x, x[:, :, :4], x, 2, context=ctx)  # K narrower than Q
    with pytest.raises(clformer.ShapeMismatchError):
        ops.linear(x, np.ones((3, 7)), context=ctx)  # in 8 against 7
    with pytest.raises(clformer.ShapeMismatchError, match="dimensions"):
        ops.linear(x, np.ones(8), context=ctx)
    with pytest.raises(clformer.ShapeMismatchError, match="empty"):
        ops.masked_softmax(np.ones((2, 0)), context=ctx)
    with pytest.raises(clformer.InvalidArgumentError, match="activation"):
        ops.linear(x, np.ones((3, 8)), activation="tanh", context=ctx)
    with pytest.raises(clformer.InvalidArgumentError, match="eps"):
        ops.layer_norm(x, np.ones(8), np.zeros(8), eps=0, context=ctx)
    with pytest.raises(clformer.InvalidArgumentError, match="valid_lens has dtype float"):
        ops.masked_softmax(x, np.array([1.5, 2.0]), context=ctx)
    with pytest.raises(clformer.ShapeMismatchError, match="valid_lens"):
        ops.masked_softmax(x, np.array([1, 2, 3]), context=ctx)  # B is 2


def test_errors_carry_status_and_message(ctx):
    with pytest.raises(clformer.Error) as e:
        ops.linear(rng.normal(size=(2, 8)), np.ones((3, 7)), context=ctx)
    assert e.value.status == -1001 and "8" in e.value.message
    assert isinstance(e.value, ValueError)


def test_closed_context_raises():
    c = clformer.Context(ctx_spec())
    t = clformer.Tensor.from_numpy(np.ones(4, np.float32), c)
    c.close()
    assert t.closed  # closed with its context
    with pytest.raises(clformer.ClosedError):
        t.numpy()
    with pytest.raises(clformer.ClosedError):
        ops.masked_softmax(np.ones((1, 4)), context=c)
    c.close()  # twice: nothing


def ctx_spec():
    import os
    return os.environ.get("CLF_DEVICE") or None


def test_devices_and_bad_device():
    ds = clformer.devices()
    assert ds and all(d.memory > 0 and d.compute_units > 0 for d in ds)
    assert [d.index for d in ds] == list(range(len(ds)))
    with pytest.raises(clformer.NoDeviceError, match="no-such-device"):
        clformer.Context("no-such-device")
    with pytest.raises(clformer.InvalidArgumentError):
        clformer.Context(1.5)  # type: ignore[arg-type]
