"""Sentence embeddings (`SentenceModel`) and causal language models (`LM`)."""

from __future__ import annotations

import ctypes
import os
import queue
import sys
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._core import Closeable, Context, DeviceSpec, resolve_context
from ._lib import DTYPE_NAMES, check, cstr, dtype_code, lib
from .errors import ClosedError, Error, InvalidArgumentError, NotFoundError


class _Model(Closeable):
    """What SentenceModel and LM share: a handle on a context, closed once."""

    _free: Callable[[int], None]
    _what = "the model"

    def _attach(self, context: Optional[Context], device: DeviceSpec,
                devices: Optional[Sequence[DeviceSpec]] = None) -> None:
        self._handle: Optional[int] = None
        self._stages: list[Context] = []  # a split model's own contexts after the first
        if devices is None:
            self.context, self._owns_context = resolve_context(context, device)
            return
        if context is not None or device is not None:
            raise InvalidArgumentError(-1000, "give devices, or a device or a context, not both")
        if isinstance(devices, (str, bytes)) or len(devices) < 1:
            raise InvalidArgumentError(-1000, "devices must be a list of one or more device specs")
        made: list[Context] = []
        try:
            for d in devices:
                made.append(Context(d))
        except BaseException:
            for c in made:
                c.close()
            raise
        self.context, self._owns_context = made[0], True
        self._stages = made[1:]

    def _load_split(self, fn: Callable[..., int], split: Optional[Sequence[float]],
                    *args: object) -> None:
        """Loads through fn(contexts, n, shares, *args, &handle) over the model's contexts."""
        ctx = self.context
        every = [ctx] + self._stages
        handles = (ctypes.c_void_p * len(every))(*[c._h() for c in every])
        shares = None
        if split is not None:
            if len(split) != len(every):
                self._close_contexts()
                raise InvalidArgumentError(
                    -1000, f"split gives {len(split)} shares for {len(every)} devices")
            shares = (ctypes.c_double * len(every))(*[float(x) for x in split])
        h = ctypes.c_void_p()
        try:
            with ctx._lock:
                ctx._check(fn(handles, len(every), shares, *args, ctypes.byref(h)))
                self._handle = h.value
                ctx._adopt(self)
        except BaseException:
            self._close_contexts()
            raise

    def _close_contexts(self) -> None:
        for c in self._stages:
            c.close()
        self._stages = []
        if self._owns_context:
            self.context.close()

    def _load(self, fn: Callable[..., int], *args: object) -> None:
        ctx = self.context
        h = ctypes.c_void_p()
        try:
            with ctx._lock:
                ctx._check(fn(ctx._h(), *args, ctypes.byref(h)))
                self._handle = h.value
                ctx._adopt(self)
        except BaseException:
            if self._owns_context:
                ctx.close()
            raise

    def close(self) -> None:
        """Frees the model (and its context, if the model made it). Idempotent; any later use
        raises `ClosedError`."""
        ctx = self.context
        with ctx._lock:
            if self._handle is not None:
                self._release()
                type(self)._free(self._handle)
                self._handle = None
        self._close_contexts()

    def _release(self) -> None:
        pass

    def _h(self) -> int:
        if self._handle is None:
            raise ClosedError(self._what)
        return self._handle


def _utf8(name: str, s: object) -> bytes:
    if not isinstance(s, str):
        raise InvalidArgumentError(-1000, f"{name} must be a str, not {type(s).__name__}")
    if "\0" in s:
        raise InvalidArgumentError(-1000, f"{name} holds a NUL character")
    return s.encode("utf-8", "replace")


def _load_params(weights: Optional[str], kv_cache: Optional[str]) -> _lib.LoadParams:
    p = lib.clf_load_default_params()
    p.weight_dtype = dtype_code(weights)
    p.cache_dtype = dtype_code(kv_cache)
    return p


