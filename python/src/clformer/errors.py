"""clformer.Error and its subclasses, one per status code of the C library."""

from __future__ import annotations


class Error(Exception):
    """A call into clformer failed. ``status`` is the C library's code (``clf_status``: OpenCL's
    own codes -1 .. -999, clformer's from -1000), ``message`` its explanation."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class OpenCLError(Error):
    """The OpenCL implementation reported an error (the status is its CL_* code)."""


class InvalidArgumentError(Error, ValueError):
    """A NULL, an unknown name, a bad value (CLF_ERROR_INVALID_ARGUMENT)."""


class ShapeMismatchError(Error, ValueError):
    """Shapes that do not fit together (CLF_ERROR_SHAPE_MISMATCH)."""


class UnsupportedError(Error):
    """A type, model or feature this device or clformer does not support (CLF_ERROR_UNSUPPORTED)."""


class OutOfMemoryError(Error, MemoryError):
    """Host memory ran out (CLF_ERROR_OUT_OF_MEMORY)."""


class BuildFailedError(Error):
    """A kernel did not compile; the message holds the build log (CLF_ERROR_BUILD_FAILED)."""


class FileError(Error, OSError):
    """A file could not be read or written (CLF_ERROR_IO)."""


class FormatError(Error):
    """A corrupt or malformed file (CLF_ERROR_BAD_FORMAT)."""


class NoDeviceError(Error):
    """No OpenCL device, or none matches the spec (CLF_ERROR_NO_DEVICE)."""


class SizeLimitError(Error):
    """A size over a device limit (CLF_ERROR_SIZE_LIMIT)."""


class CLBlastError(Error):
    """CLBlast reported an error (CLF_ERROR_CLBLAST)."""


class OutOfRangeError(Error, IndexError):
    """A token id or position out of range (CLF_ERROR_OUT_OF_RANGE)."""


class InternalError(Error):
    """A bug in clformer (CLF_ERROR_INTERNAL): please report it."""


class NotFoundError(Error, KeyError):
    """A key or name that is not there (CLF_ERROR_NOT_FOUND)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ClosedError(Error):
    """A model, context or tensor used after close()."""

    def __init__(self, what: str):
        super().__init__(-1000, f"{what} is closed")


_BY_STATUS = {
    -1000: InvalidArgumentError,
    -1001: ShapeMismatchError,
    -1002: UnsupportedError,
    -1003: OutOfMemoryError,
    -1004: BuildFailedError,
    -1005: FileError,
    -1006: FormatError,
    -1007: NoDeviceError,
    -1008: SizeLimitError,
    -1009: CLBlastError,
    -1010: OutOfRangeError,
    -1011: InternalError,
    -1012: NotFoundError,
}


def _error_for(status: int) -> type[Error]:
    if -999 <= status <= -1:
        return OpenCLError
    return _BY_STATUS.get(status, Error)


__all__ = [name for name, v in dict(globals()).items()
           if isinstance(v, type) and issubclass(v, Error)]
