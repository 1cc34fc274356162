"""Finding and loading libsglattn, its function prototypes, and the layout
check against the loaded library.

Where the library is looked for, in order (the first that loads wins):
  1. SGLATTN_LIB: a path to the library file (or a directory holding
     libsglattn.so.1).  When set, nothing else is tried.
  2. beside the package, where `make install` put both (the relative path
     is recorded in sglattn/_install.py at install time);
  3. a source checkout's build tree, for PYTHONPATH=python in the repository
     (<repo>/build/lib/libsglattn.so.1);
  4. pkg-config (`pkg-config --variable=libdir sglattn`);
  5. the system loader (libsglattn.so.1 on the default search path).
The error when none loads lists each place and why it failed.
"""
from __future__ import annotations

import ctypes as C
import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Tuple

from . import _abi as A
from .errors import AbiError, LibraryNotFoundError

SONAME = "libsglattn.so.1"


def _try_load(path: str) -> Tuple[Optional[C.CDLL], str]:
    try:
        return C.CDLL(path, mode=C.RTLD_LOCAL), ""
    except OSError as e:
        return None, str(e)


def _as_file(path: str) -> str:
    return os.path.join(path, SONAME) if os.path.isdir(path) else path


def candidates(env: Optional[Dict[str, str]] = None, here: Optional[str] = None) -> List[Tuple[str, Optional[str]]]:
    """(where, path) in search order; path None means 'ask the system loader'."""
    env = dict(os.environ) if env is None else env
    here = os.path.dirname(os.path.abspath(__file__)) if here is None else here
    out: List[Tuple[str, Optional[str]]] = []
    if env.get("SGLATTN_LIB"):
        return [("SGLATTN_LIB", _as_file(env["SGLATTN_LIB"]))]
    try:
        from . import _install  # type: ignore[attr-defined]  # written by `make install`
        out.append(("installed beside the package", os.path.normpath(
            os.path.join(here, _install.LIBDIR_FROM_PACKAGE, SONAME))))
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(repo, "host", "sgl_attn.h")):
        out.append(("the source checkout's build tree", os.path.join(repo, "build", "lib", SONAME)))
    out.append(("pkg-config", None if shutil.which("pkg-config") else ""))
    out.append(("the system loader", None))
    return out


def _pkg_config_libdir(env: Dict[str, str]) -> Tuple[Optional[str], str]:
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "sglattn"], capture_output=True, text=True,
                           timeout=10, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    if r.returncode != 0 or not r.stdout.strip():
        return None, (r.stderr.strip() or "no sglattn.pc on the pkg-config search path").splitlines()[0]
    return r.stdout.strip(), ""


def find_library(env: Optional[Dict[str, str]] = None, here: Optional[str] = None) -> Tuple[C.CDLL, str]:
    """Load libsglattn; returns (library, path or where it came from)."""
    env = dict(os.environ) if env is None else env
    tried: List[str] = []
    for where, path in candidates(env, here):
        if where == "pkg-config":
            if path == "":
                tried.append("pkg-config: not installed")
                continue
            libdir, why = _pkg_config_libdir(env)
            if libdir is None:
                tried.append(f"pkg-config: {why}")
                continue
            path = os.path.join(libdir, SONAME)
        if path is None:  # the system loader
            lib, why = _try_load(SONAME)
            if lib is not None:
                return lib, SONAME
            tried.append(f"the system loader: {why}")
            continue
        if not os.path.exists(path):
            tried.append(f"{where}: {path}: no such file")
            continue
        lib, why = _try_load(path)
        if lib is not None:
            return lib, path
        tried.append(f"{where}: {why}")
    raise LibraryNotFoundError("libsglattn not found; tried, in order:\n  " + "\n  ".join(tried) +
                               "\nset SGLATTN_LIB to the library file (e.g. build/lib/libsglattn.so.1)")


def read_layout(lib: C.CDLL, where: str) -> Dict[str, Any]:
    try:
        fn = lib.sgl_attn_layout_json
    except AttributeError:
        raise AbiError(f"{where} does not export sgl_attn_layout_json: it predates the Python package; "
                       f"rebuild it", "layout check") from None
    fn.argtypes = [C.c_char_p, C.c_size_t]
    fn.restype = C.c_size_t
    n = fn(None, 0)
    buf = C.create_string_buffer(n + 1)
    fn(buf, n + 1)
    layout: Dict[str, Any] = json.loads(buf.value.decode())
    return layout


def _proto(lib: C.CDLL, name: str, res: Any, *args: Any) -> Any:
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


