"""The ops of the seeds' Transformer on numpy arrays or `Tensor` s.

Each op takes numpy arrays (or anything ``np.asarray`` accepts) or device `Tensor` s. Arrays
are copied to the device (a float array of another dtype, or a non-contiguous one, is converted
to a contiguous float32 copy first: never refused for that), the op runs, and the result comes
back as a float32 array; given `Tensor` s only, the result is a `Tensor` on their context and
nothing crosses to the host. An array holding NaN is refused (`InvalidArgumentError`, naming the
argument and the first index); so are integer, boolean or object arrays where floats are
expected, and shapes the op does not take (`ShapeMismatchError`).

The math is fp32 on the device; the tests hold each op to a float64 numpy reference.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._core import Context, Tensor, default_context
from ._lib import lib
from .errors import InvalidArgumentError, ShapeMismatchError

ArrayLike = Union[np.ndarray, Tensor, Sequence[Any]]


class _Call:
    """Moves an op's operands to one context and its results back."""

    def __init__(self, context: Optional[Context], operands: Sequence[Any]):
        tensors = [o for o in operands if isinstance(o, Tensor)]
        arrays = [o for o in operands if o is not None and not isinstance(o, Tensor)]
        ctx = context
        for t in tensors:
            if ctx is None:
                ctx = t.context
            elif t.context is not ctx:
                raise InvalidArgumentError(-1000, "tensors of different contexts in one op")
        self.ctx = ctx if ctx is not None else default_context()
        self.as_tensor = bool(tensors) and not arrays
        self.temps: list[Tensor] = []

    def floats(self, name: str, x: Any, ndim: Sequence[int]) -> Tensor:
        if isinstance(x, Tensor):
            if x.dtype != "F32":
                raise InvalidArgumentError(-1000, f"{name} is a {x.dtype} tensor; the op takes F32")
            if len(x.shape) not in ndim:
                raise _ndim_error(name, x.shape, ndim)
            return x
        a = np.asarray(x)
        if a.dtype.kind not in "f":
            raise InvalidArgumentError(-1000, f"{name} has dtype {a.dtype}; the op takes floats")
        if a.ndim not in ndim:
            raise _ndim_error(name, a.shape, ndim)
        if a.size == 0:
            raise ShapeMismatchError(-1001, f"{name} is empty (shape {a.shape})")
        nan = np.isnan(a)
        if nan.any():
            raise InvalidArgumentError(
                -1000, f"{name} holds NaN (first at index "
                       f"{tuple(int(i) for i in np.unravel_index(nan.argmax(), a.shape))})")
        return self._temp(a, "F32")

    def ints(self, name: str, x: Any) -> Optional[Tensor]:
        if x is None or isinstance(x, Tensor):
            if isinstance(x, Tensor) and x.dtype != "I32":
                raise InvalidArgumentError(-1000, f"{name} is a {x.dtype} tensor; it must be I32")
            return x
        a = np.asarray(x)
        if a.dtype.kind not in "iu":
            raise InvalidArgumentError(-1000, f"{name} has dtype {a.dtype}; it must hold integers")
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise InvalidArgumentError(-1000, f"{name} holds values past int32")
        return self._temp(a, "I32")

    def _temp(self, a: np.ndarray, dtype: str) -> Tensor:
        t = Tensor.from_numpy(a, self.ctx, dtype)
        self.temps.append(t)
        return t

    def out(self, shape: Sequence[int]) -> Tensor:
        t = Tensor(self.ctx, tuple(shape), "F32")
        if not self.as_tensor:
            self.temps.append(t)
        return t

    def run(self, fn: Any, *args: Any) -> None:
        with self.ctx._lock:
            self.ctx._check(fn(self.ctx._h(), *args))

    def result(self, t: Tensor) -> Union[np.ndarray, Tensor]:
        try:
            return t if self.as_tensor else t.numpy()
        finally:
            self.free()

    def free(self) -> None:
        for t in self.temps:
            t.close()
        self.temps = []


