"""A created stack: the backend vtable's calls over Python arrays.

    backend = host.select(config).create(max_reqs=64, max_tokens=4096, max_context=4096)
    batch = sglattn.Batch("extend", req_to_token, req_pool_indices, seq_lens, out_cache_loc, ...)
    backend.init_forward_metadata(batch)
    layer = backend.layer(0, k_pool, v_pool)          # once per layer
    backend.forward_extend(layer, q, k, v, out)       # per layer

    # dual chunk attention (a model with dual_chunk_attention_config):
    dc = sglattn.DualChunk.from_model(backend.model)
    layer.set_dual_chunk(dc)                          # the layer's forwards use it
    dc.set_queries(q_succ, q_inter)                   # before each forward

Structs are cached: a Layer holds its sgl_attn_layer and sgl_attn_forward_args
and the four DLTensors of q, k, v and out, so a forward writes four data
pointers (and re-describes a tensor only when its shape, strides, dtype or
device changed); a Batch holds its sgl_attn_batch and DLTensors, and can be
refilled in place.  The tensors a call uses are referenced until the next
call replaces them.
"""
from __future__ import annotations

import ctypes as C
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Union

from . import _abi as A
from ._lib import Lib, load
from ._tensor import TensorRef, describe, dims, is_torch_tensor, torch_dl_device, torch_dl_dtype, torch_module
from .errors import Error, InvalidArgumentError, UnsupportedError, error_for_status

__all__ = ["Backend", "Batch", "DualChunk", "Layer", "LinearInputs", "MODES", "ATTN_TYPES"]

# sgl_attn_layer.attn_type (ABI 1.2; anything but causal needs the stack's attn_types)
ATTN_TYPES: Dict[str, int] = {"causal": A.SGL_ATTN_TYPE_CAUSAL, "bidirectional": A.SGL_ATTN_TYPE_BIDIRECTIONAL,
                              "encoder_only": A.SGL_ATTN_TYPE_ENCODER_ONLY}

# The layer's ABI 1.2 tensor fields Layer takes by name.
_LAYER_TENSORS = ("slot_map", "k_scale_tensor", "v_scale_tensor", "q_descale_tensor")

MODES: Dict[str, int] = {
    "idle": A.SGL_ATTN_MODE_IDLE, "extend": A.SGL_ATTN_MODE_EXTEND, "decode": A.SGL_ATTN_MODE_DECODE,
    "verify": A.SGL_ATTN_MODE_TARGET_VERIFY, "target_verify": A.SGL_ATTN_MODE_TARGET_VERIFY,
    # ABI 1.2: to a stack whose features name draft_extend
    "draft_extend": A.SGL_ATTN_MODE_DRAFT_EXTEND,
}

_BATCH_TENSORS = ("req_to_token", "req_pool_indices", "seq_lens", "extend_prefix_lens", "extend_seq_lens",
                  "out_cache_loc", "positions", "encoder_lens", "seq_lens_cpu", "extend_prefix_lens_cpu",
                  "extend_seq_lens_cpu", "encoder_lens_cpu", "state_indices",
                  # ABI 1.2: only to a stack whose features name them (tree_mask, page_table, encoder_loc)
                  "custom_mask", "mask_indptr", "page_table", "encoder_out_cache_loc")


def _mode(mode: Union[str, int]) -> int:
    if isinstance(mode, int):
        if mode not in MODES.values():
            raise InvalidArgumentError(f"forward mode {mode}: expected one of {sorted(set(MODES.values()))}")
        return mode
    m = MODES.get(str(mode).lower())
    if m is None:
        raise InvalidArgumentError(f"forward mode {mode!r}: expected one of {', '.join(MODES)}")
    return m


def current_stream(device_refs: Sequence[TensorRef]) -> Optional[int]:
    """torch's current CUDA stream on the device of the first CUDA tensor, or
    None (host memory, or torch not loaded: the default stream)."""
    torch = torch_module()
    for r in device_refs:
        if r is not None and r.dl.device.device_type == A.kDLCUDA:
            if torch is None:
                return None
            return int(torch.cuda.current_stream(r.dl.device.device_id).cuda_stream) or None
    return None


