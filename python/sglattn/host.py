"""The host: plugins, models, selection (host/sgl_attn.h's open, enumerate,
model, select and create, as Python objects)."""
from __future__ import annotations

import ctypes as C
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _abi as A
from ._lib import Lib, load
from .errors import Error, InvalidArgumentError, NotFoundError, error_for_status

__all__ = ["Host", "Plugin", "Device", "Model", "Selection", "Verdict", "dtype_bit", "dtype_names"]

_ERR = 4096

_DTYPE_NAMES = ["f32", "f16", "bf16", "f64", "fp8_e4m3", "fp8_e5m2"]
_KIND_NAMES = ["mha", "gqa", "mqa", "mla", "cross"]
_DSA_NAMES = ["sparse_mla", "indexer", "kv_fp8_record"]  # caps.dsa_ops (DeepSeek sparse attention)
_FEATURE_NAMES = ["extend", "decode", "sliding_window", "softcap", "sinks", "graph_capture", "spec_decode",
                  "mla_extend", "diff_head_dims",
                  # ABI 1.2
                  "tree_mask", "draft_extend", "ragged", "lse", "page_table", "slot_map", "caller_state", "attn_types", "encoder_loc", "fp8_scales", "mla_rope_split", "graph_device_plan", "graph_verify", "strided_qkv",
                  "dual_chunk"]
_DTYPE_ALIASES = {
    "f32": A.SGL_ATTN_DT_F32, "float32": A.SGL_ATTN_DT_F32, "fp32": A.SGL_ATTN_DT_F32, "float": A.SGL_ATTN_DT_F32,
    "f16": A.SGL_ATTN_DT_F16, "float16": A.SGL_ATTN_DT_F16, "fp16": A.SGL_ATTN_DT_F16, "half": A.SGL_ATTN_DT_F16,
    "bf16": A.SGL_ATTN_DT_BF16, "bfloat16": A.SGL_ATTN_DT_BF16,
    "f64": A.SGL_ATTN_DT_F64, "float64": A.SGL_ATTN_DT_F64, "double": A.SGL_ATTN_DT_F64,
    "fp8_e4m3": A.SGL_ATTN_DT_FP8_E4M3, "float8_e4m3fn": A.SGL_ATTN_DT_FP8_E4M3, "fp8": A.SGL_ATTN_DT_FP8_E4M3,
}


def _bits(value: int, names: Sequence[str]) -> List[str]:
    return [n for i, n in enumerate(names) if value & (1 << i)]


def dtype_names(bits: int) -> List[str]:
    """SGL_ATTN_DT_* bit set -> ["f16", "bf16", ...]."""
    return _bits(bits, _DTYPE_NAMES)


def dtype_bit(dtype: Any) -> int:
    """SGL_ATTN_DT_* bit of a dtype given as a name ("bf16", "float16"), a
    torch dtype, or a bit already."""
    if isinstance(dtype, int):
        return dtype
    name = str(dtype).rsplit(".", 1)[-1].lower()
    if name not in _DTYPE_ALIASES:
        raise InvalidArgumentError(f"dtype {dtype!r}: expected one of {', '.join(sorted(_DTYPE_ALIASES))}")
    return _DTYPE_ALIASES[name]


def _s(b: bytes) -> str:
    return b.decode("utf-8", "replace")


# --------------------------------------------------------------- plugins
def _opt(s: str) -> Optional[str]:
    """None for an empty string: what attnctl's JSON writes as null."""
    return s or None


def _limit(v: int) -> Optional[int]:
    """A caps limit: 0 or INT32_MAX and above mean no limit (null)."""
    return v if 0 < v < 2**31 - 1 else None


