"""clformer: Transformer inference on any OpenCL device (AMD, Intel and NVIDIA GPUs, CPUs
through PoCL), from Python, on numpy.

    import clformer
    clformer.devices()                                  # what OpenCL offers
    model = clformer.SentenceModel("all-MiniLM-L6-v2")  # sentence-transformers' folder
    emb = model.encode(["A man is eating food.", "A man rides a horse."])
    lm = clformer.LM("Qwen2-0.5B-Instruct.Q8_0.gguf")   # or a Hugging Face folder
    print(lm.generate("The capital of France is", max_new_tokens=16))
    for piece in lm.generate("Once upon a time", stream=True):
        print(piece, end="", flush=True)

The binding is thin: ctypes over the C library's public API, which the package carries.
"""

from . import ops
from ._core import Context, Device, Tensor, default_context, devices
from ._lib import DTYPES as _DTYPES
from .errors import (
    CLBlastError,
    ClosedError,
    Error,
    FileError,
    FormatError,
    InternalError,
    InvalidArgumentError,
    BuildFailedError,
    NoDeviceError,
    NotFoundError,
    OpenCLError,
    OutOfMemoryError,
    OutOfRangeError,
    ShapeMismatchError,
    SizeLimitError,
    UnsupportedError,
)
from .models import LM, LMInfo, SentenceModel

__version__ = "0.1.0"

#: The storage types weights may take ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K").
WEIGHT_TYPES = tuple(k for k in _DTYPES if k != "I32")

__all__ = [
    "devices", "Device", "Context", "default_context", "Tensor", "ops", "SentenceModel", "LM",
    "LMInfo", "WEIGHT_TYPES", "Error", "OpenCLError", "InvalidArgumentError",
    "ShapeMismatchError", "UnsupportedError", "OutOfMemoryError", "BuildFailedError",
    "FileError", "FormatError", "NoDeviceError", "SizeLimitError", "CLBlastError",
    "OutOfRangeError", "InternalError", "NotFoundError", "ClosedError",
]