def _ndim_error(name: str, shape: Sequence[int], ndim: Sequence[int]) -> ShapeMismatchError:
    want = " or ".join(str(n) for n in ndim)
    return ShapeMismatchError(-1001, f"{name} has {len(shape)} dimensions {tuple(shape)}; "
                                       f"the op takes {want}")


def _h(t: Optional[Tensor]) -> Optional[int]:
    return None if t is None else t._h()


def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, heads: int, *,
              valid_lens: Optional[ArrayLike] = None, causal: bool = False,
              kv_heads: Optional[int] = None, scale: Optional[float] = None,
              context: Optional[Context] = None) -> Union[np.ndarray, Tensor]:
    """Scaled dot-product attention over all heads, d2l's MultiHeadAttention without its
    projections: ``softmax(q kᵀ · scale, masked) v`` per head.

    q (B, Nq, H·Dh) or (Nq, H·Dh); k and v (B, Nk, KVH·Dh) likewise, KVH = ``kv_heads`` (default
    ``heads``; fewer is grouped-query attention, query head h reading K/V head h // (H / KVH)).
    ``valid_lens``: (B) or (B, Nq) integers, query rows of batch b seeing keys 0 .. len - 1 (as
    d2l's valid_lens); ``causal``: query i sees keys 0 .. i + Nk - Nq. ``scale`` defaults to
    1 / sqrt(Dh). Returns (B, Nq, H·Dh) (2-D in, 2-D out). A query that sees no key gets zeros.
    """
    call = _Call(context, [q, k, v, valid_lens])
    try:
        tq = call.floats("q", q, (2, 3))
        tk = call.floats("k", k, (2, 3))
        tv = call.floats("v", v, (2, 3))
        two_d = len(tq.shape) == 2
        if not len(tq.shape) == len(tk.shape) == len(tv.shape):
            raise ShapeMismatchError(-1001, f"q {tq.shape}, k {tk.shape} and v {tv.shape} "
                                              "differ in their number of dimensions")
        if int(heads) < 1 or tq.shape[-1] % int(heads):
            raise ShapeMismatchError(-1001, f"q's width {tq.shape[-1]} is not a whole number "
                                              f"of {heads} heads")
        dh = tq.shape[-1] // int(heads)
        desc = lib.clf_attention_default_params(int(heads), dh)
        desc.kv_heads = int(kv_heads) if kv_heads is not None else 0
        if scale is not None:
            desc.scale = float(scale)
        tl = call.ints("valid_lens", valid_lens)
        desc.mask.valid_lens = _h(tl)
        desc.mask.causal = 1 if causal else 0
        if two_d:  # one sequence: a batch of 1 for the call, as given afterwards
            for t in (tq, tk, tv):
                _reshape(t, (1,) + t.shape)
        out = call.out(tq.shape)
        try:
            if causal:
                desc.mask.causal_offset = tk.shape[1] - tq.shape[1]
            call.run(lib.clf_attention, tq._h(), tk._h(), tv._h(), out._h(), ctypes.byref(desc))
        finally:
            if two_d:
                for t in (tq, tk, tv, out):
                    _reshape(t, t.shape[1:])
        return call.result(out)
    finally:
        call.free()


def _reshape(t: Tensor, shape: tuple[int, ...]) -> None:
    dims = (ctypes.c_int64 * len(shape))(*shape)
    with t.context._lock:
        t.context._check(lib.clf_tensor_reshape(t._h(), len(shape), dims))
    t.shape = tuple(shape)