class Lib:
    """The loaded library with typed entry points, its path and layout."""

    def __init__(self, lib: C.CDLL, path: str, layout: Dict[str, Any]) -> None:
        self.cdll = lib
        self.path = path
        self.layout = layout
        self.version: str = layout.get("version", "?")
        self.abi: Tuple[int, int] = tuple(layout.get("abi", (0, 0)))  # type: ignore[assignment]
        self.struct_sizes: Dict[str, int] = {k: int(v["size"]) for k, v in layout.get("structs", {}).items()}
        vp, cp, sz, i, i32 = C.c_void_p, C.c_char_p, C.c_size_t, C.c_int, C.c_int32
        P = C.POINTER
        self.host_open = _proto(lib, "sgl_attn_host_open", i, vp, P(vp), cp, sz)
        self.host_close = _proto(lib, "sgl_attn_host_close", None, vp)
        self.plugin_status_name = _proto(lib, "sgl_attn_plugin_status_name", cp, i)
        self.platform_name = _proto(lib, "sgl_attn_platform_name", cp, i)
        self.hybrid_kind_name = _proto(lib, "sgl_attn_hybrid_kind_name", cp, i)
        self.status_name = _proto(lib, "sgl_attn_status_name", cp, i)
        self.plugin_count = _proto(lib, "sgl_attn_host_plugin_count", sz, vp)
        self.plugin_info = _proto(lib, "sgl_attn_host_plugin_info", i, vp, sz, vp)
        self.plugin_caps = _proto(lib, "sgl_attn_host_plugin_caps", i, vp, sz, C.c_uint32, vp)
        self.find_plugin = _proto(lib, "sgl_attn_host_find_plugin", C.c_long, vp, cp)
        self.device_ops = _proto(lib, "sgl_attn_host_device_ops", P(A.sgl_attn_device_ops), vp, sz)
        self.search_path_count = _proto(lib, "sgl_attn_host_search_path_count", sz, vp)
        self.search_path = _proto(lib, "sgl_attn_host_search_path", i, vp, sz, P(cp), P(cp), P(cp))
        self.conf_path = _proto(lib, "sgl_attn_host_conf_path", cp, vp)
        self.plugin_reason = _proto(lib, "sgl_attn_host_plugin_reason", cp, vp, sz)
        self.plugin_note_count = _proto(lib, "sgl_attn_host_plugin_note_count", sz, vp, sz)
        self.plugin_note = _proto(lib, "sgl_attn_host_plugin_note", cp, vp, sz, sz)
        self.caps_file = _proto(lib, "sgl_attn_host_caps_file", cp, vp)
        self.model_from_file = _proto(lib, "sgl_attn_model_from_file", i, cp, i, vp, cp, sz)
        self.model_from_json = _proto(lib, "sgl_attn_model_from_json", i, cp, sz, cp, i, vp, cp, sz)
        self.model_init = _proto(lib, "sgl_attn_model_init", None, vp)
        self.select = _proto(lib, "sgl_attn_select", i, vp, vp, vp, P(vp), cp, sz)
        self.selection_free = _proto(lib, "sgl_attn_selection_free", None, vp)
        self.sel_stack_depth = _proto(lib, "sgl_attn_selection_stack_depth", sz, vp)
        self.sel_stack_name = _proto(lib, "sgl_attn_selection_stack_name", cp, vp, sz)
        self.sel_prefill_depth = _proto(lib, "sgl_attn_selection_prefill_depth", sz, vp)
        self.sel_prefill_name = _proto(lib, "sgl_attn_selection_prefill_name", cp, vp, sz)
        self.sel_is_split = _proto(lib, "sgl_attn_selection_is_split", i, vp)
        self.sel_label = _proto(lib, "sgl_attn_selection_label", cp, vp)
        self.sel_verdict_count = _proto(lib, "sgl_attn_selection_verdict_count", sz, vp)
        self.sel_verdict = _proto(lib, "sgl_attn_selection_verdict", P(A.sgl_attn_verdict), vp, sz)
        self.sel_warning_count = _proto(lib, "sgl_attn_selection_warning_count", sz, vp)
        self.sel_warning = _proto(lib, "sgl_attn_selection_warning", cp, vp, sz)
        self.sel_verdict_message = _proto(lib, "sgl_attn_selection_verdict_message", cp, vp, sz)
        self.sel_cpu_fallback = _proto(lib, "sgl_attn_selection_cpu_fallback", i, vp)
        self.sel_full_layers = _proto(lib, "sgl_attn_selection_full_layers", sz, vp, P(i32), sz)
        self.sel_state_bytes = _proto(lib, "sgl_attn_selection_state_bytes", C.c_uint64, vp)
        self.sel_device = _proto(lib, "sgl_attn_selection_device", i32, vp)
        self.create = _proto(lib, "sgl_attn_create", i, vp, vp, vp, vp, P(vp), cp, sz)
        self.create_stack = _proto(lib, "sgl_attn_create_stack", i, vp, P(cp), sz, i32, vp, vp, P(vp), cp, sz)
        self.destroy = _proto(lib, "sgl_attn_destroy", None, vp)
        self.last_error = _proto(lib, "sgl_attn_last_error", cp, vp)
        self.struct_size = _proto(lib, "sgl_attn_struct_size", sz, cp)
        # The forward path: fresh function objects with no argtypes, called
        # with ctypes objects (c_void_p, byref) so ctypes converts nothing.
        self.fwd_metadata = lib["sgl_attn_init_forward_metadata"]
        self.fwd_extend = lib["sgl_attn_forward_extend"]
        self.fwd_decode = lib["sgl_attn_forward_decode"]
        for f in (self.fwd_metadata, self.fwd_extend, self.fwd_decode):
            f.restype = C.c_int

    def new(self, cls: Any) -> Any:
        """A zeroed instance of a mirror, in a buffer of the library's size
        when that is larger (a newer library appended fields), with
        struct_size set to the mirror's size when it has one."""
        lib_size = self.struct_sizes.get(cls.__name__, 0)
        if lib_size > C.sizeof(cls):
            buf = C.create_string_buffer(lib_size)
            obj = cls.from_buffer(buf)
            obj._sglattn_buf = buf
        else:
            obj = cls()
        if cls._fields_[0][0] == "struct_size":
            obj.struct_size = C.sizeof(cls)
        return obj


_LIB: Optional[Lib] = None


def load() -> Lib:
    """The library, loaded and layout-checked once per process."""
    global _LIB
    if _LIB is None:
        cdll, path = find_library()
        layout = read_layout(cdll, path)
        A.check_layout(layout, where=f"libsglattn at {path}")
        _LIB = Lib(cdll, path, layout)
    return _LIB