@dataclass
class Device:
    """One probed device of a plugin (`attnctl list-plugins --json` "devices":
    None where the probe left a field unset)."""
    index: int
    available: bool
    reason: Optional[str]
    name: Optional[str]
    arch: Optional[str]
    arch_major: Optional[int]
    arch_minor: Optional[int]
    arch_min: Optional[List[Optional[int]]]
    arch_max: Optional[List[Optional[int]]]
    memory_bytes: Optional[int]
    compute_units: Optional[int]
    score: int
    attn_kinds: List[str]
    q_dtypes: List[str]
    kv_dtypes: List[str]
    state_dtypes: List[str]
    features: List[str]
    head_dims: Optional[List[List[int]]]
    head_dim_qk_max: Optional[int]
    head_dim_v_max: Optional[int]
    page_sizes: Optional[List[int]]
    page_size_max: Optional[int]
    max_gqa_ratio: Optional[int]
    # caps.dsa_ops by name; not part of attnctl's JSON, so Plugin.to_dict leaves it out
    dsa_ops: List[str] = field(default_factory=list)

    @staticmethod
    def _pair(major: int, minor: int) -> Optional[List[Optional[int]]]:
        if major < 0 and minor < 0:
            return None
        return [major if major >= 0 else None, minor if minor >= 0 else None]

    @classmethod
    def _from_caps(cls, c: A.sgl_attn_caps, index: int) -> "Device":
        reason = _s(c.reason_long) or _s(c.reason)
        return cls(index=index, available=bool(c.available), reason=_opt(reason), name=_opt(_s(c.device_name)),
                   arch=_opt(_s(c.arch_name)), arch_major=c.arch_major if c.arch_major >= 0 else None,
                   arch_minor=c.arch_minor if c.arch_minor >= 0 else None,
                   arch_min=cls._pair(c.arch_min_major, c.arch_min_minor),
                   arch_max=cls._pair(c.arch_max_major, c.arch_max_minor),
                   memory_bytes=c.memory_bytes or None, compute_units=c.compute_units or None, score=c.score,
                   attn_kinds=_bits(c.attn_kinds, _KIND_NAMES), q_dtypes=dtype_names(c.q_dtypes),
                   kv_dtypes=dtype_names(c.kv_dtypes), state_dtypes=dtype_names(c.state_dtypes),
                   features=_bits(c.features, _FEATURE_NAMES),
                   head_dims=[[c.head_dims[i].qk, c.head_dims[i].v] for i in range(min(c.n_head_dims, 16))] or None,
                   head_dim_qk_max=_limit(c.head_dim_qk_max), head_dim_v_max=_limit(c.head_dim_v_max),
                   page_sizes=[c.page_sizes[i] for i in range(min(c.n_page_sizes, 16))] or None,
                   page_size_max=_limit(c.page_size_max), max_gqa_ratio=_limit(c.max_gqa_ratio),
                   dsa_ops=_bits(c.dsa_ops, _DSA_NAMES))


@dataclass
class Plugin:
    """One plugin file the host found, failures included: the fields of
    `attnctl list-plugins --json` "plugins" (to_dict() gives exactly that
    object; None is its null)."""
    name: Optional[str]
    version: Optional[str]
    description: Optional[str]
    license: Optional[str]
    path: str
    source: str
    platform: Optional[str]
    role: Optional[str]          # "full", "hybrid" or "layer"
    hybrid_kind: Optional[str]   # hybrid wrappers: "gdn", "mamba2"... or the custom kind
    status: str
    reason: Optional[str]        # whole: a probe's long reason too
    abi: Optional[str]
    aliases: List[str]
    model_types: List[str]
    notes: List[str] = field(default_factory=list)  # name claims the host flagged
    devices: List[Device] = field(default_factory=list)
    index: int = field(default=-1, repr=False, compare=False)

    @property
    def usable(self) -> bool:
        return self.status == "usable"

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d.pop("index")
        for dev in d["devices"]:
            dev.pop("dsa_ops")  # not in attnctl's JSON
        return d


# ---------------------------------------------------------------- models
ModelLike = Union["Model", Dict[str, Any], str, "os.PathLike[str]", Any]