def masked_softmax(x: ArrayLike, valid_lens: Optional[ArrayLike] = None, *,
                   causal: bool = False,
                   context: Optional[Context] = None) -> Union[np.ndarray, Tensor]:
    """d2l's masked_softmax over the last dimension: x (B, ..., Nq, Nk) (2-D: one matrix);
    ``valid_lens`` (B) or (B, Nq) integers, positions at or past a row's length get 0 (where
    d2l's -1e6 gives 0 after the exponential), a row that sees nothing gets all zeros."""
    call = _Call(context, [x, valid_lens])
    try:
        tx = call.floats("x", x, (1, 2, 3, 4))
        mask = _lib.Mask()
        mask.valid_lens = _h(call.ints("valid_lens", valid_lens))
        mask.causal = 1 if causal else 0
        out = call.out(tx.shape)
        call.run(lib.clf_softmax, tx._h(), out._h(), ctypes.byref(mask))
        return call.result(out)
    finally:
        call.free()


def layer_norm(x: ArrayLike, weight: ArrayLike, bias: ArrayLike, eps: float = 1e-5, *,
               residual: Optional[ArrayLike] = None,
               context: Optional[Context] = None) -> Union[np.ndarray, Tensor]:
    """PyTorch's LayerNorm over the last dimension n (biased variance): ``(z - mean) /
    sqrt(var + eps) * weight + bias`` with z = x (+ ``residual``: d2l's AddNorm(X, Y) is
    ``layer_norm(Y, w, b, residual=X)``). weight and bias (n)."""
    call = _Call(context, [x, weight, bias, residual])
    try:
        tx = call.floats("x", x, (1, 2, 3, 4))
        tr = None if residual is None else call.floats("residual", residual, (1, 2, 3, 4))
        tw = call.floats("weight", weight, (1,))
        tb = call.floats("bias", bias, (1,))
        if not eps > 0:
            raise InvalidArgumentError(-1000, f"eps must be > 0, not {eps}")
        out = call.out(tx.shape)
        call.run(lib.clf_layernorm, tx._h(), _h(tr), tw._h(), tb._h(), float(eps), out._h())
        return call.result(out)
    finally:
        call.free()


def positional_encoding(x: ArrayLike, offset: int = 0, *,
                        context: Optional[Context] = None) -> Union[np.ndarray, Tensor]:
    """d2l's PositionalEncoding at inference: ``x + P[offset + i]`` for row i of x (B, N, d) or
    (N, d), with P[p, 2j] = sin(p / 10000^(2j/d)), P[p, 2j+1] = cos(p / 10000^(2j/d))."""
    call = _Call(context, [x])
    try:
        tx = call.floats("x", x, (2, 3))
        if int(offset) < 0:
            raise InvalidArgumentError(-1000, f"offset {offset} is negative")
        out = call.out(tx.shape)
        call.run(lib.clf_posenc_add, tx._h(), int(offset), out._h())
        return call.result(out)
    finally:
        call.free()


def linear(x: ArrayLike, weight: ArrayLike, bias: Optional[ArrayLike] = None,
           activation: Optional[str] = None, *,
           context: Optional[Context] = None) -> Union[np.ndarray, Tensor]:
    """PyTorch's nn.Linear, optionally with an activation fused: ``act(x @ weight.T + bias)``.
    x (..., in), weight (out, in), bias (out) or None; ``activation``: None, "relu", "gelu"
    (erf), "gelu_tanh" or "silu"."""
    if activation not in _lib.ACTIVATIONS:
        raise InvalidArgumentError(-1000, f"unknown activation {activation!r}: one of "
                                          "None, relu, gelu, gelu_tanh, silu")
    call = _Call(context, [x, weight, bias])
    try:
        tx = call.floats("x", x, (1, 2, 3, 4))
        tw = call.floats("weight", weight, (2,))
        tb = None if bias is None else call.floats("bias", bias, (1,))
        out = call.out(tx.shape[:-1] + (tw.shape[0],))
        call.run(lib.clf_linear, tx._h(), tw._h(), _h(tb), _lib.ACTIVATIONS[activation],
                 out._h())
        return call.result(out)
    finally:
        call.free()


__all__ = ["attention", "masked_softmax", "layer_norm", "positional_encoding", "linear"]