class Batch:
    """One sgl_attn_batch and the tensors it points at (kept alive with it).

    Tensors are torch tensors, __dlpack__ objects or (for the *_cpu mirrors)
    lists of ints.  batch_size defaults to req_pool_indices' length,
    num_tokens to out_cache_loc's, seq_lens_sum to the sum of seq_lens_cpu
    (or of seq_lens, which reads a device tensor back).  stream "auto" is
    torch's current stream when a tensor is on a CUDA device.
    """

    def __init__(self, mode: Union[str, int], req_to_token: Any = None, req_pool_indices: Any = None,
                 seq_lens: Any = None, out_cache_loc: Any = None, *, page_size: int = 1,
                 tokens_per_req: int = 1, batch_size: Optional[int] = None, num_tokens: Optional[int] = None,
                 seq_lens_sum: Optional[int] = None, stream: Any = "auto", **tensors: Any) -> None:
        self._lib: Lib = load()
        self.struct = self._lib.new(A.sgl_attn_batch)
        self.addr = C.addressof(self.struct)
        self._refs: Dict[str, Optional[TensorRef]] = {n: None for n in _BATCH_TENSORS}
        self.update(mode, req_to_token, req_pool_indices, seq_lens, out_cache_loc, page_size=page_size,
                    tokens_per_req=tokens_per_req, batch_size=batch_size, num_tokens=num_tokens,
                    seq_lens_sum=seq_lens_sum, stream=stream, **tensors)

    def update(self, mode: Union[str, int], req_to_token: Any = None, req_pool_indices: Any = None,
               seq_lens: Any = None, out_cache_loc: Any = None, *, page_size: int = 1,
               tokens_per_req: int = 1, batch_size: Optional[int] = None, num_tokens: Optional[int] = None,
               seq_lens_sum: Optional[int] = None, stream: Any = "auto", **tensors: Any) -> "Batch":
        """Refill this batch in place (same struct address; every tensor field
        not given becomes NULL)."""
        unknown = set(tensors) - set(_BATCH_TENSORS)
        if unknown:
            raise TypeError(f"Batch: unknown tensor field(s) {', '.join(sorted(unknown))}; expected "
                            f"{', '.join(_BATCH_TENSORS)}")
        tensors.update(req_to_token=req_to_token, req_pool_indices=req_pool_indices, seq_lens=seq_lens,
                       out_cache_loc=out_cache_loc)
        s = self.struct
        s.forward_mode = self.mode = _mode(mode)
        for name in _BATCH_TENSORS:
            t = tensors.get(name)
            if t is None:
                self._refs[name] = None
                setattr(s, name, None)
                continue
            ref = self._refs.get(name)
            if ref is None or ref.shape is None:
                ref = TensorRef()
            if hasattr(t, "data_ptr") and hasattr(t, "stride"):
                ref.set_torch(t)
            elif isinstance(t, (list, tuple)):
                ref.set_host_ints([int(v) for v in t])
            else:
                ref = describe(t)
            self._refs[name] = ref
            setattr(s, name, ref.addr)
        rpi, ocl = self._refs["req_pool_indices"], self._refs["out_cache_loc"]
        if batch_size is None:
            batch_size = dims(rpi)[0] if rpi is not None else 0
        if num_tokens is None:
            num_tokens = dims(ocl)[0] if ocl is not None else batch_size * tokens_per_req
        if seq_lens_sum is None:
            seq_lens_sum = self._sum_lens(tensors)
        s.batch_size, s.num_tokens, s.page_size, s.tokens_per_req = batch_size, num_tokens, page_size, tokens_per_req
        s.seq_lens_sum = seq_lens_sum
        if stream == "auto":
            stream = current_stream([r for r in self._refs.values() if r is not None])
        s.stream = stream
        return self

    @staticmethod
    def _sum_lens(tensors: Dict[str, Any]) -> int:
        cpu = tensors.get("seq_lens_cpu")
        if cpu is not None:
            return int(sum(int(v) for v in (cpu.tolist() if hasattr(cpu, "tolist") else cpu)))
        sl = tensors.get("seq_lens")
        if sl is None:
            return 0
        if hasattr(sl, "sum"):
            return int(sl.sum())
        return 0

    def set_stream(self, stream: Optional[int]) -> None:
        self.struct.stream = stream

    @property
    def batch_size(self) -> int:
        return int(self.struct.batch_size)

    @property
    def num_tokens(self) -> int:
        return int(self.struct.num_tokens)

    def tensor(self, name: str) -> Any:
        """The object given for a field (None when NULL)."""
        r = self._refs[name]
        if r is None:
            return None
        return r.owner[1] if isinstance(r.owner, tuple) else r.owner


class LinearInputs:
    """sgl_attn_linear_io for a linear-attention layer of a hybrid stack
    (docs/hybrid.md lists what each kind reads).  `kind` is the layer's
    hybrid kind ("gdn", "mamba2", ...).  ABI 1.2: conv_state, ssm_state,
    their intermediate_* copies and state_indices put the layer's state in
    the caller's tensors (docs/abi.md, "Linear state contract"; the stack
    must claim "caller_state")."""

    FIELDS = ("x", "a", "b", "conv_weight", "conv_bias", "A_log", "dt_bias", "D", "decay", "out",
              "conv_state", "ssm_state", "intermediate_conv_state", "intermediate_ssm_state", "state_indices")

    def __init__(self, kind: Union[str, int], keep_intermediate: bool = False, use_qk_l2norm: bool = True,
                 **tensors: Any) -> None:
        lib = load()
        unknown = set(tensors) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"LinearInputs: unknown field(s) {', '.join(sorted(unknown))}")
        if isinstance(kind, str):
            names = [lib.hybrid_kind_name(i).decode() for i in range(8)]
            if kind not in names:
                raise InvalidArgumentError(f"linear kind {kind!r}: expected one of {', '.join(names[1:])}")
            kind = names.index(kind)
        self.struct = lib.new(A.sgl_attn_linear_io)
        self.struct.kind = kind
        self.struct.keep_intermediate = int(keep_intermediate)
        self.struct.use_qk_l2norm = int(use_qk_l2norm)
        self._refs: Dict[str, TensorRef] = {}
        for name, t in tensors.items():
            if t is not None:
                r = describe(t)
                self._refs[name] = r
                setattr(self.struct, name, r.addr)
        self.addr = C.addressof(self.struct)

    def set(self, name: str, t: Any) -> None:
        """Point one field at `t` for the calls that follow (None: NULL), so
        that an engine keeps one LinearInputs per layer and changes only its
        per-call tensors (x, a, b, out).  A torch tensor of the shape, dtype,
        device and strides the field held last costs one pointer write; any
        other is described again into the field's own descriptor."""
        if name not in self.FIELDS:
            raise TypeError(f"LinearInputs.set: {name!r} is not one of {', '.join(self.FIELDS)}")
        if t is None:
            self._refs.pop(name, None)
            setattr(self.struct, name, None)
            return
        ref = self._refs.get(name)
        if ref is not None and ref.shape is not None and is_torch_tensor(t):
            last = ref.owner
            if (is_torch_tensor(last) and t.shape == last.shape and t.dtype is last.dtype and t.get_device() == last.get_device()
                    and t.stride() == last.stride()):
                ref.dl.data = t.data_ptr() or None
                ref.owner = t
                return
            ref.set_torch(t)
            return
        ref = self._refs[name] = describe(t)
        setattr(self.struct, name, ref.addr)

    def tensor(self, name: str) -> Any:
        """The object a field points at (None when NULL)."""
        r = self._refs.get(name)
        if r is None:
            return None
        return r.owner[1] if isinstance(r.owner, tuple) else r.owner