class Model:
    """sgl_attn_model: a model as the host understood it, from a Hugging Face
    config (a dict, a config.json path, a model directory, or a transformers
    PretrainedConfig) or our own model JSON.  Fields read and write through
    to the struct (`m.page_size = 16`); head counts are per tensor-parallel
    rank."""

    def __init__(self, struct: Any, origin: str = "") -> None:
        object.__setattr__(self, "_m", struct)
        object.__setattr__(self, "origin", origin)

    @classmethod
    def load(cls, model: ModelLike, tp_size: int = 1, **overrides: Any) -> "Model":
        if isinstance(model, Model):
            m = model.copy()
        else:
            lib = load()
            st = lib.new(A.sgl_attn_model)
            err = C.create_string_buffer(_ERR)
            if isinstance(model, (str, os.PathLike)):
                path = os.fspath(model)
                if os.path.isdir(path):
                    path = os.path.join(path, "config.json")
                rc = lib.model_from_file(path.encode(), tp_size, C.byref(st), err, _ERR)
                origin = path
            else:
                if not isinstance(model, dict):
                    to_dict = getattr(model, "to_dict", None)
                    if to_dict is None:
                        raise TypeError(f"model: expected a config dict, a config.json path, a model directory, "
                                        f"a PretrainedConfig or a Model, not {type(model).__name__}")
                    model = to_dict()
                text = json.dumps(model, default=str).encode()
                origin = str(model.get("_name_or_path") or model.get("model_type") or "<dict>")
                rc = lib.model_from_json(text, len(text), origin.encode(), tp_size, C.byref(st), err, _ERR)
            if rc:
                raise error_for_status(rc, _s(err.value), "model")
            m = cls(st, origin)
        for k, v in overrides.items():
            setattr(m, k, v)
        return m

    @classmethod
    def plain(cls, num_q_heads: int, num_kv_heads: int, head_dim: int, num_layers: int = 1,
              dtype: Any = "bf16", kv_dtype: Any = None, **overrides: Any) -> "Model":
        """A full-attention model with no file (sgl_attn_model_init)."""
        lib = load()
        st = lib.new(A.sgl_attn_model)
        lib.model_init(C.byref(st))
        m = cls(st, "<plain>")
        m.num_layers, m.num_q_heads, m.num_kv_heads = num_layers, num_q_heads, num_kv_heads
        m.head_dim_qk = m.head_dim_v = head_dim
        m.dtype = dtype
        m.kv_dtype = dtype if kv_dtype is None else kv_dtype
        m.set_full_attention_layers(range(num_layers))
        for k, v in overrides.items():
            setattr(m, k, v)
        return m

    def copy(self) -> "Model":
        lib = load()
        st = lib.new(A.sgl_attn_model)
        C.memmove(C.addressof(st), C.addressof(self._m), lib.struct_sizes.get("sgl_attn_model", C.sizeof(st)))
        return Model(st, self.origin)

    @property
    def struct(self) -> Any:
        return self._m

    def __getattr__(self, name: str) -> Any:
        m = object.__getattribute__(self, "_m")
        if name in ("dtype", "kv_dtype", "lin_state_dtype"):
            names = dtype_names(getattr(m, name))
            return names[0] if names else ""
        if name in ("name", "model_type", "hybrid_custom_kind"):
            return _s(getattr(m, name))
        if any(name == f[0] for f in A.sgl_attn_model._fields_):
            return getattr(m, name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        m = self._m
        if name in ("dtype", "kv_dtype", "lin_state_dtype"):
            value = dtype_bit(value)
        elif name in ("name", "model_type", "hybrid_custom_kind"):
            value = str(value).encode()
        elif not any(name == f[0] for f in A.sgl_attn_model._fields_):
            raise AttributeError(f"sgl_attn_model has no field {name!r}")
        setattr(m, name, value)

    @property
    def full_attention_layers(self) -> List[int]:
        mask = self._m.full_attention_mask
        return [i for i in range(min(self._m.num_layers, A.SGL_ATTN_MAX_LAYERS)) if mask[i >> 6] >> (i & 63) & 1]

    def set_full_attention_layers(self, layers: Any) -> None:
        mask = self._m.full_attention_mask
        for w in range(len(mask)):
            mask[w] = 0
        for i in layers:
            if not 0 <= i < A.SGL_ATTN_MAX_LAYERS:
                raise InvalidArgumentError(f"layer {i}: expected 0..{A.SGL_ATTN_MAX_LAYERS - 1}")
            mask[i >> 6] |= 1 << (i & 63)

    @property
    def hybrid_kind_name(self) -> str:
        return _s(load().hybrid_kind_name(self._m.hybrid_kind))

    @property
    def is_hybrid(self) -> bool:
        return bool(self._m.hybrid_kind != A.SGL_ATTN_HYBRID_NONE)

    def as_full_attention_only(self) -> "Model":
        """A copy without the hybrid part: the layers this model computes with
        full attention, served by a plain full-attention stack (what an engine
        that runs the linear layers itself asks for)."""
        m = self.copy()
        full = self.full_attention_layers
        m.hybrid_kind = A.SGL_ATTN_HYBRID_NONE
        m.hybrid_custom_kind = ""
        m.set_full_attention_layers(range(self.num_layers))
        object.__setattr__(m, "full_layers_of_source", full)
        return m

    def __repr__(self) -> str:
        m = self._m
        return (f"Model({self.name or self.model_type!r}, layers={m.num_layers}, heads={m.num_q_heads}/"
                f"{m.num_kv_heads}, head_dim={m.head_dim_qk}/{m.head_dim_v}, dtype={self.dtype}"
                f"{', hybrid ' + self.hybrid_kind_name if self.is_hybrid else ''})")


# ------------------------------------------------------------- selection
@dataclass
class Verdict:
    """One candidate selection looked at, with the rule that took or refused it."""
    stage: str
    plugin: str
    device: int
    taken: bool
    score: int
    rule: str
    message: str


class Selection:
    """The outcome of Host.select: the stack (names outermost first), its
    verdicts, and create()."""

    def __init__(self, host: "Host", ptr: C.c_void_p, model: Model, ok: bool, error: str) -> None:
        lib = host._lib
        self._host = host
        self._ptr = ptr
        self.model = model
        self.ok = ok
        self.error = error
        p = ptr
        self.stack: List[str] = [_s(lib.sel_stack_name(p, i)) for i in range(lib.sel_stack_depth(p))]
        self.prefill_stack: List[str] = [_s(lib.sel_prefill_name(p, i)) for i in range(lib.sel_prefill_depth(p))]
        self.split = bool(lib.sel_is_split(p))
        self.label = _s(lib.sel_label(p) or b"")
        self.device = int(lib.sel_device(p))
        self.state_bytes_per_request = int(lib.sel_state_bytes(p))
        self.warnings = [_s(lib.sel_warning(p, i)) for i in range(lib.sel_warning_count(p))]
        ids = (C.c_int32 * A.SGL_ATTN_MAX_LAYERS)()
        n = lib.sel_full_layers(p, ids, A.SGL_ATTN_MAX_LAYERS)
        self.full_attention_layers = [ids[i] for i in range(min(n, A.SGL_ATTN_MAX_LAYERS))]
        self.verdicts: List[Verdict] = []
        for i in range(lib.sel_verdict_count(p)):
            v = lib.sel_verdict(p, i).contents
            self.verdicts.append(Verdict(stage=_s(v.stage), plugin=_s(v.plugin), device=v.device,
                                         taken=bool(v.taken), score=v.score, rule=_s(v.rule),
                                         message=_s(lib.sel_verdict_message(p, i) or v.message)))
        self.cpu_fallback = bool(lib.sel_cpu_fallback(p))

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        p = getattr(self, "_ptr", None)
        if p:
            self._host._lib.selection_free(p)
            self._ptr = None  # type: ignore[assignment]

    def explain(self) -> str:
        """Every candidate with the rule that took or refused it, as
        `attnctl select --explain` prints them."""
        m = self.model
        lines = []
        if self.ok:
            lines.append(self.label)
        lines.append(f"model: {m.name} ({m.model_type or 'no model_type'}), {m.num_layers} layers, "
                     f"{m.num_q_heads} q / {m.num_kv_heads} kv heads per rank, head dims "
                     f"{m.head_dim_qk}/{m.head_dim_v}{', MLA' if m.is_mla else ''}"
                     f"{', encoder-decoder' if m.is_encoder_decoder else ''}"
                     f"{', hybrid ' + m.hybrid_kind_name if m.is_hybrid else ''}")
        if self.stack:
            lines.append(f"full-attention layers ({len(self.full_attention_layers)}): "
                         + " ".join(str(i) for i in self.full_attention_layers))
            lines.append(f"state bytes per request: {self.state_bytes_per_request}")
            lines.append(f"device: {self.device}")
        lines += [f"warning: {w}" for w in self.warnings]
        wp = max([6] + [len(v.plugin) for v in self.verdicts])
        wr = max([4] + [len(v.rule) for v in self.verdicts])
        lines.append("candidates, in order:")
        lines.append(f"  {'STAGE':<7} {'PLUGIN':<{wp}} {'DEV':>3} {'SCORE':>6}  {'TAKEN':<5} {'RULE':<{wr}} WHY")
        for v in self.verdicts:
            lines.append(f"  {v.stage:<7} {v.plugin:<{wp}} {v.device:>3} {v.score:>6}  "
                         f"{'yes' if v.taken else '-':<5} {v.rule:<{wr}} {v.message}")
        names = {v.plugin for v in self.verdicts}
        for p in self._host.plugins():
            if p.name in names:
                lines += [f"note: {p.name} {n}" for n in p.notes]
        if not self.ok:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)

    def create(self, max_reqs: int = 256, max_tokens: int = 8192, max_context: int = 8192) -> "Any":
        """Build the selected stack; returns a sglattn.Backend."""
        from .backend import Backend
        if not self.ok:
            raise InvalidArgumentError(f"this selection failed ({self.error}); nothing to create", "create")
        lib = self._host._lib
        opts = lib.new(A.sgl_attn_create_options)
        opts.max_reqs, opts.max_tokens, opts.max_context = max_reqs, max_tokens, max_context
        out = C.c_void_p()
        err = C.create_string_buffer(_ERR)
        rc = lib.create(self._host._ptr, self._ptr, C.byref(self.model.struct), C.byref(opts), C.byref(out), err,
                        _ERR)
        if rc:
            raise error_for_status(rc, _s(err.value), "create")
        return Backend(self._host, out, self.model, list(self.stack), self.label,
                       dict(max_reqs=max_reqs, max_tokens=max_tokens, max_context=max_context))

    def __repr__(self) -> str:
        return f"Selection({self.label or self.error!r})"


