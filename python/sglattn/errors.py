"""Exceptions: one class per sgl_attn_status, each carrying the library's or
the plugin's own message (the backend's last_error, the host's err buffer)."""
from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "Error", "InvalidArgumentError", "UnsupportedError", "OutOfMemoryError", "DeviceError",
    "AbiError", "NotFoundError", "StateError", "InternalError", "LibraryNotFoundError",
    "error_for_status",
]


class Error(Exception):
    """Base of every error the library reports.  `status` is the
    sgl_attn_status code, `status_name` its short name ("invalid"...),
    `message` the text as the library or plugin wrote it."""

    status: int = 0
    status_name: str = "error"

    def __init__(self, message: str, call: Optional[str] = None) -> None:
        self.message = message
        self.call = call
        # plugins often begin their message with the call's name already
        text = f"{call}: {message}" if call and not message.startswith(call + ":") else message
        super().__init__(f"{text} [{self.status_name}]")


class InvalidArgumentError(Error, ValueError):
    """SGL_ATTN_E_INVALID: a bad argument (shape, dtype, index, length)."""
    status = -1
    status_name = "invalid"


class UnsupportedError(Error):
    """SGL_ATTN_E_UNSUPPORTED: a valid request this backend does not serve."""
    status = -2
    status_name = "unsupported"


class OutOfMemoryError(Error, MemoryError):
    """SGL_ATTN_E_NOMEM."""
    status = -3
    status_name = "nomem"


class DeviceError(Error):
    """SGL_ATTN_E_DEVICE: the device runtime failed."""
    status = -4
    status_name = "device"


class AbiError(Error):
    """SGL_ATTN_E_ABI: versions or struct layouts do not match."""
    status = -5
    status_name = "abi"


class NotFoundError(Error, LookupError):
    """SGL_ATTN_E_NOT_FOUND: no such device, plugin or name."""
    status = -6
    status_name = "not_found"


class StateError(Error):
    """SGL_ATTN_E_STATE: a call out of order (a forward before its metadata)."""
    status = -7
    status_name = "state"


class InternalError(Error):
    """SGL_ATTN_E_INTERNAL, and any status the package does not know."""
    status = -8
    status_name = "internal"


class LibraryNotFoundError(ImportError):
    """libsglattn could not be loaded; the message lists every place tried."""


_BY_STATUS: Dict[int, Type[Error]] = {
    c.status: c for c in (InvalidArgumentError, UnsupportedError, OutOfMemoryError, DeviceError,
                          AbiError, NotFoundError, StateError, InternalError)
}


def error_for_status(status: int, message: str, call: Optional[str] = None) -> Error:
    """The exception for a non-OK status (an unknown code becomes InternalError
    with the code in the message)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        return InternalError(f"{message} (unknown status {status})", call)
    return cls(message, call)