class DualChunk:
    """sgl_attn_dual_chunk (ABI 1.2; docs/dual_chunk.md): dual chunk
    attention's sizes and the two extra query variants, q_succ and q_inter
    ([T, Hq, Dqk] like q, of q's dtype).  Strided views whose head rows are
    contiguous (slices of one fused query row, as sglang hands them) are
    passed as they are, not copied.  Layer.set_dual_chunk points a layer's
    forwards at it; set_queries gives each call's variants (the stack must
    claim "dual_chunk")."""

    __slots__ = ("struct", "addr", "_refs", "_owners", "__weakref__")

    def __init__(self, chunk_size: int, local_size: int, original_max_position: int = 0, q_succ: Any = None,
                 q_inter: Any = None) -> None:
        if chunk_size < 1 or local_size < 0 or local_size >= chunk_size or original_max_position < 0:
            raise InvalidArgumentError(f"dual chunk: chunk_size {chunk_size}, local_size {local_size}, "
                                       f"original_max_position {original_max_position}; expected 0 <= local_size "
                                       f"< chunk_size and original_max_position >= 0")
        s = self.struct = load().new(A.sgl_attn_dual_chunk)
        s.chunk_size, s.local_size, s.original_max_position = chunk_size, local_size, original_max_position
        self.addr = C.addressof(s)
        self._refs: List[TensorRef] = [TensorRef(), TensorRef()]
        self._owners: List[Any] = [None, None]  # the torch tensor each ref described last
        self.set_queries(q_succ, q_inter)

    @classmethod
    def from_model(cls, model: Any) -> "DualChunk":
        """The sizes of a Model whose config has dual_chunk_attention_config
        (sgl_attn_model.dca_*, read by the host from the HF config)."""
        if int(model.dca_chunk_size) <= 0:
            raise InvalidArgumentError(f"model {model.model_type or model.name!r} has no dual chunk attention "
                                       f"(dca_chunk_size {model.dca_chunk_size}: its config has no "
                                       f"dual_chunk_attention_config)")
        return cls(int(model.dca_chunk_size), int(model.dca_local_size), int(model.dca_original_max_position))

    @property
    def chunk_size(self) -> int:
        return int(self.struct.chunk_size)

    @property
    def local_size(self) -> int:
        return int(self.struct.local_size)

    @property
    def original_max_position(self) -> int:
        return int(self.struct.original_max_position)

    def set_queries(self, q_succ: Any, q_inter: Any) -> None:
        """This call's successor and inter-chunk queries (None: NULL).  A torch
        tensor of the shape, strides, dtype and device described last costs
        one pointer write."""
        s = self.struct
        for i, t in enumerate((q_succ, q_inter)):
            name = "q_inter" if i else "q_succ"
            if t is None:
                self._owners[i] = None
                setattr(s, name, None)
                continue
            last = self._owners[i]
            ref = self._refs[i]
            if is_torch_tensor(t):
                if (last is not None and type(t) is type(last) and t.shape == last.shape and t.dtype is last.dtype
                        and t.device == last.device and t.stride() == last.stride()):
                    ref.dl.data = t.data_ptr() or None
                    ref.owner = t
                else:
                    if ref.shape is None:  # it held a __dlpack__ object's tensor
                        ref = self._refs[i] = TensorRef()
                    ref.set_torch(t)
                self._owners[i] = t
            else:
                ref = self._refs[i] = describe(t)
                self._owners[i] = None
            setattr(s, name, ref.addr)

    def __repr__(self) -> str:
        return (f"DualChunk(chunk_size={self.chunk_size}, local_size={self.local_size}, "
                f"original_max_position={self.original_max_position})")