# ------------------------------------------------------------------ host
class Host:
    """An open libsglattn host (sgl_attn_host_open).  Arguments are the
    fields of sgl_attn_host_options; `conf` is conf_path."""

    def __init__(self, plugin_path: Optional[Union[str, Sequence[str]]] = None, *, conf: Optional[str] = None,
                 no_conf: bool = False, ignore_env_path: bool = False, no_default_dir: bool = False,
                 isolate_probes: bool = False, probe_timeout_ms: int = 0, never_unload: bool = False,
                 validate: bool = False, log: Optional[Callable[[int, str], None]] = None,
                 log_level: int = 1, caps_file: Optional[str] = None) -> None:
        self._lib: Lib = load()
        lib = self._lib
        o = lib.new(A.sgl_attn_host_options)
        if plugin_path is not None and not isinstance(plugin_path, str):
            plugin_path = ":".join(plugin_path)
        self._keep: List[Any] = []
        if plugin_path:
            b = plugin_path.encode()
            self._keep.append(b)
            o.plugin_path = b
        if conf:
            c = os.fspath(conf).encode()
            self._keep.append(c)
            o.conf_path = c
        o.ignore_env_path, o.no_default_dir, o.no_conf = int(ignore_env_path), int(no_default_dir), int(no_conf)
        o.isolate_probes, o.probe_timeout_ms, o.never_unload = int(isolate_probes), probe_timeout_ms, int(never_unload)
        o.validate = int(validate)
        if caps_file:
            cf = os.fspath(caps_file).encode()
            self._keep.append(cf)
            o.caps_file = cf
        if log is not None:
            sink = log

            def _log(_user: Any, level: int, line: bytes) -> None:
                try:
                    sink(level, _s(line))
                except Exception:  # a callback must not unwind through C
                    pass
            cb = A.LOG_FN(_log)
            self._keep.append(cb)  # the host calls it for its whole life
            o.log, o.log_level = cb, log_level
        ptr = C.c_void_p()
        err = C.create_string_buffer(_ERR)
        rc = lib.host_open(C.byref(o), C.byref(ptr), err, _ERR)
        if rc:
            raise error_for_status(rc, _s(err.value), "Host")
        self._ptr = ptr

    # -------------------------------------------------------- lifetime
    def close(self) -> None:
        """Close the handle; backends already created keep it alive until
        they are destroyed (the library counts them)."""
        p = getattr(self, "_ptr", None)
        if p:
            self._lib.host_close(p)
            self._ptr = None  # type: ignore[assignment]

    def __enter__(self) -> "Host":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _live(self) -> C.c_void_p:
        if not getattr(self, "_ptr", None):
            raise Error("the host is closed", "Host")
        return self._ptr

    # -------------------------------------------------------- plugins
    def plugins(self) -> List[Plugin]:
        """Every plugin file found, in scan order, failures included."""
        lib, h = self._lib, self._live()
        out = []
        for i in range(lib.plugin_count(h)):
            info = lib.new(A.sgl_attn_plugin_info)
            if lib.plugin_info(h, i, C.byref(info)):
                continue
            has_desc = bool(info.name)
            roles = {A.SGL_ATTN_ROLE_FULL: "full", A.SGL_ATTN_ROLE_HYBRID: "hybrid", A.SGL_ATTN_ROLE_LAYER: "layer"}
            role = roles.get(info.role) if has_desc else None
            kind = None
            if role == "hybrid":
                kind = (_s(info.custom_kind) if info.hybrid_kind == A.SGL_ATTN_HYBRID_CUSTOM and info.custom_kind
                        else _s(lib.hybrid_kind_name(info.hybrid_kind)))
            devices = []
            for d in range(info.n_devices):
                caps = lib.new(A.sgl_attn_caps)
                if lib.plugin_caps(h, i, d, C.byref(caps)) == 0:
                    devices.append(Device._from_caps(caps, d))
            out.append(Plugin(
                name=_s(info.name) if has_desc else None, version=_opt(_s(info.version)) if has_desc else None,
                description=_opt(_s(info.description)) if has_desc else None,
                license=_opt(_s(info.license)) if has_desc else None, path=_s(info.path),
                source=_s(info.source), platform=_s(lib.platform_name(info.platform)) if has_desc else None,
                role=role, hybrid_kind=kind, status=_s(lib.plugin_status_name(info.status)),
                reason=_opt(_s(lib.plugin_reason(h, i) or b"")),
                abi=f"{info.abi_major}.{info.abi_minor}" if (info.abi_major or info.abi_minor) else None,
                aliases=[_s(info.aliases[k].value) for k in range(min(info.n_aliases, 16))],
                model_types=[_s(info.model_types[k].value) for k in range(min(info.n_model_types, 16))],
                notes=[_s(lib.plugin_note(h, i, k) or b"") for k in range(lib.plugin_note_count(h, i))],
                devices=devices, index=i))
        return out

    def plugin(self, name: str) -> Plugin:
        """The loaded (not shadowed) plugin of that name."""
        for p in self.plugins():
            if p.name == name and p.status not in ("shadowed", "load-error", "abi-mismatch"):
                return p
        raise NotFoundError(f"no plugin named {name!r} is loaded "
                            f"(found: {', '.join(p.name for p in self.plugins() if p.name) or 'none'})", "plugin")

    def search_paths(self) -> List[Tuple[str, str, str]]:
        """(directory, where it came from, note) in search order."""
        lib, h = self._lib, self._live()
        out = []
        for i in range(lib.search_path_count(h)):
            d, s, n = C.c_char_p(), C.c_char_p(), C.c_char_p()
            if lib.search_path(h, i, C.byref(d), C.byref(s), C.byref(n)) == 0:
                out.append((_s(d.value or b""), _s(s.value or b""), _s(n.value or b"")))
        return out

    @property
    def conf_path(self) -> str:
        return _s(self._lib.conf_path(self._live()) or b"")

    # -------------------------------------------------------- choosing
    def model(self, model: ModelLike, tp_size: int = 1, **overrides: Any) -> Model:
        return Model.load(model, tp_size, **overrides)

    def select(self, model: ModelLike, backend: Optional[str] = None, prefill_backend: Optional[str] = None,
               decode_backend: Optional[str] = None, *, tp_size: int = 1, platform: Optional[str] = None,
               is_draft: bool = False, validate: bool = False, cuda_graph: bool = False,
               no_cpu_fallback: bool = False, **model_overrides: Any) -> Selection:
        """Choose a stack for `model` (a config dict, config.json path, model
        directory, PretrainedConfig or Model).  A refusal raises the status's
        exception with the host's headline; its `.selection` holds the
        verdicts (`e.selection.explain()`)."""
        lib, h = self._lib, self._live()
        if backend and (prefill_backend or decode_backend):
            raise InvalidArgumentError("give backend, or prefill_backend/decode_backend, not both", "select")
        m = Model.load(model, tp_size, **model_overrides)
        req = lib.new(A.sgl_attn_select_request)
        keep = []
        for f, v in (("backend", backend), ("prefill_backend", prefill_backend), ("decode_backend", decode_backend)):
            if v:
                b = v.encode()
                keep.append(b)
                setattr(req, f, b)
        if platform:
            names = [_s(lib.platform_name(i)) for i in range(1, 6)]
            if platform not in names:
                raise InvalidArgumentError(f"platform {platform!r}: expected one of {', '.join(names)}", "select")
            req.platform = names.index(platform) + 1
        req.is_draft, req.validate, req.cuda_graph = int(is_draft), int(validate), int(cuda_graph)
        req.no_cpu_fallback = int(no_cpu_fallback)
        out = C.c_void_p()
        err = C.create_string_buffer(_ERR)
        rc = lib.select(h, C.byref(m.struct), C.byref(req), C.byref(out), err, _ERR)
        sel = Selection(self, out, m, rc == 0, _s(err.value)) if out else None
        if rc:
            e = error_for_status(rc, _s(err.value) or _s(lib.status_name(rc)), "select")
            e.selection = sel  # type: ignore[attr-defined]
            raise e
        assert sel is not None
        return sel

    def create_stack(self, names: Sequence[str], model: ModelLike, device: int = 0, max_reqs: int = 256,
                     max_tokens: int = 8192, max_context: int = 8192, tp_size: int = 1,
                     **model_overrides: Any) -> Any:
        """Build an explicit stack by plugin name, outermost first
        (["gdn", "cpu_ref"]); returns a sglattn.Backend."""
        from .backend import Backend
        lib, h = self._lib, self._live()
        if isinstance(names, str):
            names = names.split("/")
        m = Model.load(model, tp_size, **model_overrides)
        arr = (C.c_char_p * len(names))(*[n.encode() for n in names])
        opts = lib.new(A.sgl_attn_create_options)
        opts.max_reqs, opts.max_tokens, opts.max_context = max_reqs, max_tokens, max_context
        out = C.c_void_p()
        err = C.create_string_buffer(_ERR)
        rc = lib.create_stack(h, arr, len(names), device, C.byref(m.struct), C.byref(opts), C.byref(out), err, _ERR)
        if rc:
            raise error_for_status(rc, _s(err.value), "create_stack")
        return Backend(self, out, m, list(names), "/".join(names),
                       dict(max_reqs=max_reqs, max_tokens=max_tokens, max_context=max_context))

    def __iter__(self) -> Iterator[Plugin]:
        return iter(self.plugins())

    def __repr__(self) -> str:
        return f"Host({self._lib.path}, {len(self.plugins()) if getattr(self, '_ptr', None) else 'closed'})"
