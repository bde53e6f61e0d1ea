"""Devices, contexts and device tensors."""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from . import _lib
from ._lib import DTYPE_NAMES, DTYPES, check, cstr, lib
from .errors import ClosedError, InvalidArgumentError, ShapeMismatchError

_DEVICE_TYPES = {1: "cpu", 2: "gpu", 3: "accelerator", 4: "other"}


@dataclass(frozen=True)
class Device:
    """One OpenCL device, as `devices()` lists it."""

    index: int  #: global index: ``Context(device=index)`` picks it
    name: str
    vendor: str
    platform: str
    type: str  #: "cpu", "gpu", "accelerator" or "other"
    memory: int  #: global memory, bytes
    max_alloc: int  #: largest single buffer, bytes
    local_memory: int  #: bytes per work-group
    compute_units: int
    clock_mhz: int
    fp16: bool
    fp64: bool
    subgroups: bool
    simulator: bool  #: Oclgrind: never chosen unless named
    fma: bool  #: fused multiply-add in hardware
    opencl_version: str
    driver_version: str


def _device(info: _lib.DeviceInfo) -> Device:
    def s(b: bytes) -> str:
        return b.decode("utf-8", "replace")

    return Device(
        index=info.global_index,
        name=s(info.name),
        vendor=s(info.vendor),
        platform=s(info.platform_name),
        type=_DEVICE_TYPES.get(info.type, "other"),
        memory=info.global_mem_bytes,
        max_alloc=info.max_alloc_bytes,
        local_memory=info.local_mem_bytes,
        compute_units=info.compute_units,
        clock_mhz=info.clock_mhz,
        fp16=bool(info.has_fp16),
        fp64=bool(info.has_fp64),
        subgroups=bool(info.has_subgroups),
        simulator=bool(info.is_simulator),
        fma=bool(info.has_fma),
        opencl_version=s(info.device_version),
        driver_version=s(info.driver_version),
    )


def devices() -> list[Device]:
    """Every OpenCL device of every platform, in the order ``Context(device=index)`` counts
    them. An empty list when there is no OpenCL platform."""
    count = ctypes.c_uint32(0)
    check(lib.clf_device_list(None, 0, ctypes.byref(count)))
    infos = (_lib.DeviceInfo * max(count.value, 1))()
    check(lib.clf_device_list(infos, count.value, ctypes.byref(count)))
    return [_device(infos[i]) for i in range(count.value)]


DeviceSpec = Union[str, int, None]


def _spec(device: DeviceSpec) -> Optional[bytes]:
    if device is None:
        return None
    if isinstance(device, bool) or not isinstance(device, (str, int)):
        raise InvalidArgumentError(
            -1000, f"device must be a name, 'gpu', 'cpu' or an index, not {device!r}")
    if isinstance(device, int) and device < 0:
        raise InvalidArgumentError(-1000, f"device index {device} is negative")
    return str(device).encode()


class Closeable:
    """What holds a library handle: closed once by close(), by leaving a ``with`` block, or when
    garbage-collected."""

    _handle: Optional[int] = None

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Context(Closeable):
    """A device and its queue: every model, tensor and op runs on one.

    ``device``: ``"gpu"``, ``"cpu"``, a global index from `devices()`, or a case-insensitive part
    of a device, vendor or platform name (``"nvidia"``, ``"pthread"``, ``"rusticl"``); ``None``
    takes ``$CLF_DEVICE``, else the first GPU, else the first CPU. ``cache_dir`` holds built
    kernels between runs (``None``: ``$XDG_CACHE_HOME/clformer``).

    A context runs one call at a time (calls from several threads wait for each other); for
    work in parallel, give each thread its own context. ``close()`` (or leaving a ``with``
    block) frees it and closes every model and tensor made on it.
    """

    def __init__(self, device: DeviceSpec = None, cache_dir: Optional[str] = None):
        self._handle: Optional[int] = None
        self._closing = False
        self._lock = threading.RLock()
        self._children: "weakref.WeakSet[Any]" = weakref.WeakSet()
        params = lib.clf_context_default_params()
        err = _lib.Error()
        params.device_spec = _spec(device)
        params.cache_dir = cstr(cache_dir)
        params.error = ctypes.pointer(err)
        handle = ctypes.c_void_p()
        check(lib.clf_context_create(ctypes.byref(handle), ctypes.byref(params)), err.message)
        self._handle = handle.value

    def close(self) -> None:
        """Frees the context, after closing every model and tensor made on it. Idempotent."""
        with self._lock:
            if self._handle is None or self._closing:
                return
            self._closing = True  # a child that owns this context closes it again: no-op
            try:
                for child in list(self._children):
                    child.close()
                lib.clf_context_free(self._handle)
            finally:
                self._handle = None
                self._closing = False

    # -- helpers for the other modules
    def _h(self) -> int:
        if self._handle is None:
            raise ClosedError("the context")
        return self._handle

    def _adopt(self, child: Any) -> None:
        self._children.add(child)

    def _check(self, status: int) -> None:
        """Raises for a failing status with the context's message (call under the lock)."""
        if status != 0:
            msg = lib.clf_context_last_error(self._handle) if self._handle else None
            check(status, msg)

    @property
    def device(self) -> Device:
        """The context's device."""
        with self._lock:
            info = _lib.DeviceInfo()
            self._check(lib.clf_context_device_info(self._h(), ctypes.byref(info)))
            return _device(info)

    @property
    def last_warning(self) -> str:
        """The last warning the library recorded on this context ("" if none)."""
        with self._lock:
            return lib.clf_context_last_warning(self._h()).decode("utf-8", "replace")

    def __repr__(self) -> str:
        if self.closed:
            return "<clformer.Context closed>"
        d = self.device
        return f"<clformer.Context {d.name!r} ({d.platform}, {d.type})>"