class Layer:
    """One attention layer bound to a backend: its sgl_attn_layer, its
    sgl_attn_forward_args, and the four DLTensors (q, k, v, out) its forwards
    fill, with what each described last (shape, dtype, device, strides)."""

    __slots__ = ("backend", "layer_id", "struct", "args", "args_ref", "_args_mv", "_dls", "_dl_mv", "_shapes",
                 "_cache", "_other", "_pools", "sinks", "save", "linear", "out_spec", "cols", "topk", "_lin",
                 "_extra", "_layer_refs", "dual_chunk", "__weakref__")

    def __init__(self, backend: "Backend", layer_id: int, k_cache: Any, v_cache: Any, *,
                 num_q_heads: Optional[int] = None, num_kv_heads: Optional[int] = None,
                 head_dim_qk: Optional[int] = None, head_dim_v: Optional[int] = None,
                 sm_scale: Optional[float] = None, logit_softcap: float = 0.0, sliding_window: int = -1,
                 is_cross: bool = False, sinks: Any = None, k_scale: float = 1.0, v_scale: float = 1.0,
                 attn_type: Union[str, int] = "causal", q_descale: float = 0.0, slot_map: Any = None,
                 k_scale_tensor: Any = None, v_scale_tensor: Any = None, q_descale_tensor: Any = None,
                 dual_chunk: Optional[DualChunk] = None) -> None:
        lib = backend._lib
        m = backend.model
        self.backend = backend
        self.layer_id = layer_id
        st = self.struct = lib.new(A.sgl_attn_layer)
        st.layer_id = layer_id
        st.num_q_heads = m.num_q_heads if num_q_heads is None else num_q_heads
        st.num_kv_heads = m.num_kv_heads if num_kv_heads is None else num_kv_heads
        st.head_dim_qk = m.head_dim_qk if head_dim_qk is None else head_dim_qk
        st.head_dim_v = m.head_dim_v if head_dim_v is None else head_dim_v
        st.sm_scale = st.head_dim_qk ** -0.5 if sm_scale is None else sm_scale
        st.logit_softcap = logit_softcap or 0.0
        st.sliding_window = -1 if sliding_window is None or sliding_window < 0 else sliding_window
        st.is_cross = int(bool(is_cross))
        st.k_scale, st.v_scale = k_scale, v_scale
        if isinstance(attn_type, str):
            if attn_type not in ATTN_TYPES:
                raise InvalidArgumentError(f"attn_type {attn_type!r}: expected one of {', '.join(ATTN_TYPES)}")
            attn_type = ATTN_TYPES[attn_type]
        st.attn_type = attn_type
        st.q_descale = q_descale
        self._layer_refs: Dict[str, Optional[TensorRef]] = {}
        for name, t in (("slot_map", slot_map), ("k_scale_tensor", k_scale_tensor),
                        ("v_scale_tensor", v_scale_tensor), ("q_descale_tensor", q_descale_tensor)):
            self.set_tensor(name, t)
        self._pools: List[Optional[TensorRef]] = [None, None]
        self.set_pools(k_cache, v_cache)
        self.sinks: Optional[TensorRef] = None
        self.set_sinks(sinks)
        self.topk: Optional[TensorRef] = None
        a = self.args = lib.new(A.sgl_attn_forward_args)
        a.layer = C.addressof(st)
        a.batch = backend._batch_addr
        a.save_kv_cache = 1
        self.save = True
        self.dual_chunk: Optional[DualChunk] = None
        self.set_dual_chunk(dual_chunk)
        # What the fast path compares `linear` with: the LinearInputs passed
        # last (_lin), or _EXTRAS while lse / q_rope / k_rope are, so that the
        # next call without them takes the slow path and clears them, and the
        # plain fast path costs no more than before they existed.
        self.linear: Any = None
        self._lin: Optional[LinearInputs] = None
        # ABI 1.2 per-call output and inputs (lse, q_rope, k_rope): their descriptors, reused
        self._extra: List[Optional[TensorRef]] = [None, None, None]
        self.out_spec: Any = None
        self.cols = 0  # an adapter's output width (heads * v head dim)
        self.args_ref = C.byref(a)
        self._args_mv = _words(C.addressof(a), C.sizeof(a))
        # q, k, v, out: four DLTensors side by side; word 6*i is tensor i's data
        self._dls = (A.DLTensor * 4)()
        self._dl_mv = _words(C.addressof(self._dls), C.sizeof(self._dls))
        self._shapes = [((C.c_int64 * 8)(), (C.c_int64 * 8)()) for _ in range(4)]
        for i, w in enumerate(_ARG_WORDS):
            self._args_mv[w] = C.addressof(self._dls[i])
        # per tensor: shape, dtype, device, contiguous, strides of the last one described
        self._cache: List[Any] = [None, None, -2, True, None] * 4
        self._other: List[Any] = [None] * 4  # a non-torch argument's TensorRef, kept for its call

    def set_sinks(self, sinks: Any) -> None:
        self.sinks = describe(sinks) if sinks is not None else None
        self.struct.sinks = self.sinks.addr if self.sinks is not None else None

    def set_tensor(self, name: str, t: Any) -> None:
        """One of the layer's ABI 1.2 tensors: slot_map (SGL_ATTN_FEAT_SLOT_MAP),
        k_scale_tensor, v_scale_tensor, q_descale_tensor ([1] fp32 on the
        device, SGL_ATTN_FEAT_FP8_SCALES); None clears it."""
        if name not in _LAYER_TENSORS:
            raise TypeError(f"Layer.set_tensor: {name!r} is not one of {', '.join(_LAYER_TENSORS)}")
        ref = describe(t) if t is not None else None
        self._layer_refs[name] = ref
        setattr(self.struct, name, ref.addr if ref is not None else None)

    def _set_extras(self, linear: Optional[LinearInputs], lse: Any, q_rope: Any, k_rope: Any) -> None:
        """The slow path of linear=, lse=, q_rope=, k_rope=: describe each
        given tensor (again, so a reshaped one is never passed stale) into
        this layer's descriptor for it, NULL for None."""
        if linear is not self._lin:
            self._args_mv[_W_LINEAR] = linear.addr if linear is not None else 0
            self._lin = linear
        a = self.args
        for i, (name, t) in enumerate((("lse", lse), ("q_rope", q_rope), ("k_rope", k_rope))):
            if t is None:
                self._extra[i] = None
                setattr(a, name, None)
                continue
            ref = self._extra[i]
            if is_torch_tensor(t):
                ref = (ref if ref is not None and ref.shape is not None else TensorRef()).set_torch(t)
            else:
                ref = describe(t)
            self._extra[i] = ref
            setattr(a, name, ref.addr)
        self.linear = _EXTRAS if lse is not None or q_rope is not None or k_rope is not None else linear

    def set_dual_chunk(self, dual_chunk: Optional[DualChunk]) -> None:
        """Dual chunk attention (ABI 1.2, docs/dual_chunk.md): the forwards
        that follow pass `dual_chunk` (its sizes and whatever queries its
        set_queries gave last), until set to None.  The forward calls
        themselves are unchanged, so plain layers pay nothing for it."""
        self.dual_chunk = dual_chunk
        self.args.dual_chunk = dual_chunk.addr if dual_chunk is not None else None

    def set_topk(self, topk_indices: Any) -> None:
        """DeepSeek sparse attention: the next forwards attend over these pool
        slots only ([T, topk] int32, -1 = none; docs/abi.md), until set to
        None.  The host refuses them on a stack without sparse MLA."""
        self.topk = describe(topk_indices) if topk_indices is not None else None
        self.args.topk_indices = self.topk.addr if self.topk is not None else None

    def set_pools(self, k_cache: Any, v_cache: Any) -> None:
        """Point the layer at (new) KV pools."""
        self._pools = [describe(k_cache) if k_cache is not None else None,
                       describe(v_cache) if v_cache is not None else None]
        self.struct.k_cache = self._pools[0].addr if self._pools[0] is not None else None
        self.struct.v_cache = self._pools[1].addr if self._pools[1] is not None else None

    def _set(self, i: int, t: Any, stream: Optional[int]) -> None:
        """The slow path of argument i (0 q, 1 k, 2 v, 3 out): describe a torch
        tensor into this layer's DLTensor i, or pass another array's own
        DLTensor, or NULL for None."""
        c, w = self._cache, _ARG_WORDS[i]
        c[5 * i] = None  # the fast path re-checks next call
        if i == 3:
            self.out_spec = None  # forward_*_alloc's output descriptor no longer holds
        self._other[i] = None
        if t is None:
            self._args_mv[w] = 0
            return
        if is_torch_tensor(t):
            dl = self._dls[i]
            shape, strides = self._shapes[i]
            ndim = t.dim()
            if ndim > 8:
                raise InvalidArgumentError(f"a {ndim}-dimensional tensor: forward arguments have at most 8")
            code, bits = torch_dl_dtype(t.dtype)
            dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = code, bits, 1
            dl.device.device_type, dl.device.device_id = torch_dl_device(t)
            sh, st = t.shape, t.stride()
            for d in range(ndim):
                shape[d], strides[d] = sh[d], st[d]
            contig = t.is_contiguous()
            dl.ndim, dl.shape, dl.byte_offset = ndim, C.addressof(shape), 0
            dl.strides = None if contig else C.addressof(strides)
            dl.data = t.data_ptr() or None
            self._args_mv[w] = C.addressof(dl)
            c[5 * i:5 * i + 5] = [sh, t.dtype, t.get_device(), contig, None if contig else st]
            return
        r = describe(t, stream)
        self._other[i] = r
        self._args_mv[w] = r.addr


