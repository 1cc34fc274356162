"""sglattn: libsglattn from Python.

    import sglattn
    host = sglattn.Host()
    for p in host.plugins():
        print(p.name, p.status, p.reason)
    sel = host.select("path/to/model")          # or a config dict, or a config.json
    print(sel.stack, sel.explain())
    backend = sel.create(max_reqs=64, max_tokens=4096, max_context=4096)

Pure Python over ctypes; importing it loads libsglattn and checks every
struct mirror against the library's own layout (docs/python.md).
Engine adapters: sglattn.sglang (an sglang attention backend) and
sglattn.transformers (the `paged|sglattn` attention function).
"""
from __future__ import annotations

from ._lib import load as _load
from .errors import (AbiError, DeviceError, Error, InternalError, InvalidArgumentError, LibraryNotFoundError,
                     NotFoundError, OutOfMemoryError, StateError, UnsupportedError)

_LIB = _load()  # finds the library and checks the layout: a mismatch fails here

from .backend import MODES, Backend, Batch, DualChunk, Layer, LinearInputs  # noqa: E402
from .host import Device, Host, Model, Plugin, Selection, Verdict  # noqa: E402

__version__ = "0.1.0"
library_path: str = _LIB.path
library_version: str = _LIB.version
abi_version = _LIB.abi

__all__ = [
    "Host", "Plugin", "Device", "Model", "Selection", "Verdict", "Backend", "Batch", "DualChunk", "Layer",
    "LinearInputs", "MODES", "Error", "InvalidArgumentError", "UnsupportedError", "OutOfMemoryError",
    "DeviceError", "AbiError", "NotFoundError", "StateError", "InternalError", "LibraryNotFoundError",
    "library_path", "library_version", "abi_version", "__version__",
]