_default_lock = threading.Lock()
_default: dict[str, Context] = {}


def default_context() -> Context:
    """The process's default context (made at first use, on the default device), which the ops
    and models use when given no device or context."""
    with _default_lock:
        ctx = _default.get("ctx")
        if ctx is None or ctx.closed:
            ctx = Context()
            _default["ctx"] = ctx
        return ctx


def resolve_context(context: Optional[Context], device: DeviceSpec) -> tuple[Context, bool]:
    """(the context to use, whether the caller owns it): a given context; else a new one on a
    given device; else the default context."""
    if context is not None:
        if device is not None:
            raise InvalidArgumentError(-1000, "give a device or a context, not both")
        if not isinstance(context, Context):
            raise InvalidArgumentError(-1000, f"context must be a clformer.Context, not "
                                              f"{type(context).__name__}")
        return context, False
    if device is not None:
        return Context(device), True
    return default_context(), False


_NUMPY = {"F32": np.float32, "F16": np.float16, "I32": np.int32}


class Tensor(Closeable):
    """A tensor in device memory: F32, F16 or I32 from and to numpy, or a block type
    (Q8_0, Q4_0, ...) written as bytes.

    ``Tensor.from_numpy(a)`` copies an array to the device (float arrays become F32 unless
    ``dtype`` says otherwise, integer arrays I32); ``t.numpy()`` (or ``np.asarray(t)``) copies
    it back.
    """

    def __init__(self, context: Context, shape: tuple[int, ...], dtype: str = "F32"):
        self._handle: Optional[int] = None
        code = _lib.dtype_code(dtype)
        shape = tuple(int(s) for s in shape)
        if not 1 <= len(shape) <= _lib.MAX_DIMS:
            raise InvalidArgumentError(-1000, f"a tensor has 1 to {_lib.MAX_DIMS} dimensions, "
                                              f"not {len(shape)}")
        self.context = context
        with context._lock:
            dims = (ctypes.c_int64 * len(shape))(*shape)
            h = ctypes.c_void_p()
            context._check(lib.clf_tensor_create(context._h(), code, len(shape), dims,
                                                 ctypes.byref(h)))
            self._handle = h.value
            context._adopt(self)
        self.shape = shape
        self.dtype = DTYPE_NAMES[code]

    @classmethod
    def from_numpy(cls, array: Any, context: Optional[Context] = None,
                   dtype: Optional[str] = None) -> "Tensor":
        """A device copy of ``array`` (any array-like; copied to a contiguous array of the
        dtype first where it is not one already). ``dtype``: ``"F32"`` (default for floats),
        ``"F16"`` or ``"I32"`` (default for integers)."""
        a = np.asarray(array)
        if dtype is None:
            if a.dtype.kind == "f":
                dtype = "F32"
            elif a.dtype.kind in "iu":
                dtype = "I32"
            else:
                raise InvalidArgumentError(-1000, f"no tensor type for numpy dtype {a.dtype}")
        dtype = dtype.upper()
        if dtype not in _NUMPY:
            raise InvalidArgumentError(-1000, f"from_numpy makes F32, F16 or I32 tensors, "
                                              f"not {dtype}")
        if a.ndim == 0:
            a = a.reshape(1)
        if a.size == 0:
            raise InvalidArgumentError(-1000, "an empty array has no tensor")
        host = np.ascontiguousarray(a, dtype=_NUMPY[dtype])
        ctx = context if context is not None else default_context()
        t = cls(ctx, host.shape, dtype)
        t.write(host)
        return t

    def close(self) -> None:
        """Frees the device memory. Idempotent."""
        if self._handle is not None:
            with self.context._lock:
                if self._handle is not None:
                    lib.clf_tensor_free(self._handle)
                    self._handle = None

    def _h(self) -> int:
        if self._handle is None:
            raise ClosedError("the tensor")
        return self._handle

    # -- data
    @property
    def nbytes(self) -> int:
        with self.context._lock:
            return int(lib.clf_tensor_bytes(self._h()))

    def write(self, data: Any) -> None:
        """Copies an array of the tensor's shape into it (F32/F16/I32), or raw bytes of its exact
        size (any type)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            buf = bytes(data)
        else:
            if self.dtype not in _NUMPY:
                raise InvalidArgumentError(-1000, f"a {self.dtype} tensor takes bytes")
            a = np.asarray(data)
            if a.shape != self.shape:
                raise ShapeMismatchError(-1001, f"array of shape {a.shape} into a tensor of "
                                                  f"shape {self.shape}")
            buf = np.ascontiguousarray(a, dtype=_NUMPY[self.dtype]).tobytes()
        with self.context._lock:
            h = self._h()
            self.context._check(lib.clf_tensor_write(h, buf, len(buf)))

    def numpy(self) -> np.ndarray:
        """A host copy (F32, F16 or I32 tensors)."""
        if self.dtype not in _NUMPY:
            raise InvalidArgumentError(-1000, f"a {self.dtype} tensor has no numpy type")
        out = np.empty(self.shape, dtype=_NUMPY[self.dtype])
        with self.context._lock:
            h = self._h()
            self.context._check(lib.clf_tensor_read(h, out.ctypes.data, out.nbytes))
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<clformer.Tensor {self.dtype} {self.shape}{state}>"