class SentenceModel(_Model):
    """A sentence-transformers model folder with a BERT encoder (e.g. all-MiniLM-L6-v2), with
    the shape of sentence-transformers' ``SentenceTransformer``.

    ``device`` or ``context`` choose where it runs (neither: the default context); ``devices``
    (a list of specs) splits it by layers over one new context each, ``split`` their shares of
    the layers (default: their memory), as ``clf_sentence_model_load_split``; ``weights``:
    how the linear layers are kept on the device, ``"f32"``, ``"f16"``, ``"bf16"``, ``"q8_0"``,
    ``"q4_0"``, ``"q4_k"`` or ``"q6_k"`` (the math is fp32 whatever the storage).
    """

    _free = staticmethod(lib.clf_sentence_model_free)
    _what = "the SentenceModel"

    def __init__(self, path: Union[str, os.PathLike], device: DeviceSpec = None,
                 weights: str = "f32", *, context: Optional[Context] = None,
                 devices: Optional[Sequence[DeviceSpec]] = None,
                 split: Optional[Sequence[float]] = None):
        self._attach(context, device, devices)
        params = _load_params(weights, None)
        if devices is None and split is None:
            self._load(lib.clf_sentence_model_load_with, cstr(path), ctypes.byref(params))
        else:
            self._load_split(lib.clf_sentence_model_load_split, split, cstr(path),
                             ctypes.byref(params))
        self.dim: int = int(lib.clf_sentence_model_dim(self._handle))
        self.max_seq_length: int = int(lib.clf_sentence_model_max_len(self._handle))

    def get_sentence_embedding_dimension(self) -> int:
        """The embedding's length (sentence-transformers' name for `dim`)."""
        return self.dim

    @property
    def normalizes(self) -> bool:
        """Whether embeddings are L2-normalized by default (the model's Normalize module)."""
        with self.context._lock:
            return bool(lib.clf_sentence_model_normalizes(self._h()))

    def encode(self, sentences: Union[str, Sequence[str]], batch_size: int = 32,
               normalize_embeddings: Optional[bool] = None,
               show_progress_bar: bool = False) -> np.ndarray:
        """Embeds sentences: an (n, dim) float32 array for a list (an empty list gives (0, dim),
        as sentence-transformers), a (dim,) array for one str.

        Sentences go to the device in batches of up to ``batch_size`` of similar length;
        longer ones are truncated to `max_seq_length` tokens. ``normalize_embeddings``: None
        keeps the model's own choice, True or False forces L2 normalization on or off.
        ``show_progress_bar`` prints a bar to stderr, batch by batch.
        """
        one = isinstance(sentences, str)
        items = [sentences] if one else sentences
        if not isinstance(items, Sequence):
            items = list(items)
        texts = [_utf8(f"sentences[{i}]", s) for i, s in enumerate(items)]
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(-1000, f"batch_size must be a positive int, not "
                                              f"{batch_size!r}")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self.context._lock:
            h = self._h()
            saved = lib.clf_sentence_model_normalizes(h)
            if normalize_embeddings is not None:
                self.context._check(
                    lib.clf_sentence_model_set_normalize(h, 1 if normalize_embeddings else 0))
            try:
                if show_progress_bar and len(texts) > batch_size:
                    self._encode_with_bar(h, texts, batch_size, out)
                elif texts:
                    self._embed(h, texts, batch_size, out)
            finally:
                lib.clf_sentence_model_set_normalize(h, saved)
        return out[0] if one else out

    def _embed(self, h: int, texts: list[bytes], batch_size: int, out: np.ndarray) -> None:
        arr = (ctypes.c_char_p * len(texts))(*texts)
        self.context._check(lib.clf_sentence_embed(
            h, arr, len(texts), batch_size, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))

    def _encode_with_bar(self, h: int, texts: list[bytes], batch_size: int,
                         out: np.ndarray) -> None:
        # Longest first, as sentence-transformers orders them, so batches pad little.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        n = len(texts)
        batches = (n + batch_size - 1) // batch_size
        for b in range(batches):
            idx = order[b * batch_size:(b + 1) * batch_size]
            part = np.empty((len(idx), self.dim), dtype=np.float32)
            self._embed(h, [texts[i] for i in idx], batch_size, part)
            out[idx] = part
            done = b + 1
            bar = "#" * (30 * done // batches)
            sys.stderr.write(f"\rBatches: {done}/{batches} [{bar:<30}]")
            sys.stderr.flush()
        sys.stderr.write("\n")

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"dim {self.dim}, max_seq_length {self.max_seq_length}"
        return f"<clformer.SentenceModel {state}>"


@dataclass(frozen=True)
class LMInfo:
    """What `LM.info` reports."""

    arch: str  #: "LlamaForCausalLM", "Qwen2ForCausalLM", "GPT2LMHeadModel", ...
    vocab_size: int
    hidden_size: int
    ffn_size: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    max_positions: int
    bos: Optional[int]
    eos: tuple[int, ...]
    parameters: int
    weight_dtype: str  #: the first layer's Q|K|V type
    cache_dtype: str
    weights: dict[str, str]  #: each weight matrix's storage type, by llama.cpp's names


class _Tokenizer:
    """A clf_bpe tokenizer (tokenizer.json or a GGUF file's own)."""

    def __init__(self, path: str, gguf: bool):
        err = _lib.Error()
        h = ctypes.c_void_p()
        fn = lib.clf_bpe_load_gguf if gguf else lib.clf_bpe_load
        check(fn(cstr(path), ctypes.byref(h), ctypes.byref(err)), err.message)
        self.handle = h.value

    def close(self) -> None:
        if self.handle is not None:
            lib.clf_bpe_free(self.handle)
            self.handle = None

    def encode(self, text: str, add_special: bool) -> list[int]:
        data = _utf8("text", text)
        err = _lib.Error()
        n = ctypes.c_int64(0)
        lib.clf_bpe_encode(self.handle, data, int(add_special), None, 0, ctypes.byref(n), None)
        ids = (ctypes.c_int32 * max(n.value, 1))()
        check(lib.clf_bpe_encode(self.handle, data, int(add_special), ids, n.value,
                                 ctypes.byref(n), ctypes.byref(err)), err.message)
        return list(ids[:n.value])

    def decode(self, ids: Sequence[int], skip_special: bool) -> str:
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        cap = 64 + 16 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = ctypes.c_size_t(0)
            err = _lib.Error()
            st = lib.clf_bpe_decode(self.handle, arr, len(ids), int(skip_special), buf, cap,
                                    ctypes.byref(n), ctypes.byref(err))
            if st == -1008 and n.value + 1 > cap:  # CLF_ERROR_SIZE_LIMIT: grow to fit
                cap = n.value + 1
                continue
            check(st, err.message)
            return buf.raw[:n.value].decode("utf-8", "replace")


class _StreamText:
    """One sequence's text as its tokens arrive (clf_bpe_stream), with stop strings: text that
    could still turn into a stop string is held back until it cannot."""

    def __init__(self, tok: _Tokenizer, stop: Sequence[str]):
        h = ctypes.c_void_p()
        check(lib.clf_bpe_stream_create(tok.handle, 1, ctypes.byref(h)))
        self.handle = h.value
        self.stop = [s for s in stop if s]
        self.held = ""
        self.stopped = False
        self.buf = ctypes.create_string_buffer(4096)

    def close(self) -> None:
        if self.handle is not None:
            lib.clf_bpe_stream_free(self.handle)
            self.handle = None

    def push(self, token: int) -> str:
        """The text that token releases (after stop-string filtering)."""
        n = ctypes.c_size_t(0)
        check(lib.clf_bpe_stream_next(self.handle, token, self.buf, len(self.buf),
                                      ctypes.byref(n)))
        self.held += self.buf.raw[:n.value].decode("utf-8", "replace")
        if not self.stop:
            out, self.held = self.held, ""
            return out
        cut = min((i for i in (self.held.find(s) for s in self.stop) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            out, self.held = self.held[:cut], ""
            return out
        keep = 0  # the longest end of the text that begins a stop string
        for s in self.stop:
            for k in range(min(len(s) - 1, len(self.held)), keep, -1):
                if self.held.endswith(s[:k]):
                    keep = k
                    break
        out, self.held = self.held[:len(self.held) - keep], self.held[len(self.held) - keep:]
        return out

    def finish(self) -> str:
        out, self.held = ("" if self.stopped else self.held), ""
        return out


def _shard(shard: Optional[tuple[int, int]], allreduce: Optional[Callable[[np.ndarray], None]],
           devices: object, split: object, failures: list[BaseException]) -> Optional[_lib.Shard]:
    """The clf_shard of LM(shard=, allreduce=); the structure keeps its callback alive."""
    if shard is None:
        if allreduce is not None:
            raise InvalidArgumentError(-1000, "allreduce is given without shard=(rank, size)")
        return None
    if devices is not None or split is not None:
        raise InvalidArgumentError(-1000, "give shard or devices/split, not both")
    try:
        rank, size = (int(v) for v in shard)
    except (TypeError, ValueError):
        raise InvalidArgumentError(-1000, f"shard must be (rank, size), not {shard!r}") from None
    if size > 1 and not callable(allreduce):
        raise InvalidArgumentError(-1000, f"shard ({rank}, {size}) needs an allreduce callable")

    def reduce(user: object, data: object, count: int) -> int:
        try:
            assert allreduce is not None
            allreduce(np.ctypeslib.as_array(data, shape=(count,)))
            return 0
        except BaseException as e:  # cannot cross C: the step fails, raised after the call
            failures.append(e)
            return 1

    fn = _lib.ALLREDUCE_FN(reduce) if size > 1 else _lib.ALLREDUCE_FN()
    return _lib.Shard(rank, size, fn, None)


class LM(_Model):
    """A causal language model: a Hugging Face folder (config.json, safetensors, tokenizer.json;
    GPT-2, Llama, Mistral, Qwen2) or a GGUF file (llama, qwen2, gpt2; its tokenizer inside).

    ``weights``: the linear layers' storage for a folder's (or a GGUF file's F32) weights,
    ``"f32"`` (default), ``"f16"``, ``"bf16"``, ``"q8_0"``, ``"q4_0"``, ``"q4_k"``, ``"q6_k"``;
    a GGUF file's quantized tensors keep their types. ``kv_cache``: ``"f32"`` or ``"f16"``.
    ``tokenizer``: a tokenizer.json to use instead of the model's own. ``devices`` (a list of
    device specs) splits the model by layers over one new context each, a pipeline whose stages
    pass the hidden state through the host; ``split`` gives their shares of the layers (default:
    each device's memory), as ``clf_lm_load_split``.

    Tensor parallel (``clf_lm_load_shard``): ``shard=(rank, size)`` loads part ``rank`` of
    ``size`` of every layer (its query and K/V heads, its FFN columns, its rows of the head), and
    ``allreduce(a)`` must replace the float32 array ``a`` in place by its sum over the group's
    shards (with mpi4py: ``lambda a: comm.Allreduce(MPI.IN_PLACE, a)``). Every shard then
    generates on the same prompts with the same parameters, and all of them get the same ids. An
    exception raised by ``allreduce`` stops the call and is raised from it.
    """

    _free = staticmethod(lib.clf_lm_free)
    _what = "the LM"

    def __init__(self, path: Union[str, os.PathLike], device: DeviceSpec = None,
                 weights: Optional[str] = None, kv_cache: str = "f32", *,
                 context: Optional[Context] = None,
                 tokenizer: Optional[Union[str, os.PathLike]] = None,
                 devices: Optional[Sequence[DeviceSpec]] = None,
                 split: Optional[Sequence[float]] = None,
                 shard: Optional[tuple[int, int]] = None,
                 allreduce: Optional[Callable[[np.ndarray], None]] = None):
        self._tok: Optional[_Tokenizer] = None
        self._failures: list[BaseException] = []  # raised by allreduce, inside a C call
        self._shard = _shard(shard, allreduce, devices, split, self._failures)
        self._attach(context, device, devices)
        params = _load_params(weights, kv_cache)
        if self._shard is not None:
            self._load(lib.clf_lm_load_shard, cstr(path), ctypes.byref(params),
                       ctypes.byref(self._shard))
        elif devices is None and split is None:
            self._load(lib.clf_lm_load_with, cstr(path), ctypes.byref(params))
        else:
            self._load_split(lib.clf_lm_load_split, split, cstr(path), ctypes.byref(params))
        path = os.fspath(path)
        try:
            if tokenizer is not None:
                self._tok = _Tokenizer(os.fspath(tokenizer), False)
            elif os.path.isdir(path):
                if os.path.exists(os.path.join(path, "tokenizer.json")):
                    self._tok = _Tokenizer(os.path.join(path, "tokenizer.json"), False)
            else:
                try:
                    self._tok = _Tokenizer(path, True)
                except NotFoundError:
                    pass  # a GGUF file without a tokenizer: ids only
            self.info = self._read_info()
        except BaseException:
            self.close()
            raise

    def _release(self) -> None:
        if self._tok is not None:
            self._tok.close()

    def _read_info(self) -> LMInfo:
        ctx = self.context
        with ctx._lock:
            h = self._h()
            i = _lib.LMInfo()
            ctx._check(lib.clf_lm_get_info(h, ctypes.byref(i)))
            n = ctypes.c_int64(0)
            ctx._check(lib.clf_lm_weights(h, None, 0, ctypes.byref(n)))
            ws = (_lib.LMWeight * max(n.value, 1))()
            ctx._check(lib.clf_lm_weights(h, ws, n.value, ctypes.byref(n)))
        return LMInfo(
            arch=i.arch.decode(), vocab_size=i.vocab_size, hidden_size=i.hidden_size,
            ffn_size=i.ffn_size, layers=i.layers, heads=i.heads, kv_heads=i.kv_heads,
            head_dim=i.head_dim, max_positions=i.max_positions,
            bos=None if i.bos < 0 else i.bos, eos=tuple(i.eos[:i.n_eos]),
            parameters=i.parameters, weight_dtype=DTYPE_NAMES[i.weight_dtype],
            cache_dtype=DTYPE_NAMES[i.cache_dtype],
            weights={w.name.decode(): DTYPE_NAMES[w.dtype] for w in ws[:n.value]})

    def _tokenizer(self) -> _Tokenizer:
        self._h()
        if self._tok is None:
            raise InvalidArgumentError(-1000, "this model has no tokenizer: give one with "
                                              "LM(..., tokenizer='tokenizer.json'), or use ids")
        return self._tok

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        """The token ids of text, as Hugging Face's tokenizer gives them (``add_special``: the
        model's template tokens too, e.g. Llama's bos)."""
        with self.context._lock:
            return self._tokenizer().encode(text, add_special)

    def detokenize(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """The text of token ids (special tokens left out unless ``skip_special`` is False)."""
        ids = [int(t) for t in ids]
        with self.context._lock:
            return self._tokenizer().decode(ids, skip_special)

    # -- generation
    def _params(self, max_new_tokens: int, temperature: float, top_k: int, top_p: float,
                repetition_penalty: float, seed: int, ignore_eos: bool) -> _lib.GenerateParams:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
                or max_new_tokens < 1:
            raise InvalidArgumentError(-1000, f"max_new_tokens must be a positive int, not "
                                              f"{max_new_tokens!r}")
        p = lib.clf_generate_default_params()
        p.max_new_tokens = max_new_tokens
        p.sampling.temperature = float(temperature)
        p.sampling.top_k = int(top_k)
        p.sampling.top_p = float(top_p)
        p.sampling.repetition_penalty = float(repetition_penalty)
        p.sampling.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        p.ignore_eos = 1 if ignore_eos else 0
        return p

    def _run(self, prompts: list[list[int]], params: _lib.GenerateParams,
             on_token: Optional[Callable[[int, int], bool]]) -> list[list[int]]:
        """clf_lm_generate over id prompts; on_token(seq, token) returning True stops seq."""
        if not prompts:
            raise InvalidArgumentError(-1000, "no prompts (an empty list)")
        for i, p in enumerate(prompts):
            if not p:
                raise InvalidArgumentError(-1000, f"prompt {i} has no tokens")
        n = len(prompts)
        arrays = [(ctypes.c_int32 * len(p))(*p) for p in prompts]
        ptrs = (ctypes.POINTER(ctypes.c_int32) * n)(
            *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int32)) for a in arrays])
        lens = (ctypes.c_int64 * n)(*[len(p) for p in prompts])
        m = params.max_new_tokens
        tokens = (ctypes.c_int32 * (n * m))()
        counts = (ctypes.c_int64 * n)()
        failures: list[BaseException] = []

        def cb(user: object, seq: int, token: int) -> int:
            try:
                return 1 if on_token is not None and on_token(seq, token) else 0
            except BaseException as e:  # cannot cross C: stop, raise after the call
                failures.append(e)
                return 1

        callback = _lib.TOKEN_FN(cb)
        params.on_token = callback
        with self.context._lock:
            self._failures.clear()
            try:
                self.context._check(lib.clf_lm_generate(self._h(), ptrs, lens, n,
                                                        ctypes.byref(params), tokens, counts))
            except Error as err:
                if self._failures:  # the shard's allreduce raised: that is the error
                    raise self._failures[0] from err
                raise
        if failures:
            raise failures[0]
        return [list(tokens[i * m:i * m + counts[i]]) for i in range(n)]

    def generate_ids(self, prompt_ids: Union[Sequence[int], Sequence[Sequence[int]]],
                     max_new_tokens: int = 32, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, repetition_penalty: float = 1.0, seed: int = 0,
                     ignore_eos: bool = False) -> Union[list[int], list[list[int]]]:
        """`generate` on token ids: the new ids of one prompt (a list of ints), or of each of
        several (a list of lists), generated as one batch. No tokenizer needed."""
        many = len(prompt_ids) > 0 and not isinstance(prompt_ids[0], (int, np.integer))
        prompts = [[int(t) for t in p] for p in prompt_ids] if many else \
            [[int(t) for t in prompt_ids]]
        params = self._params(max_new_tokens, temperature, top_k, top_p, repetition_penalty,
                              seed, ignore_eos)
        out = self._run(prompts, params, None)
        return out if many else out[0]

    def generate(self, prompt: Union[str, Sequence[str]], max_new_tokens: int = 32,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 repetition_penalty: float = 1.0, seed: int = 0,
                 stop: Optional[Union[str, Sequence[str]]] = None, stream: bool = False,
                 ignore_eos: bool = False) -> Union[str, list[str], Iterator[str]]:
        """Continues a prompt (a str: returns a str) or several at once (a list: returns a list,
        in one batch), as transformers' ``generate`` with ``do_sample`` when temperature > 0.

        Sampling (as Hugging Face orders it): ``repetition_penalty`` over the prompt and the
        new tokens, ``temperature`` (0: greedy), ``top_k`` (0: all), ``top_p`` (1: all), then a
        draw from ``seed``: the same seed gives the same text on any device. A sequence ends at
        the model's eos (unless ``ignore_eos``), after ``max_new_tokens``, or where its text
        reaches one of the ``stop`` strings, which is left out of the text.

        ``stream=True`` (one prompt) returns an iterator of text pieces as tokens arrive; they
        join to exactly the text ``stream=False`` returns. Leaving the loop early stops the
        generation at the next token.
        """
        many = not isinstance(prompt, str)
        prompts = list(prompt) if many else [prompt]
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        for s in stops:
            _utf8("stop", s)
        params = self._params(max_new_tokens, temperature, top_k, top_p, repetition_penalty,
                              seed, ignore_eos)
        with self.context._lock:
            tok = self._tokenizer()
            ids = [tok.encode(p, True) for p in prompts]
        if stream:
            if many:
                raise InvalidArgumentError(-1000, "stream=True takes one prompt (a str)")
            return self._stream(ids[0], params, stops)
        if not prompts:
            raise InvalidArgumentError(-1000, "no prompts (an empty list)")
        texts: list[list[str]] = [[] for _ in prompts]
        streams = [_StreamText(tok, stops) for _ in prompts]
        try:
            def on_token(seq: int, token: int) -> bool:
                texts[seq].append(streams[seq].push(token))
                return streams[seq].stopped

            self._run(ids, params, on_token)
            out = ["".join(t) + s.finish() for t, s in zip(texts, streams)]
        finally:
            for s in streams:
                s.close()
        return out if many else out[0]

    def _stream(self, ids: list[int], params: _lib.GenerateParams,
                stops: list[str]) -> Iterator[str]:
        tok = self._tokenizer()
        pieces: "queue.Queue[object]" = queue.Queue()
        cancel = threading.Event()
        done = object()

        def worker() -> None:
            st = _StreamText(tok, stops)
            try:
                def on_token(seq: int, token: int) -> bool:
                    piece = st.push(token)
                    if piece:
                        pieces.put(piece)
                    return st.stopped or cancel.is_set()

                self._run([ids], params, on_token)
                tail = st.finish()
                if tail:
                    pieces.put(tail)
                pieces.put(done)
            except BaseException as e:
                pieces.put(e)
            finally:
                st.close()

        thread = threading.Thread(target=worker, name="clformer-generate", daemon=True)
        thread.start()
        try:
            while True:
                item = pieces.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
        finally:
            cancel.set()
            thread.join()

    def __repr__(self) -> str:
        if self.closed:
            return "<clformer.LM closed>"
        i = self.info
        return (f"<clformer.LM {i.arch} {i.layers} layers, {i.hidden_size} wide, "
                f"{i.weight_dtype} weights>")


__all__ = ["SentenceModel", "LM", "LMInfo"]
