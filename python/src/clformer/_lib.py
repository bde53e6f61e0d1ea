"""The C library through ctypes: its structs, its functions' prototypes and its status codes.

Nothing here is public. Every other module calls the library through `lib` and turns a failing
status into an exception with `check`. ctypes releases the GIL for the length of every call
into the library, so long calls (loading, encoding, generating) let other Python threads run.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

from .errors import InvalidArgumentError, _error_for

NAME_LEN = 256
LM_MAX_EOS = 8
MAX_DIMS = 4

# clf_dtype (include/clformer/dtypes.def)
DTYPES = {"F32": 0, "F16": 1, "I32": 2, "BF16": 3, "Q8_0": 4, "Q4_0": 5, "Q4_K": 6, "Q6_K": 7}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

# clf_activation
ACTIVATIONS = {None: 0, "identity": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3,
               "silu": 4}


class Error(Structure):  # clf_error
    _fields_ = [("message", c_char * 2048)]


class DeviceInfo(Structure):  # clf_device_info
    _fields_ = [
        ("global_index", c_uint32),
        ("platform_index", c_uint32),
        ("device_index", c_uint32),
        ("platform_name", c_char * NAME_LEN),
        ("name", c_char * NAME_LEN),
        ("vendor", c_char * NAME_LEN),
        ("driver_version", c_char * NAME_LEN),
        ("device_version", c_char * NAME_LEN),
        ("opencl_c_version", c_char * NAME_LEN),
        ("type", c_int),
        ("compute_units", c_uint32),
        ("clock_mhz", c_uint32),
        ("global_mem_bytes", c_uint64),
        ("max_alloc_bytes", c_uint64),
        ("local_mem_bytes", c_uint64),
        ("local_mem_dedicated", c_int),
        ("max_work_group_size", c_uint64),
        ("preferred_vector_width_float", c_uint32),
        ("native_vector_width_float", c_uint32),
        ("has_fp16", c_int),
        ("has_fp64", c_int),
        ("has_subgroups", c_int),
        ("is_simulator", c_int),
        ("has_fma", c_int),
    ]


class ContextParams(Structure):  # clf_context_params
    _fields_ = [
        ("device_spec", c_char_p),
        ("enable_profiling", c_int),
        ("disk_cache", c_int),
        ("cache_dir", c_char_p),
        ("kernel_dir", c_char_p),
        ("program_log_dir", c_char_p),
        ("device_profile", c_char_p),
        ("error", POINTER(Error)),
        ("gemm_tuning", c_int),
        ("program_log_only", c_int),
    ]


class LoadParams(Structure):  # clf_load_params
    _fields_ = [("weight_dtype", c_int), ("cache_dtype", c_int)]


ALLREDUCE_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_float), c_int64)  # clf_allreduce_fn


class Shard(Structure):  # clf_shard
    _fields_ = [("rank", c_int), ("size", c_int), ("allreduce", ALLREDUCE_FN),
                ("user", c_void_p)]


class LMInfo(Structure):  # clf_lm_info
    _fields_ = [
        ("arch", c_char * 64),
        ("vocab_size", c_int64),
        ("hidden_size", c_int64),
        ("ffn_size", c_int64),
        ("layers", c_int64),
        ("heads", c_int64),
        ("kv_heads", c_int64),
        ("head_dim", c_int64),
        ("max_positions", c_int64),
        ("bos", c_int32),
        ("eos", c_int32 * LM_MAX_EOS),
        ("n_eos", c_int),
        ("parameters", c_int64),
        ("weight_dtype", c_int),
        ("cache_dtype", c_int),
    ]


class LMWeight(Structure):  # clf_lm_weight
    _fields_ = [("name", c_char * 32), ("dtype", c_int), ("bytes", c_size_t)]


class SamplingParams(Structure):  # clf_sampling_params
    _fields_ = [
        ("temperature", c_float),
        ("top_k", c_int64),
        ("top_p", c_float),
        ("repetition_penalty", c_float),
        ("seed", c_uint64),
    ]


TOKEN_FN = CFUNCTYPE(c_int, c_void_p, c_int64, c_int32)  # clf_token_fn


class GenerateParams(Structure):  # clf_generate_params
    _fields_ = [
        ("max_new_tokens", c_int64),
        ("sampling", SamplingParams),
        ("ignore_eos", c_int),
        ("on_token", TOKEN_FN),
        ("user", c_void_p),
    ]


class Mask(Structure):  # clf_mask
    _fields_ = [
        ("valid_lens", c_void_p),
        ("causal", c_int),
        ("causal_offset", c_int64),
        ("window", c_int64),
    ]


class AttentionParams(Structure):  # clf_attention_params
    _fields_ = [
        ("heads", c_int64),
        ("kv_heads", c_int64),
        ("head_dim", c_int64),
        ("q_col", c_int64),
        ("k_col", c_int64),
        ("v_col", c_int64),
        ("nk", c_int64),
        ("scale", c_float),
        ("mask", Mask),
        ("naive", c_int),
        ("weights", c_void_p),
    ]


# The structs above by their C names, for the layout check (tests/test_abi.py).
STRUCTS = {
    "clf_error": Error,
    "clf_device_info": DeviceInfo,
    "clf_context_params": ContextParams,
    "clf_load_params": LoadParams,
    "clf_shard": Shard,
    "clf_lm_info": LMInfo,
    "clf_lm_weight": LMWeight,
    "clf_sampling_params": SamplingParams,
    "clf_generate_params": GenerateParams,
    "clf_mask": Mask,
    "clf_attention_params": AttentionParams,
}

P = c_void_p  # every opaque handle (clf_context *, clf_tensor *, ...)
I64P = POINTER(c_int64)
I32P = POINTER(c_int32)
F32P = POINTER(c_float)
S = c_int  # clf_status

# name: (restype, argtypes)
_PROTOTYPES = {
    "clf_strerror": (c_char_p, [c_int]),
    "clf_device_list": (S, [POINTER(DeviceInfo), c_uint32, POINTER(c_uint32)]),
    "clf_context_default_params": (ContextParams, []),
    "clf_context_create": (S, [POINTER(P), POINTER(ContextParams)]),
    "clf_context_free": (None, [P]),
    "clf_context_last_error": (c_char_p, [P]),
    "clf_context_last_warning": (c_char_p, [P]),
    "clf_context_device_info": (S, [P, POINTER(DeviceInfo)]),
    "clf_context_finish": (S, [P]),
    "clf_tensor_create": (S, [P, c_int, c_int, I64P, POINTER(P)]),
    "clf_tensor_free": (None, [P]),
    "clf_tensor_write": (S, [P, c_void_p, c_size_t]),
    "clf_tensor_read": (S, [P, c_void_p, c_size_t]),
    "clf_tensor_ndim": (c_int, [P]),
    "clf_tensor_dim": (c_int64, [P, c_int]),
    "clf_tensor_bytes": (c_size_t, [P]),
    "clf_tensor_dtype": (c_int, [P]),
    "clf_tensor_reshape": (S, [P, c_int, I64P]),
    "clf_f32_to_f16": (c_uint16, [c_float]),
    "clf_softmax": (S, [P, P, P, POINTER(Mask)]),
    "clf_layernorm": (S, [P, P, P, P, P, c_float, P]),
    "clf_posenc_add": (S, [P, P, c_int64, P]),
    "clf_linear": (S, [P, P, P, P, c_int, P]),
    "clf_attention_default_params": (AttentionParams, [c_int64, c_int64]),
    "clf_attention": (S, [P, P, P, P, P, POINTER(AttentionParams)]),
    "clf_load_default_params": (LoadParams, []),
    "clf_sentence_model_load_with": (S, [P, c_char_p, POINTER(LoadParams), POINTER(P)]),
    "clf_sentence_model_load_split": (S, [POINTER(P), c_int, POINTER(c_double), c_char_p,
                                          POINTER(LoadParams), POINTER(P)]),
    "clf_sentence_model_free": (None, [P]),
    "clf_sentence_model_dim": (c_int64, [P]),
    "clf_sentence_model_max_len": (c_int64, [P]),
    "clf_sentence_model_normalizes": (c_int, [P]),
    "clf_sentence_model_set_normalize": (S, [P, c_int]),
    "clf_sentence_embed": (S, [P, POINTER(c_char_p), c_int64, c_int64, F32P]),
    "clf_lm_load_with": (S, [P, c_char_p, POINTER(LoadParams), POINTER(P)]),
    "clf_lm_load_split": (S, [POINTER(P), c_int, POINTER(c_double), c_char_p, POINTER(LoadParams),
                              POINTER(P)]),
    "clf_lm_load_shard": (S, [P, c_char_p, POINTER(LoadParams), POINTER(Shard), POINTER(P)]),
    "clf_lm_free": (None, [P]),
    "clf_lm_get_info": (S, [P, POINTER(LMInfo)]),
    "clf_lm_weights": (S, [P, POINTER(LMWeight), c_int64, I64P]),
    "clf_generate_default_params": (GenerateParams, []),
    "clf_lm_generate": (S, [P, POINTER(I32P), I64P, c_int64, POINTER(GenerateParams), I32P, I64P]),
    "clf_bpe_load": (S, [c_char_p, POINTER(P), POINTER(Error)]),
    "clf_bpe_load_gguf": (S, [c_char_p, POINTER(P), POINTER(Error)]),
    "clf_bpe_free": (None, [P]),
    "clf_bpe_vocab_size": (c_int64, [P]),
    "clf_bpe_encode": (S, [P, c_char_p, c_int, I32P, c_int64, I64P, POINTER(Error)]),
    "clf_bpe_decode": (S, [P, I32P, c_int64, c_int, c_char_p, c_size_t, POINTER(c_size_t),
                           POINTER(Error)]),
    "clf_bpe_stream_create": (S, [P, c_int, POINTER(P)]),
    "clf_bpe_stream_free": (None, [P]),
    "clf_bpe_stream_next": (S, [P, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
}


def _library_path() -> str:
    """The shared library: $CLFORMER_LIBRARY (a developer's build), else the package's own."""
    env = os.environ.get("CLFORMER_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent / "lib"
    for name in ("libclformer.so.0", "libclformer.so", "libclformer.dylib", "clformer.dll"):
        if (here / name).exists():
            return str(here / name)
    raise ImportError(
        f"clformer: the C library is not in {here}: install the package with "
        "`pip install ./python` from a checkout, or set CLFORMER_LIBRARY to a built "
        "libclformer.so"
    )


def _load() -> ctypes.CDLL:
    dll = ctypes.CDLL(_library_path())
    for name, (res, args) in _PROTOTYPES.items():
        fn = getattr(dll, name)
        fn.restype = res
        fn.argtypes = args
    return dll


lib = _load()


def strerror(status: int) -> str:
    return lib.clf_strerror(status).decode()


def check(status: int, message: str | bytes | None = None) -> None:
    """Raises the clformer.Error subclass of a failing status, with the library's message."""
    if status == 0:
        return
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    detail = message or strerror(status)
    raise _error_for(status)(status, detail)


def dtype_code(dtype: str | None, default: str = "F32") -> int:
    name = (dtype or default).upper()
    if name not in DTYPES:
        raise InvalidArgumentError(-1000, f"unknown dtype {dtype!r}: one of {', '.join(DTYPES)}")
    return DTYPES[name]


def cstr(s: str | os.PathLike | None) -> bytes | None:
    return None if s is None else os.fsencode(s)


__all__ = ["lib", "check", "strerror", "dtype_code", "cstr"]