def _words(addr: int, size: int) -> memoryview:
    """A struct as 8-byte words, for one indexed write per pointer field."""
    return memoryview((C.c_uint64 * (size // 8)).from_address(addr)).cast("B").cast("Q")


_EXTRAS: Any = object()  # Layer.linear while lse / q_rope / k_rope are passed
_ARG_WORDS = tuple(getattr(A.sgl_attn_forward_args, f).offset // 8 for f in ("q", "k", "v", "out"))
_W_LINEAR = A.sgl_attn_forward_args.linear.offset // 8
_W_BATCH = A.sgl_attn_forward_args.batch.offset // 8
_DL_WORDS = C.sizeof(A.DLTensor) // 8


def _layer_forward_fn(fn: Any, call: str) -> Any:
    """The per-layer forward for one vtable entry (extend or decode).  For a
    torch tensor whose shape, dtype, device and contiguity (or strides) match
    the one this layer saw last, the whole cost is those comparisons and one
    pointer write; anything else takes Layer._set."""
    torch = torch_module()
    T: Any = torch.Tensor if torch is not None else None
    d1, d2, d3 = _DL_WORDS, 2 * _DL_WORDS, 3 * _DL_WORDS

    def forward(self: "Backend", layer: Layer, q: Any, k: Any, v: Any, out: Any, save_kv_cache: bool = True,
                linear: Optional[LinearInputs] = None, lse: Any = None, q_rope: Any = None,
                k_rope: Any = None) -> None:
        nonlocal T
        c = layer._cache
        m = layer._dl_mv
        if (type(q) is T and q.shape == c[0] and q.dtype is c[1] and q.get_device() == c[2]
                and (q.is_contiguous() if c[3] else q.stride() == c[4])):
            m[0] = q.data_ptr()
        else:
            if T is None and torch_module() is not None:  # torch was imported after sglattn
                T = torch_module().Tensor
            layer._set(0, q, self._stream_hint())
        if (type(k) is T and k.shape == c[5] and k.dtype is c[6] and k.get_device() == c[7]
                and (k.is_contiguous() if c[8] else k.stride() == c[9])):
            m[d1] = k.data_ptr()
        else:
            layer._set(1, k, self._stream_hint())
        if (type(v) is T and v.shape == c[10] and v.dtype is c[11] and v.get_device() == c[12]
                and (v.is_contiguous() if c[13] else v.stride() == c[14])):
            m[d2] = v.data_ptr()
        else:
            layer._set(2, v, self._stream_hint())
        if (type(out) is T and out.shape == c[15] and out.dtype is c[16] and out.get_device() == c[17]
                and (out.is_contiguous() if c[18] else out.stride() == c[19])):
            m[d3] = out.data_ptr()
        else:
            layer._set(3, out, self._stream_hint())
        if save_kv_cache is not layer.save:
            layer.save = bool(save_kv_cache)
            layer.args.save_kv_cache = 1 if save_kv_cache else 0
        if linear is not layer.linear or lse is not None or q_rope is not None or k_rope is not None:
            layer._set_extras(linear, lse, q_rope, k_rope)
        rc = fn(self._ptr, layer.args_ref)
        if rc:
            raise self._error(rc, call)

    forward.__name__ = call
    return forward


def _layer_forward_alloc_fn(fn: Any, call: str) -> Any:
    """forward_*_alloc: as the plain forward, with `out` allocated here as a
    compact [rows, cols] tensor of `dtype` on `device` and returned.  The
    output's descriptor is re-made only when (rows, cols, dtype, device)
    differ from the last call's, so it costs the allocation and one pointer
    write (what an engine adapter that allocates its own output wants)."""
    torch = torch_module()
    plain = _layer_forward_fn(fn, call)
    d3 = 3 * _DL_WORDS

    def forward_alloc(self: "Backend", layer: Layer, q: Any, k: Any, v: Any, rows: int, cols: int, dtype: Any,
                      device: Any, save_kv_cache: bool = True) -> Any:
        out = torch.empty((rows, cols), dtype=dtype, device=device)
        spec = layer.out_spec
        if spec is None or spec[0] != rows or spec[1] != cols or spec[2] is not dtype or spec[3] is not device:
            plain(self, layer, q, k, v, out, save_kv_cache)  # describes out too
            layer.out_spec = (rows, cols, dtype, device)
            return out
        c = layer._cache
        m = layer._dl_mv
        # the plain forward's q/k/v checks, inline (see _layer_forward_fn)
        T = type(q)
        if (q.shape == c[0] and q.dtype is c[1] and q.get_device() == c[2]
                and (q.is_contiguous() if c[3] else q.stride() == c[4]) and T is type(k) is type(v)
                and k.shape == c[5] and k.dtype is c[6] and k.get_device() == c[7]
                and (k.is_contiguous() if c[8] else k.stride() == c[9])
                and v.shape == c[10] and v.dtype is c[11] and v.get_device() == c[12]
                and (v.is_contiguous() if c[13] else v.stride() == c[14]) and c[15] is not None
                and save_kv_cache is layer.save and layer.linear is None and T is torch.Tensor):
            m[0] = q.data_ptr()
            m[_DL_WORDS] = k.data_ptr()
            m[2 * _DL_WORDS] = v.data_ptr()
            m[d3] = out.data_ptr()
            rc = fn(self._ptr, layer.args_ref)
            if rc:
                raise self._error(rc, call)
            return out
        plain(self, layer, q, k, v, out, save_kv_cache)
        return out

    forward_alloc.__name__ = call + "_alloc"
    return forward_alloc


class Backend:
    """A created stack (sgl_attn_create / sgl_attn_create_stack): the
    outermost backend and its vtable.  Destroyed by close() or when
    collected; the host stays loaded while it lives."""

    # bound once the library (and, for the _alloc forms, torch) is loaded
    forward_extend_alloc: Callable[..., Any]
    forward_decode_alloc: Callable[..., Any]

    def __init__(self, host: Any, ptr: C.c_void_p, model: Any, stack: List[str], label: str,
                 sizes: Dict[str, int]) -> None:
        self._lib = host._lib
        self._host = host  # the library keeps the host alive too; this keeps the Python object
        self._ptr = ptr
        self.model = model
        self.stack = stack
        self.label = label
        self.sizes = sizes
        assert ptr.value, "a created backend is never NULL"
        hdr = A.sgl_attn_backend.from_address(ptr.value)
        self.device = int(hdr.device)
        ops_size = min(hdr.ops_size, hdr.ops.contents.struct_size)
        # A copy of the vtable within the size the plugin declared; entries past
        # it are NULL here.
        self._ops = A.sgl_attn_backend_ops()
        C.memmove(C.addressof(self._ops), C.addressof(hdr.ops.contents), min(ops_size, C.sizeof(self._ops)))
        self._batch: Optional[Batch] = None
        self._batch_addr = 0
        self._layers: List[Layer] = []
        self.features: List[str] = self._stack_features()
        self.dsa_ops: List[str] = self._stack_features("dsa_ops")
        self._graph_args = self._lib.new(A.sgl_attn_graph_args)

    # ---------------------------------------------------------- lifetime
    def close(self) -> None:
        p = getattr(self, "_ptr", None)
        if p:
            self._lib.destroy(p)
            self._ptr = None  # type: ignore[assignment]

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    @property
    def last_error(self) -> str:
        if not getattr(self, "_ptr", None):
            return ""
        return (self._lib.last_error(self._ptr) or b"").decode("utf-8", "replace")

    def _error(self, rc: int, call: str) -> Error:
        return error_for_status(rc, self.last_error or self._lib.status_name(rc).decode(), call)

    def _stream_hint(self) -> Optional[int]:
        return self._batch.struct.stream if self._batch is not None else None

    def supports(self, op: str) -> bool:
        """Whether the vtable has `op` ("init_graph_state", "state_commit"...);
        an op may be present and still refuse (cpu_ref's graph ops say it does
        not capture graphs): `features` says what the stack claims."""
        return bool(getattr(self._ops, op, None))

    def _stack_features(self, what: str = "features") -> List[str]:
        """The features (or dsa_ops) every computing plugin of the stack
        claims on its device (layer plugins, like validate, pass everything
        through)."""
        common: Optional[Set[str]] = None
        own: Set[str] = set()
        by_name = {p.name: p for p in self._host.plugins() if p.name and p.status == "usable"}
        for name in self.stack:
            p = by_name.get(name)
            if p is None or p.role == "layer" or not p.devices:
                continue
            d = next((x for x in p.devices if x.index == self.device), p.devices[0]) if p.role == "full" \
                else p.devices[0]
            mine = set(getattr(d, what))
            common = mine if common is None else common & mine
            if p.role == "hybrid" and what == "features":  # a wrapper's linear state is its own (host/stack.c)
                own |= mine & {"caller_state"}
        return sorted((common or set()) | own)

    # --------------------------------------------------------------- layers
    def layer(self, layer_id: int, k_cache: Any, v_cache: Any, **kw: Any) -> Layer:
        """A Layer for `layer_id` over its KV pools ([slots, kv_heads, head_dim]
        each; MLA: v_cache None).  Head counts and dims default to the
        model's, sm_scale to head_dim_qk ** -0.5; see sgl_attn_layer for the
        rest (logit_softcap, sliding_window, is_cross, sinks, k_scale, v_scale);
        dual_chunk= a DualChunk (Layer.set_dual_chunk)."""
        layer = Layer(self, layer_id, k_cache, v_cache, **kw)
        self._layers.append(layer)
        return layer

    # ------------------------------------------------------------- the path
    def init_forward_metadata(self, batch: Batch) -> None:
        """Plan `batch`; the forwards that follow use it."""
        if batch is not self._batch:
            self._bind(batch)
        rc = self._lib.fwd_metadata(self._ptr, C.c_void_p(batch.addr))
        if rc:
            raise self._error(rc, "init_forward_metadata")

    def _bind(self, batch: Optional[Batch]) -> None:
        self._batch = batch
        self._batch_addr = batch.addr if batch is not None else 0
        for layer in self._layers:
            layer._args_mv[_W_BATCH] = self._batch_addr

    forward_extend = _layer_forward_fn(None, "forward_extend")
    forward_decode = _layer_forward_fn(None, "forward_decode")

    # ---------------------------------------------------------------- graphs
    def _op(self, name: str) -> Any:
        fn = getattr(self._ops, name)
        if not fn:
            raise UnsupportedError(f"the stack {self.label} has no {name} (its plugins do not offer it)", name)
        return fn

    def init_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        rc = self._op("init_graph_state")(self._ptr, max_bs, max_num_tokens)
        if rc:
            raise self._error(rc, "init_graph_state")

    def _graph(self, name: str, batch: Batch, batch_size: Optional[int], num_tokens: Optional[int],
               forward_mode: Optional[Union[str, int]]) -> None:
        fn = self._op(name)
        g = self._graph_args
        g.batch_size = batch.batch_size if batch_size is None else batch_size
        g.num_tokens = batch.num_tokens if num_tokens is None else num_tokens
        g.forward_mode = batch.mode if forward_mode is None else _mode(forward_mode)
        g.batch = batch.addr
        g.stream = batch.struct.stream
        rc = fn(self._ptr, C.addressof(g))
        if rc:
            raise self._error(rc, name)

    def capture(self, batch: Batch, batch_size: Optional[int] = None, num_tokens: Optional[int] = None,
                forward_mode: Optional[Union[str, int]] = None) -> None:
        """init_forward_metadata_capture: before capturing one batch shape;
        the forwards that follow (captured) use `batch`."""
        if batch is not self._batch:
            self._bind(batch)
        self._graph("init_forward_metadata_capture", batch, batch_size, num_tokens, forward_mode)

    def replay(self, batch: Batch, batch_size: Optional[int] = None, num_tokens: Optional[int] = None,
               forward_mode: Optional[Union[str, int]] = None) -> None:
        """init_forward_metadata_replay: before each replay, outside the graph."""
        self._graph("init_forward_metadata_replay", batch, batch_size, num_tokens, forward_mode)

    def in_graph(self, batch: Batch, batch_size: Optional[int] = None, num_tokens: Optional[int] = None,
                 forward_mode: Optional[Union[str, int]] = None) -> None:
        """init_forward_metadata_in_graph (ABI 1.2, graph_device_plan): inside
        the capture, after capture(batch): the device-only plan the graph
        records, on the batch's stream."""
        self._graph("init_forward_metadata_in_graph", batch, batch_size, num_tokens, forward_mode)

    def graph_seq_len_fill_value(self) -> int:
        fn = self._ops.graph_seq_len_fill_value
        return int(fn(self._ptr)) if fn else 1

    # --------------------------------------------------------------- ragged
    def forward_ragged(self, q: Any, k: Any, v: Any, out: Any, cu_seqlens_q: Any, cu_seqlens_k: Any, *,
                       causal: bool = True, sm_scale: Optional[float] = None, logit_softcap: float = 0.0,
                       lse: Any = None, max_seqlen_q: int = 0, max_seqlen_k: int = 0, cu_seqlens_q_cpu: Any = None,
                       cu_seqlens_k_cpu: Any = None, stream: Any = "auto") -> None:
        """ops->forward_ragged (ABI 1.2, ragged): attention over K/V given as
        tensors, q [Tq, Hq, Dqk], k [Tk, Hkv, Dqk], v [Tk, Hkv, Dv], out
        [Tq, Hq, Dv], request i owning rows cu_seqlens_*[i]..[i+1]; nothing
        is read from or written to a pool.  causal is bottom-right aligned;
        lse [Tq, Hq] fp32 receives each row's log-sum-exp (the stack's
        features must name lse).  sm_scale defaults to Dqk ** -0.5."""
        fn = self._op("forward_ragged")
        refs = [describe(t) for t in (q, k, v, out, cu_seqlens_q, cu_seqlens_k)]
        opt = [describe(t) if t is not None else None for t in (lse, cu_seqlens_q_cpu, cu_seqlens_k_cpu)]
        qd, kd, vd, cud = dims(refs[0]), dims(refs[1]), dims(refs[2]), dims(refs[4])
        if len(qd) != 3 or len(kd) != 3 or len(vd) != 3 or len(cud) != 1:
            raise InvalidArgumentError(f"forward_ragged: q, k, v must be 3-D ([tokens, heads, dim]) and cu_seqlens_q "
                                       f"1-D; got q {list(qd)}, k {list(kd)}, v {list(vd)}, cu_seqlens_q {list(cud)}")
        a = self._lib.new(A.sgl_attn_ragged_args)
        a.batch_size = cud[0] - 1
        a.num_q_heads, a.num_kv_heads = qd[1], kd[1]
        a.head_dim_qk, a.head_dim_v = qd[2], vd[2]
        a.sm_scale = qd[2] ** -0.5 if sm_scale is None else sm_scale
        a.logit_softcap = logit_softcap or 0.0
        a.causal = 1 if causal else 0
        a.max_seqlen_q, a.max_seqlen_k = max_seqlen_q, max_seqlen_k
        a.q, a.k, a.v, a.out, a.cu_seqlens_q, a.cu_seqlens_k = (r.addr for r in refs)
        a.lse, a.cu_seqlens_q_cpu, a.cu_seqlens_k_cpu = (r.addr if r is not None else None for r in opt)
        a.stream = current_stream(refs) if stream == "auto" else stream
        rc = fn(self._ptr, C.addressof(a))
        if rc:
            raise self._error(rc, "forward_ragged")

    # ---------------------------------------------------------------- state
    def state_clear(self, slot: int) -> None:
        rc = self._op("state_clear")(self._ptr, slot)
        if rc:
            raise self._error(rc, "state_clear")

    def state_copy(self, src_slot: int, dst_slot: int) -> None:
        rc = self._op("state_copy")(self._ptr, src_slot, dst_slot)
        if rc:
            raise self._error(rc, "state_copy")

    def state_commit(self, accepted_steps: Any) -> None:
        ref = describe(accepted_steps)
        rc = self._op("state_commit")(self._ptr, ref.addr)
        if rc:
            raise self._error(rc, "state_commit")

    STATE_OPS = {"clear": 1, "copy": 2, "commit": 3, "track": 4}

    def state_batch(self, op: Union[str, int], dst: Any, src: Any = None, steps: Any = None,
                    state: Optional[LinearInputs] = None, stream: Optional[int] = None) -> None:
        """ops->state_batch (ABI 1.2): "clear", "copy", "commit" or "track"
        over the entries of the index tensor `dst` (src / steps as the op
        reads them; -1 skips an entry), on the caller-owned tensors of one
        layer (`state`, a LinearInputs naming them) or, with state None, on
        the wrapper's own pool.  docs/abi.md gives each op's meaning."""
        if isinstance(op, str):
            if op not in self.STATE_OPS:
                raise InvalidArgumentError(f"state_batch op {op!r}: expected one of {', '.join(self.STATE_OPS)}")
            op = self.STATE_OPS[op]
        fn = self._op("state_batch")
        refs = [describe(t) if t is not None else None for t in (dst, src, steps)]
        a = self._lib.new(A.sgl_attn_state_batch_args)
        a.op = op
        a.count = (int(refs[0].shape[0]) if refs[0].dl.ndim else 1) if refs[0] is not None else 0
        a.dst, a.src, a.steps = (r.addr if r is not None else None for r in refs)
        a.state = state.addr if state is not None else None
        a.stream = stream
        rc = fn(self._ptr, C.addressof(a))
        if rc:
            raise self._error(rc, "state_batch")

    def __repr__(self) -> str:
        return f"Backend({self.label}, device {self.device})"


# The forwards call the library's exported entry points (a load and a jump
# through the vtable), bound once the library is loaded.
def _bind_forwards() -> None:
    lib = load()
    setattr(Backend, "forward_extend", _layer_forward_fn(lib.fwd_extend, "forward_extend"))
    setattr(Backend, "forward_decode", _layer_forward_fn(lib.fwd_decode, "forward_decode"))
    if torch_module() is not None:
        bind_alloc_forwards()


def bind_alloc_forwards() -> None:
    """Backend.forward_extend_alloc / forward_decode_alloc, which need torch:
    bound at import when torch is loaded, else by the first caller that has
    imported it (the engine adapters)."""
    if "forward_decode_alloc" not in Backend.__dict__:
        lib = load()
        Backend.forward_extend_alloc = _layer_forward_alloc_fn(lib.fwd_extend, "forward_extend")
        Backend.forward_decode_alloc = _layer_forward_alloc_fn(lib.fwd_decode, "forward_decode")


_bind_forwards()
