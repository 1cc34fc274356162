"""sglang attention backends over libsglattn stacks.

    # sglang loads this through its `sglang.srt.plugins` entry point (the
    # package declares `sglattn = sglattn.sglang:register`); by hand:
    import sglattn.sglang
    sglattn.sglang.register()
    # then: python -m sglang.launch_server --attention-backend sglattn ...

register() adds `sglattn` (the host chooses the stack, as `attnctl select`
would) and `sglattn_<plugin>` for each usable full-attention plugin.  It
never replaces one of sglang's own backend names; with
SGLATTN_SGLANG_OVERRIDE=fa3,triton (or `aliases`: every sglang name a usable
plugin declares) it also registers those names, replacing sglang's, and logs
each replacement.

SglAttnBackend implements sglang's AttentionBackend: metadata, extend,
decode (with sglang's arguments), CUDA graphs in the current form
(init_cuda_graph_state, init_forward_metadata_out_graph(fb, in_capture),
init_forward_metadata_in_graph) and the older capture/replay methods, and
get_cuda_graph_seq_len_fill_value.  It holds the KV pools itself (the batch
no longer carries them).  An argument it cannot honour raises
NotImplementedError naming it; nothing is silently ignored.

For an MLA model (DeepSeek-V2/V3 shaped) the forwards take sglang's
absorbed layer on the MLATokenToKVPool's kv_buffer (q / q_rope / k /
k_rope split or joined) and the MHA prefill layer of an extend with no
prefix (as ragged attention); see _init_mla.

For a hybrid GDN model (Qwen3-Next) whose chosen stack keeps its linear
state in the caller's tensors (caller_state), the same stack also serves
the linear-attention layers: SglAttnLinearBackend (backend.linear_backend)
takes the place of sglang's GDN backend inside sglang's own
HybridLinearAttnBackend (register() wraps attn_backend_wrapper for that),
and each linear layer runs on sglang's MambaPool tensors as caller-owned
state, target verify included (the per-draft states in the pool's
intermediate caches; sglang's update_mamba_state_after_mtp_verify commits
the accepted step through the stack), in CUDA graphs too where the stack
declares graph_verify (each graph keeps its slots, verify rows and gather:
_LinearRows).

For an encoder-decoder model (is_encoder_decoder) the batch carries the
encoder lengths and slots, and cross-attention layers attend over each
request's encoder tokens; see _init_enc_dec.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _abi as A
from .backend import Backend, Batch, DualChunk, Layer, LinearInputs, bind_alloc_forwards
from .host import Host, Model
from .errors import Error, InvalidArgumentError

log = logging.getLogger("sglattn.sglang")

OVERRIDE_ENV = "SGLATTN_SGLANG_OVERRIDE"

def _base_class() -> Any:
    """sglang's AttentionBackend when sglang is importable; the module still
    imports without it (object)."""
    try:
        from sglang.srt.layers.attention.base_attn_backend import AttentionBackend
    except ImportError:  # pragma: no cover - exercised only without sglang
        return object
    return AttentionBackend


_Base: Any = _base_class()

_host_lock = threading.Lock()
_HOST: Optional[Host] = None


def host() -> Host:
    """The process's Host (opened once; SGL_ATTN_PLUGIN_PATH, SGL_ATTN_CONF
    and the other variables apply as for attnctl)."""
    global _HOST
    with _host_lock:
        if _HOST is None:
            _HOST = Host()
        return _HOST


# ------------------------------------------------------------------- register
def _full_plugins(h: Host) -> List[Any]:
    return [p for p in h.plugins() if p.usable and p.role == "full" and p.name]


def backend_names(h: Optional[Host] = None) -> List[str]:
    """The names register() adds: `sglattn`, then `sglattn_<plugin>`."""
    h = h or host()
    return ["sglattn"] + [f"sglattn_{p.name}" for p in _full_plugins(h)]


def _factory(name: str, plugin: Optional[str]) -> Callable[[Any], "SglAttnBackend"]:
    def create(runner: Any) -> "SglAttnBackend":
        return SglAttnBackend(runner, backend=plugin, name=name)

    create.__name__ = f"create_{name}_backend"
    create._sglattn = True  # type: ignore[attr-defined]
    return create


def register() -> List[str]:
    """Register the backends with sglang (idempotent); returns the names
    registered.  sglang's own names are left alone unless listed in
    SGLATTN_SGLANG_OVERRIDE."""
    from sglang.srt import server_args
    from sglang.srt.layers.attention import attention_registry as reg

    h = host()
    wanted: List[Tuple[str, Optional[str]]] = [("sglattn", None)]
    wanted += [(f"sglattn_{p.name}", p.name) for p in _full_plugins(h)]
    override = [n.strip() for n in os.environ.get(OVERRIDE_ENV, "").split(",") if n.strip()]
    if override == ["aliases"]:
        override = sorted({a for p in _full_plugins(h) for a in p.aliases})
    done: List[str] = []
    for name, plugin in wanted + [(n, n) for n in override]:
        existing = reg.ATTENTION_BACKENDS.get(name)
        ours = existing is not None and getattr(existing, "_sglattn", False)
        if existing is not None and not ours:
            if name not in override:
                log.warning("sglattn: sglang already has an attention backend named %r; left as it is "
                            "(%s=%s replaces it)", name, OVERRIDE_ENV, name)
                continue
            log.warning("sglattn: replacing sglang's attention backend %r with the sglattn stack for it "
                        "(%s)", name, OVERRIDE_ENV)
        if not ours:
            reg.register_attention_backend(name)(_factory(name, plugin))
        done.append(name)
    new = [n for n in done if n not in server_args.ATTENTION_BACKEND_CHOICES]
    if new:
        server_args.add_attention_backend_choices(new)
    _install_hybrid_wrapper(reg)
    return done


def hybrid_backend(runner: Any, full_attn_backend: Any) -> Any:
    """sglang's HybridLinearAttnBackend around one of our backends that
    serves the linear layers too (its linear_backend in the place of sglang's
    GDN backend), else None."""
    lin = getattr(full_attn_backend, "linear_backend", None)
    if not isinstance(full_attn_backend, SglAttnBackend) or lin is None:
        return None
    return _hybrid_class()(full_attn_backend, lin, list(full_attn_backend.full_layers or []))


_HYBRID_CLASSES: Dict[Any, Any] = {}


def _hybrid_class() -> Any:
    """sglang's HybridLinearAttnBackend with update_mamba_state_after_mtp_verify
    (what sglang calls after a verify to commit each request's accepted
    draft in every linear layer) going through the stack
    (SglAttnBackend.commit_linear_verify): made once per sglang class."""
    from sglang.srt.layers.attention.hybrid_linear_attn_backend import HybridLinearAttnBackend
    cls = _HYBRID_CLASSES.get(HybridLinearAttnBackend)
    if cls is None:
        def update_mamba_state_after_mtp_verify(self: Any, last_correct_step_indices: Any,
                                                mamba_track_indices: Any = None, mamba_steps_to_track: Any = None,
                                                model: Any = None, req_pool_indices: Any = None) -> None:
            self.full_attn_backend.commit_linear_verify(last_correct_step_indices, mamba_track_indices,
                                                        mamba_steps_to_track)

        cls = type("SglAttnHybridLinearAttnBackend", (HybridLinearAttnBackend,),
                   {"update_mamba_state_after_mtp_verify": update_mamba_state_after_mtp_verify,
                    "__doc__": "sglang's hybrid backend whose linear layers (and their verify commit) run on an "
                               "sglattn stack.", "__module__": __name__})
        _HYBRID_CLASSES[HybridLinearAttnBackend] = cls
    return cls


def _install_hybrid_wrapper(reg: Any) -> None:
    """sglang wraps every registered backend of a hybrid model in its
    HybridLinearAttnBackend with its own linear backend (attn_backend_wrapper,
    which model_runner imports by name).  Wrap that function once: a backend
    of ours that serves the linear layers gets the hybrid wrapper with its
    own linear backend; anything else goes to sglang's function unchanged."""
    found = getattr(reg, "attn_backend_wrapper", None)
    if found is None or getattr(found, "_sglattn", False):
        return
    original: Callable[[Any, Any], Any] = found

    def attn_backend_wrapper(runner: Any, full_attn_backend: Any) -> Any:
        ours = hybrid_backend(runner, full_attn_backend)
        return ours if ours is not None else original(runner, full_attn_backend)

    attn_backend_wrapper._sglattn = True  # type: ignore[attr-defined]
    attn_backend_wrapper._sglattn_original = original  # type: ignore[attr-defined]
    reg.attn_backend_wrapper = attn_backend_wrapper
    runner_mod = sys.modules.get("sglang.srt.model_executor.model_runner")
    if runner_mod is not None and getattr(runner_mod, "attn_backend_wrapper", None) is original:
        setattr(runner_mod, "attn_backend_wrapper", attn_backend_wrapper)


# ------------------------------------------------------------------- helpers
def _torch() -> Any:
    import torch
    return torch


_TORCH_KV = {"auto": None, "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "bf16": "bfloat16",
             "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}


def _config_dict(hf_config: Any) -> Dict[str, Any]:
    if isinstance(hf_config, dict):
        return dict(hf_config)
    to_dict = getattr(hf_config, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"model_config.hf_config is a {type(hf_config).__name__}: expected a dict or a "
                        f"PretrainedConfig")
    d: Dict[str, Any] = to_dict()
    return d


def _mode_kind(fm: Any) -> str:
    """sglang ForwardMode -> "idle" | "decode" | "verify" | "extend"."""
    if fm.is_idle():
        return "idle"
    if fm.is_decode():
        return "decode"
    if fm.is_target_verify():
        return "verify"
    name = getattr(fm, "name", str(fm))
    if name in ("EXTEND", "MIXED", "SPLIT_PREFILL", "DRAFT_EXTEND", "DRAFT_EXTEND_V2"):
        return "extend"
    raise NotImplementedError(f"sglattn: forward mode {name} is not supported (served: EXTEND, MIXED, "
                              f"SPLIT_PREFILL, DRAFT_EXTEND, DECODE, TARGET_VERIFY, IDLE)")


# sglang's AttentionType values -> the ABI's attn_type (anything but causal
# needs the stack's attn_types).
_ATTN_TYPES = {"decoder": "causal", "decoder_bidirectional": "bidirectional", "encoder_only": "encoder_only"}

# Keyword arguments sglang may pass to a forward, and why the stack cannot
# honour them (sinks is taken when the stack serves sinks).
_LSE = ("sglattn: mha_return_lse (the softmax LSE of each row): {why}")

_REFUSED_KWARGS = {
    "q_rope": "MLA's split rope part of q, passed to a model that is not MLA (no kv_lora_rank in its config)",
    "k_rope": "MLA's split rope part of k, passed to a model that is not MLA (no kv_lora_rank in its config)",
    "cos_sin_cache": "fused rotary embedding inside attention",
    "is_neox": "fused rotary embedding inside attention",
    "llama_4_scaling": "Llama 4 attention temperature scaling",
    "score_mod": "a score modifier callable",
    "aux_tensors": "auxiliary tensors of a score modifier",
    "rel_bias": "a relative position bias",
    "q_descale": "fp8 q/k/v descale tensors",
    "k_descale": "fp8 q/k/v descale tensors",
    "v_descale": "fp8 q/k/v descale tensors",
    "idx_q": "a sparse indexer's inputs",
    "idx_k": "a sparse indexer's inputs",
    "idx_v": "a sparse indexer's inputs",
}


# The query variants sglang's DualChunkRotaryEmbedding lays side by side in
# each row of q, in this order (tests/python/sglang/srt/layers/rotary_embedding.py
# holds the facts): the kernel takes the first three; the two "critical"
# ones only pick the sparse prefill's pattern, which is refused.
_DCA_VARIANTS = ("intra", "succ", "inter", "succ_critical", "inter_critical")


def _refuse_dual_chunk(model: Model) -> None:
    """What dual chunk attention through this adapter does not serve, said
    before selection (whose verdicts say it less directly)."""
    if int(model.dca_sparse):
        raise NotImplementedError(
            f"sglattn: dual chunk attention with sparse_attention_enabled (or a sparse_attention_config) in "
            f"dual_chunk_attention_config: prompts above {int(model.dca_sparse_threshold)} tokens would be "
            f"prefilled with MInference's vertical-slash pattern, which no sglattn plugin computes (it needs the "
            f"per-head pattern config and sglang's 'critical' query variants); set \"sparse_attention_enabled\": "
            f"false in dual_chunk_attention_config for dense dual chunk attention (docs/dual_chunk.md)")


def _dual_chunk_queries(q: Any, heads: int, head_dim: int) -> Tuple[Any, Any, Any]:
    """sglang's q for a dual chunk layer, [tokens, 5 * heads * head_dim]
    (_DCA_VARIANTS side by side), as the three [tokens, heads, head_dim]
    views the ABI takes: q, q_succ, q_inter.  Views, not copies (each head
    row contiguous, the token stride five rows wide); reshape copies only a
    q whose rows are not contiguous."""
    n = len(_DCA_VARIANTS)
    t = int(q.shape[0]) if q.dim() else 0
    if q.dim() < 2 or q.numel() != t * n * heads * head_dim:
        raise NotImplementedError(
            f"sglattn: dual chunk attention: q has shape {list(q.shape)}; expected sglang's {n} query variants "
            f"side by side, [tokens, {n} * {heads} heads * {head_dim}] ({', '.join(_DCA_VARIANTS)}, as "
            f"DualChunkRotaryEmbedding returns them)")
    q5 = q.reshape(t, n, heads, head_dim)
    return q5[:, 0], q5[:, 1], q5[:, 2]


# --------------------------------------------------------------------- backend
class SglAttnBackend(_Base):  # type: ignore[misc]  # sglang's class, found at import
    """An sglang AttentionBackend running a libsglattn stack.

    `backend` names the plugin (or sglang alias) the host should choose;
    None lets the host choose.  The stack is created for the runner's pools:
    max_reqs = the request pool's rows, max_context = its columns,
    max_tokens = the largest batch the server args allow."""

    needs_cpu_seq_lens = True

    def __init__(self, model_runner: Any, backend: Optional[str] = None, name: str = "sglattn",
                 host_: Optional[Host] = None) -> None:
        torch = _torch()
        self.runner = model_runner
        self.name = name
        self.token_to_kv_pool = model_runner.token_to_kv_pool
        self.req_to_token_pool = model_runner.req_to_token_pool
        self.device = model_runner.device
        self.page_size = int(model_runner.page_size)
        sa = model_runner.server_args
        mc = model_runner.model_config
        enc_dec = bool(getattr(mc, "is_encoder_decoder", False))
        self.host = host_ or host()
        model = Model.load(_config_dict(mc.hf_config), tp_size=int(getattr(model_runner, "tp_size", 1) or 1))
        if enc_dec:
            model.is_encoder_decoder = 1  # selection asks for a plugin that serves cross attention
        dual_chunk = int(model.dca_chunk_size) > 0
        mla = bool(int(model.is_mla))
        if bool(getattr(model_runner, "use_mla_backend", False)) != mla:
            raise NotImplementedError(f"sglattn: the runner's use_mla_backend is "
                                      f"{bool(getattr(model_runner, 'use_mla_backend', False))} but the model config "
                                      f"{'is' if mla else 'is not'} MLA (kv_lora_rank); the pool would not match")
        if dual_chunk:
            _refuse_dual_chunk(model)
        model.page_size = self.page_size
        model.dtype = str(model_runner.dtype)
        kv = model_runner.kv_cache_dtype
        kv = _TORCH_KV.get(kv, kv) if isinstance(kv, str) else kv
        model.kv_dtype = str(kv if kv is not None else model_runner.dtype)
        model.is_draft = int(bool(getattr(model_runner, "is_draft_worker", False)))
        self.draft_tokens = int(getattr(sa, "speculative_num_draft_tokens", 0) or 0)
        if self.draft_tokens > 1:
            model.spec_tokens = self.draft_tokens
        self.graphs = not getattr(sa, "disable_cuda_graph", True) and str(self.device).startswith("cuda")
        r2t = self.req_to_token_pool.req_to_token
        max_tokens = max([int(v) for v in (getattr(sa, "max_prefill_tokens", 0), getattr(sa, "chunked_prefill_size", 0),
                                          r2t.shape[0] * max(self.draft_tokens, 1)) if v] + [1])
        sizes = dict(max_reqs=int(r2t.shape[0]), max_tokens=max_tokens, max_context=int(r2t.shape[1]))
        self.full_layers: Optional[List[int]] = None
        self.linear_backend: Optional[SglAttnLinearBackend] = None
        self.linear_refusal = ""
        self._lin_layers: Dict[int, Layer] = {}
        self._lin_cache: Dict[int, _LinearLayer] = {}
        self._verify_scratch: Optional[Tuple[Any, Any]] = None
        # the verify batch whose rows the next linear forwards use and the commit reads
        self._lin_verify: Optional[_LinearRows] = None
        # per captured graph (the _graph_batches key): its batch's slots, verify rows and gather
        self._graph_lin: Dict[Tuple[int, int], _LinearRows] = {}
        self._graph_fill = 1
        self._mamba_pool: Any = None
        created = self._create_hybrid(model, backend, sizes) if model.is_hybrid else None
        if created is None:
            if model.is_hybrid:
                log.info("sglattn: the linear-attention layers of %s stay with sglang's own backend: %s",
                         model.model_type, self.linear_refusal)
                # sglang runs the linear layers itself (HybridLinearAttnBackend wraps
                # this backend); the stack serves the full-attention layers only.
                self.full_layers = model.full_attention_layers
                model = model.as_full_attention_only()
            self.selection = self.host.select(model, backend=backend, cuda_graph=self.graphs)
            self.backend: Backend = self.selection.create(**sizes)
        self.model = model
        self.stack = self.selection.stack
        self.out_dtype = model_runner.dtype
        self._layers: Dict[int, Layer] = {}
        self._eager = Batch("idle")
        self._batch: Optional[Batch] = None
        self._graph_batches: Dict[Tuple[int, int], Batch] = {}
        self._bind_pending: Optional[Batch] = None
        self._verify_lens: Any = None
        self._mask_indptr: Any = None
        # sglang captures verify batches in graphs where the stack says it can
        # (SGL_ATTN_FEAT_GRAPH_VERIFY); else it runs them eagerly.  With the linear
        # layers served here too, their verify rows and state gather are derived
        # inside the graph from each graph's own slot buffer (_LinearRows)
        self.supports_target_verify_cuda_graph = "graph_verify" in self.backend.features
        self._torch = torch
        self._rows = 0
        self._planned: Any = None
        self._dev = torch.device(self.device)
        bind_alloc_forwards()
        self.forwards: Optional[Callable[..., Any]] = None  # what _use_forwards put in place
        if dual_chunk:
            self._init_dual_chunk()
        self._mla = mla
        if mla:
            self._init_mla()
        self.enc_dec = enc_dec
        self._enc_loc_passed = False
        if enc_dec:
            self._init_enc_dec()
        log.info("sglattn: %s runs %s for %s", name, self.selection.label, model.model_type or model.name)

    # ---------------------------------------------------------------- hybrid
    def _create_hybrid(self, model: Model, backend: Optional[str], sizes: Dict[str, int]) -> Optional[Backend]:
        """A hybrid model whose linear state sglang keeps in a MambaPool:
        select the whole model and, when the stack keeps linear state in the
        caller's tensors (caller_state) and the kind is gdn (the call of
        sglang's GDN backend this adapter takes), serve the linear layers on
        the pool's tensors.  Returns the created backend, or None (the reason
        in linear_refusal) to serve the full-attention layers only."""
        pool = getattr(self.req_to_token_pool, "mamba_pool", None)
        if model.hybrid_kind_name != "gdn":
            self.linear_refusal = f"its linear kind {model.hybrid_kind_name} is not taken from sglang (gdn is)"
            return None
        if pool is None:
            self.linear_refusal = "the runner's request pool has no mamba_pool"
            return None
        conv_dt, ssm_dt = pool.mamba_cache.conv[0].dtype, pool.mamba_cache.temporal.dtype
        if conv_dt != ssm_dt:
            self.linear_refusal = (f"the MambaPool keeps its conv state in {conv_dt} and its temporal (SSM) state in "
                                   f"{ssm_dt}; a wrapper keeps both in one dtype (lin_state_dtype)")
            return None
        model.lin_state_dtype = str(ssm_dt)
        try:
            sel = self.host.select(model, backend=backend, cuda_graph=self.graphs)
            be: Backend = sel.create(**sizes)
        except Error as e:
            self.linear_refusal = f"no stack serves the whole model with its state in {model.lin_state_dtype} ({e})"
            return None
        if "caller_state" not in be.features:
            self.linear_refusal = (f"the stack {sel.label} does not keep linear state in the engine's tensors "
                                   f"(SGL_ATTN_FEAT_CALLER_STATE)")
            be.close()
            return None
        self.selection = sel
        self.backend = be
        self.full_layers = model.full_attention_layers
        self.linear_backend = SglAttnLinearBackend(self)
        self._mamba_pool = pool
        log.info("sglattn: %s also runs the linear-attention layers of %s on sglang's MambaPool (state in %s)",
                 sel.label, model.model_type, ssm_dt)
        return be

    def _mamba_indices(self, fb: Any) -> Any:
        """Each request's slot in the MambaPool (sglang's get_mamba_indices,
        translated where the pool translates), -1 for a padded row."""
        pool = self.req_to_token_pool
        idx = pool.get_mamba_indices(fb.req_pool_indices)
        translate = getattr(pool, "translate_mamba_indices", None)
        return translate(idx) if translate is not None else idx

    def _linear_entry(self, layer: Any, lid: int, mc: Any) -> "_LinearLayer":
        """A linear layer's cached call: its Layer and one LinearInputs over
        the layer's MambaPool tensors and weights, made when the layer is
        first seen and again when the pool's tensors (mc.conv[0],
        mc.temporal) or the layer object are replaced; each call then only
        points x, a, b and out at its own tensors."""
        if self.linear_backend is None:
            raise NotImplementedError(self._linear_refused(lid))
        if self.full_layers is not None and lid in self.full_layers:
            raise NotImplementedError(f"sglattn: layer {lid} is a full-attention layer; a linear-attention call "
                                      f"(mixed_qkv, a, b) reached it")
        act = getattr(layer, "activation", "silu")
        if act not in ("silu", "swish"):
            raise NotImplementedError(f"sglattn: linear-attention layer {lid} uses conv activation {act!r}; the gdn "
                                      f"wrapper applies SiLU")
        cache = self.req_to_token_pool.mamba2_layer_cache(lid)
        weights = dict(conv_weight=layer.conv_weights, conv_bias=getattr(layer, "bias", None), A_log=layer.A_log,
                       dt_bias=layer.dt_bias)
        L = self._lin_layers.get(lid)
        if L is None:
            L = self._lin_layers[lid] = self.backend.layer(lid, None, None)
        e = _LinearLayer(layer, mc.conv[0], mc.temporal, L,
                         LinearInputs("gdn", conv_state=cache.conv[0], ssm_state=cache.temporal, **weights))
        inter = getattr(cache, "intermediate_ssm", None)
        if inter is not None:
            # verify: the state before the drafts is gathered into rows of a scratch shaped like one layer's
            # intermediates without the step axis, since sglang indexes its intermediates by batch row, the
            # main state by slot, and the ABI indexes both by one index (docs/python.md, "sglang")
            conv_i = cache.intermediate_conv_window[0]
            sc = self._verify_scratch
            if sc is None or sc[0].shape[0] != conv_i.shape[0] or sc[0].dtype != conv_i.dtype or \
                    sc[0].device != conv_i.device:
                torch = self._torch
                sc = self._verify_scratch = (
                    torch.zeros((conv_i.shape[0],) + tuple(conv_i.shape[2:]), dtype=conv_i.dtype,
                                device=conv_i.device),
                    torch.zeros((inter.shape[0],) + tuple(inter.shape[2:]), dtype=inter.dtype, device=inter.device))
            e.verify = LinearInputs("gdn", keep_intermediate=True, conv_state=sc[0], ssm_state=sc[1],
                                    intermediate_conv_state=conv_i, intermediate_ssm_state=inter, **weights)
            e.main = (cache.conv[0], cache.temporal)
        self._lin_cache[lid] = e
        return e

    def forward_linear(self, layer: Any, forward_batch: Any, mixed_qkv: Any, a: Any, b: Any,
                       decode: bool) -> Any:
        """One GDN layer of the hybrid model, as sglang's GDN backend runs it:
        mixed_qkv [T, 2·HK·K + HV·V] before the conv, a and b [T, HV], the
        layer's conv weight and bias, A_log and dt_bias, on the layer's
        MambaPool tensors (conv [S, conv_dim, W-1], temporal [S, HV, V, K])
        as caller-owned state, slots from get_mamba_indices.  Returns the
        core attention output [1, T, HV, V], as sglang's kernels do.  A
        TARGET_VERIFY batch writes the state after each draft token into the
        pool's intermediate_ssm / intermediate_conv_window at the request's
        batch row, as sglang's GDN backend does, and leaves the main state
        alone (update_mamba_state_after_mtp_verify commits it)."""
        lid = layer.layer_id
        e = self._lin_cache.get(lid)
        mc = self._mamba_pool.mamba_cache
        if e is None or e.layer is not layer or e.conv_all is not mc.conv[0] or e.ssm_all is not mc.temporal:
            e = self._linear_entry(layer, int(lid), mc)
        out = self._torch.empty((self._rows, layer.num_v_heads, layer.head_v_dim), dtype=mixed_qkv.dtype,
                                device=mixed_qkv.device)
        if forward_batch.forward_mode.is_target_verify():
            lin = self._verify_inputs(e, int(lid), forward_batch)
            lin.set("out", out)
            lin.set("x", mixed_qkv)
            lin.set("a", a)
            lin.set("b", b)
            self.backend.forward_extend(e.L, None, None, None, None, linear=lin)
            return out.unsqueeze(0)
        lin = e.lin
        lin.set("out", out)
        lin.set("x", mixed_qkv)
        lin.set("a", a)
        lin.set("b", b)
        (self.backend.forward_decode if decode else self.backend.forward_extend)(e.L, None, None, None, None,
                                                                                 linear=lin)
        return out.unsqueeze(0)

    def _verify_inputs(self, e: "_LinearLayer", lid: int, fb: Any) -> LinearInputs:
        """A verify call's LinearInputs for one layer: the batch's states
        gathered into the scratch rows (request i at row i, a padded request
        at row -1), the layer's intermediates at the same rows."""
        lin = e.verify
        if lin is None:
            raise NotImplementedError(
                f"sglattn: target verify on linear-attention layer {lid}: the MambaPool keeps no intermediate_ssm / "
                f"intermediate_conv_window (sglang allocates them when it runs with speculative_num_draft_tokens)")
        spec = fb.spec_info
        if int(getattr(spec, "topk", 1) or 1) > 1:
            raise NotImplementedError(
                f"sglattn: tree verify (speculative topk {spec.topk} > 1) on linear-attention layer {lid}: the "
                f"linear state follows one chain of draft tokens (sgl_attn_linear_io); chains (topk 1) are served")
        rec = self._lin_verify
        if rec is None:
            raise Error(f"sglattn: a verify forward of linear-attention layer {lid} with no verify batch planned "
                        f"(init_forward_metadata or the graph hooks) before it", "forward_extend")
        torch = self._torch
        n = rec.rows.shape[0]
        conv, ssm = e.main
        sc_conv, sc_ssm = lin.tensor("conv_state"), lin.tensor("ssm_state")  # the scratch it was made with
        if n > sc_conv.shape[0]:
            raise NotImplementedError(f"sglattn: a verify batch of {n} requests; the MambaPool's intermediate states "
                                      f"hold {sc_conv.shape[0]} rows (spec_state_size + 1)")
        # device ops at fixed addresses: a graph captured here replays them on its own rows
        torch.index_select(conv, 0, rec.gather, out=sc_conv[:n])
        torch.index_select(ssm, 0, rec.gather, out=sc_ssm[:n])
        lin.set("state_indices", rec.rows)
        return lin

    def _graph_slots(self, key: Tuple[int, int], fb: Any, bs: int, capture: bool) -> "_LinearRows":
        """Outside the graph (capture, and before each replay): the graph's
        slot buffer refilled with the batch's MambaPool slots, -1 for its
        padded requests, with device operations only (no host read, so a
        replay does not wait for the GPU).  sglang's graph runner pads a
        batch with requests of seq_lens = the fill value whose out_cache_loc
        entries are 0, the padding slot no live token is given; a padded
        request is one with both (the fill value alone would also catch a
        live request of that length).  Two padded requests would otherwise
        name one slot, which a plan refuses."""
        torch = self._torch
        rec = self._graph_lin.get(key)
        if rec is None or capture:
            rec = self._graph_lin[key] = _LinearRows(
                torch, torch.full((bs,), -1, dtype=torch.int32, device=fb.req_pool_indices.device))
        pad = fb.seq_lens[:bs] == self._graph_fill
        ocl = getattr(fb, "out_cache_loc", None)  # the older capture method has none: every request is padding
        per = int(fb.spec_info.draft_token_num) if fb.forward_mode.is_target_verify() else 1
        if ocl is not None and int(ocl.shape[0]) >= bs * per:
            pad &= ocl[0:bs * per:per] == 0
        rec.slots.copy_(self._mamba_indices(fb)[:bs].masked_fill(pad, -1))
        return rec

    def commit_linear_verify(self, last_correct_step_indices: Any, mamba_track_indices: Any = None,
                             mamba_steps_to_track: Any = None) -> None:
        """sglang's update_mamba_state_after_mtp_verify through the stack:
        for request i of the last verify batch, the state after its draft
        token last_correct_step_indices[i] becomes its slot's state (-1
        keeps it), and with radix tracking the state after draft
        mamba_steps_to_track[i] goes to slot mamba_track_indices[i] (-1:
        none).  Per layer, state_batch's commit moves the chosen step into
        the scratch row, and the row is copied to the slot; an entry that
        commits nothing writes sglang's padding slot 0 instead."""
        rec = self._lin_verify
        if rec is None:
            raise Error("sglattn: update_mamba_state_after_mtp_verify without a verify batch of linear layers "
                        "before it", "update_mamba_state_after_mtp_verify")
        torch = self._torch
        steps = last_correct_step_indices
        n = int(steps.shape[0])
        rows = rec.rows[:n]
        slots = rec.slots[:n].to(torch.int64)
        dst = torch.where((slots >= 0) & (steps >= 0), slots, 0)
        track = None
        if mamba_track_indices is not None:
            if mamba_steps_to_track is None:
                raise InvalidArgumentError("sglattn: mamba_track_indices without mamba_steps_to_track")
            tix = mamba_track_indices[:n]
            translate = getattr(self.req_to_token_pool, "translate_mamba_indices", None)
            if translate is not None:
                tix = translate(tix)
            tsteps = mamba_steps_to_track[:n]
            track = (tsteps, torch.where((tix >= 0) & (tsteps >= 0), tix.to(torch.int64), 0))
        for e in self._lin_cache.values():
            if e.verify is None:
                continue
            conv, ssm = e.main
            sc_conv, sc_ssm = e.verify.tensor("conv_state"), e.verify.tensor("ssm_state")
            for st, to in ((steps, dst),) + ((track,) if track is not None else ()):
                self.backend.state_batch("commit", rows, steps=st, state=e.verify, stream=self._stream())
                conv.index_copy_(0, to, sc_conv[:n])
                ssm.index_copy_(0, to, sc_ssm[:n])
        self._lin_verify = None

    def _linear_refused(self, lid: int) -> str:
        why = self.linear_refusal or "this backend serves full attention only"
        return (f"sglattn: layer {lid} is a linear-attention layer of {self.model.model_type}; this backend serves "
                f"the full-attention layers {self.full_layers} (sglang's hybrid backend runs the linear ones: "
                f"{why})")

    # ------------------------------------------------------------- metadata
    def _fill(self, batch: Batch, fb: Any, kind: str, bs: Optional[int] = None, replay: bool = False,
              slots: Any = None) -> Batch:
        """Refill `batch` from an sglang ForwardBatch.  replay: `batch` is a
        captured graph's, refilled for a replay (its tree mask stays at the
        captured address, docs/abi.md).  slots: the linear layers' slot of
        each request (a graph's buffer, _graph_slots); else sglang's."""
        torch = self._torch
        bs = fb.batch_size if bs is None else bs
        r2t = self.req_to_token_pool.req_to_token
        common = dict(req_pool_indices=fb.req_pool_indices, out_cache_loc=fb.out_cache_loc,
                      positions=fb.positions, page_size=self.page_size, batch_size=bs)
        if self.linear_backend is not None:
            common["state_indices"] = slots if slots is not None else self._mamba_indices(fb)
        enc = getattr(fb, "encoder_lens", None)
        if enc is not None:
            self._encoder_fields(common, fb, enc, bs)
        if kind == "decode":
            return batch.update("decode", r2t, seq_lens=fb.seq_lens, seq_lens_cpu=fb.seq_lens_cpu,
                                seq_lens_sum=int(fb.seq_lens_sum), num_tokens=bs, **common)
        if kind == "verify":
            spec = fb.spec_info
            if spec is None:
                raise NotImplementedError("sglattn: a TARGET_VERIFY batch without spec_info")
            n = int(spec.draft_token_num)
            tree: Dict[str, Any] = {}
            if int(getattr(spec, "topk", 1) or 1) > 1:
                if "tree_mask" not in self.backend.features:
                    raise NotImplementedError(f"sglattn: tree verify (speculative topk {spec.topk} > 1) needs "
                                              f"spec_info.custom_mask; the stack {self.selection.label} does not "
                                              f"declare tree_mask (SGL_ATTN_FEAT_TREE_MASK); chains (topk 1) "
                                              f"are served")
                # sglang's mask: request i's [n, seq_len_i + n] bools, row-major, concatenated.  Our
                # seq_lens count the draft tokens, so the block is [n, seq_lens_ours[i]] as the ABI says.
                rows = (fb.seq_lens[:bs] + n) * n
                # one buffer for every batch, so a graph's mask_indptr keeps its address
                if self._mask_indptr is None or self._mask_indptr.shape[0] < bs + 1 or \
                        self._mask_indptr.device != rows.device:
                    self._mask_indptr = torch.zeros(bs + 1, dtype=torch.int64, device=rows.device)
                indptr = self._mask_indptr[:bs + 1]
                indptr[:1].zero_()
                torch.cumsum(rows, 0, dtype=torch.int64, out=indptr[1:])
                mask = spec.custom_mask
                cap = batch.tensor("custom_mask") if replay else None
                if cap is not None and cap is not mask:
                    # sglang replays with the live batch's mask: into the captured buffer
                    live, room = mask.reshape(-1), cap.view(-1)
                    if live.numel() > room.numel():
                        raise Error(f"sglattn: a verify replay's custom_mask holds {live.numel()} entries, more "
                                    f"than the {room.numel()} of the one captured", "init_forward_metadata_replay")
                    room[:live.numel()].copy_(live)
                    mask = cap
                tree = {"custom_mask": mask, "mask_indptr": indptr}
            if self._verify_lens is None or self._verify_lens.shape[0] < bs or \
                    self._verify_lens.device != fb.seq_lens.device:
                self._verify_lens = torch.zeros(max(bs, 1), dtype=torch.int32, device=fb.seq_lens.device)
            # sglang's seq_lens exclude the draft tokens; the ABI's include them
            lens = self._verify_lens[:bs]
            torch.add(fb.seq_lens[:bs], n, out=lens)
            cpu = None if fb.seq_lens_cpu is None else (fb.seq_lens_cpu[:bs] + n)
            return batch.update("verify", r2t, seq_lens=lens, seq_lens_cpu=cpu, tokens_per_req=n,
                                seq_lens_sum=int(fb.seq_lens_sum) + bs * n, num_tokens=bs * n, **tree, **common)
        ext = fb.extend_seq_lens
        if ext is None:
            raise NotImplementedError(f"sglattn: an extend batch ({fb.forward_mode.name}) without extend_seq_lens")
        return batch.update("extend", r2t, seq_lens=fb.seq_lens, seq_lens_cpu=fb.seq_lens_cpu,
                            extend_prefix_lens=fb.extend_prefix_lens, extend_seq_lens=ext,
                            extend_prefix_lens_cpu=fb.extend_prefix_lens_cpu,
                            extend_seq_lens_cpu=fb.extend_seq_lens_cpu, seq_lens_sum=int(fb.seq_lens_sum), **common)

    def init_forward_metadata(self, forward_batch: Any) -> None:
        self._planned = forward_batch
        kind = _mode_kind(forward_batch.forward_mode)
        if kind == "idle":
            self._batch = None
            return
        self._bind_pending = None
        self._batch = self._fill(self._eager, forward_batch, kind)
        self._rows = self._batch.num_tokens
        self.backend.init_forward_metadata(self._batch)
        self._lin_verify = None
        if self.linear_backend is not None and kind == "verify":
            self._lin_verify = _LinearRows(self._torch, self._batch.tensor("state_indices")).derive()
        if self._mla:
            self._mla_plan(forward_batch, kind)

    # --------------------------------------------------------------- forward
    def _layer(self, layer: Any) -> Layer:
        lid = int(layer.layer_id)
        if self.full_layers is not None and lid not in self.full_layers:
            if self.linear_backend is not None:
                raise NotImplementedError(f"sglattn: layer {lid} is a linear-attention layer; its calls go through "
                                          f"linear_backend (mixed_qkv, a, b), not q/k/v")
            raise NotImplementedError(self._linear_refused(lid))
        if layer.is_cross_attention and not self.enc_dec:
            raise NotImplementedError(f"sglattn: layer {lid} is a cross-attention layer, but the model config is not "
                                      f"encoder-decoder (is_encoder_decoder): there are no encoder_lens to attend over")
        attn_type = getattr(getattr(layer, "attn_type", None), "value", "decoder")
        abi_type = _ATTN_TYPES.get(attn_type)
        if abi_type is None:
            raise NotImplementedError(f"sglattn: layer {lid} has attn_type {attn_type!r}; served: "
                                      f"{', '.join(_ATTN_TYPES)}")
        if abi_type != "causal" and "attn_types" not in self.backend.features:
            raise NotImplementedError(f"sglattn: layer {lid} has attn_type {attn_type!r} ({abi_type} attention): the "
                                      f"stack {self.selection.label} does not declare attn_types "
                                      f"(SGL_ATTN_FEAT_ATTN_TYPES)")
        if getattr(layer, "use_irope", False):
            raise NotImplementedError(f"sglattn: layer {lid} uses chunked local attention (use_irope); not served")
        if getattr(layer, "xai_temperature_len", -1) > 0:
            raise NotImplementedError(f"sglattn: layer {lid} uses xai_temperature_len; not served")
        cap = float(getattr(layer, "logit_cap", 0.0) or 0.0)
        if cap > 0 and getattr(layer, "logit_capping_method", "tanh") != "tanh":
            raise NotImplementedError(f"sglattn: layer {lid} caps logits with {layer.logit_capping_method!r}; "
                                      f"only tanh soft-capping is served")
        ks = getattr(layer, "k_scale_float", None)
        vs = getattr(layer, "v_scale_float", None)
        pool = self.token_to_kv_pool
        L = self.backend.layer(lid, pool.get_key_buffer(lid), pool.get_value_buffer(lid),
                               num_q_heads=layer.tp_q_head_num, num_kv_heads=layer.tp_k_head_num,
                               head_dim_qk=layer.qk_head_dim, head_dim_v=layer.v_head_dim, sm_scale=layer.scaling,
                               logit_softcap=cap, sliding_window=getattr(layer, "sliding_window_size", -1),
                               k_scale=1.0 if ks is None else float(ks), v_scale=1.0 if vs is None else float(vs),
                               is_cross=bool(layer.is_cross_attention), attn_type=abi_type)
        L.cols = layer.tp_q_head_num * layer.v_head_dim
        self._layers[lid] = L
        return L

    def _forward_lse(self, L: Layer, q: Any, k: Any, v: Any, fb: Any, save_kv_cache: bool, decode: bool) -> Any:
        """sglang's mha_return_lse: the output and each row's softmax
        log-sum-exp, [tokens, q heads] fp32 (forward_args.lse), as (out, lse)."""
        if "lse" not in self.backend.features:
            raise NotImplementedError(_LSE.format(
                why=f"the stack {self.selection.label} does not declare lse (SGL_ATTN_FEAT_LSE)"))
        if getattr(fb, "attn_attend_prefix_cache", None) is not None:
            raise NotImplementedError(_LSE.format(
                why="with attn_attend_prefix_cache (DeepSeek's chunked-prefix MHA, whose K/V come as tensors, not "
                    "from the pool) this adapter has no paged form; Backend.forward_ragged serves that call"))
        torch = self._torch
        out = getattr(fb, "_attn_output", None)
        if out is None:
            out = torch.empty((self._rows, L.cols), dtype=self.out_dtype, device=self._dev)
        lse = torch.empty((self._rows, int(L.struct.num_q_heads)), dtype=torch.float32, device=self._dev)
        (self.backend.forward_decode if decode else self.backend.forward_extend)(L, q, k, v, out, save_kv_cache,
                                                                                 lse=lse)
        return out, lse

    def _kwargs(self, L: Layer, kwargs: Dict[str, Any], forward_batch: Any) -> None:
        for k, val in kwargs.items():
            if val is None or val is False:
                continue
            if k == "sinks":
                if "sinks" not in self.backend.features:
                    raise NotImplementedError(f"sglattn: sinks: the stack {self.selection.label} does not serve "
                                              f"attention sinks")
                owner = L.sinks.owner if L.sinks is not None else None
                if owner is not val:
                    L.set_sinks(val)
                continue
            if k == "topk_indices":
                if "sparse_mla" not in self.backend.dsa_ops:
                    raise NotImplementedError(f"sglattn: topk_indices (DeepSeek sparse attention's selected "
                                              f"tokens): the stack {self.selection.label} does not declare sparse "
                                              f"MLA (caps.dsa_ops), so it would attend densely")
                L.set_topk(val)
                continue
            why = _REFUSED_KWARGS.get(k, "an argument this adapter does not know")
            raise NotImplementedError(f"sglattn: {k} ({why}) is not supported by the sglattn backend")

    def _prepare(self, L: Optional[Layer], layer: Any, forward_batch: Any, kwargs: Dict[str, Any]) -> Layer:
        """Everything but the common case: a layer seen the first time,
        keyword arguments, an older tree's first captured forward."""
        if L is None:
            L = self._layer(layer)
        if L.topk is not None and "topk_indices" not in kwargs:
            L.set_topk(None)  # indices hold for the call that passed them only
        if kwargs:
            self._kwargs(L, kwargs, forward_batch)
        if self._bind_pending is not None:
            self._bind_graph_batch(forward_batch)
        return L

    def forward_decode(self, q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True,
                       **kwargs: Any) -> Any:
        L = self._layers.get(layer.layer_id)
        if L is None or kwargs or self._bind_pending is not None or L.topk is not None:
            L = self._prepare(L, layer, forward_batch, kwargs)
        if getattr(forward_batch, "mha_return_lse", False):
            return self._forward_lse(L, q, k, v, forward_batch, save_kv_cache, True)
        out = getattr(forward_batch, "_attn_output", None)
        if out is None:
            return self.backend.forward_decode_alloc(L, q, k, v, self._rows, L.cols, self.out_dtype, self._dev,
                                                     save_kv_cache)
        self.backend.forward_decode(L, q, k, v, out, save_kv_cache)
        return out

    def forward_extend(self, q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True,
                       **kwargs: Any) -> Any:
        L = self._layers.get(layer.layer_id)
        if L is None or kwargs or self._bind_pending is not None or L.topk is not None:
            L = self._prepare(L, layer, forward_batch, kwargs)
        if getattr(forward_batch, "mha_return_lse", False):
            return self._forward_lse(L, q, k, v, forward_batch, save_kv_cache, False)
        out = getattr(forward_batch, "_attn_output", None)
        if out is None:
            return self.backend.forward_extend_alloc(L, q, k, v, self._rows, L.cols, self.out_dtype, self._dev,
                                                     save_kv_cache)
        self.backend.forward_extend(L, q, k, v, out, save_kv_cache)
        return out

    def _use_forwards(self, impl: Callable[..., Any]) -> None:
        """Replace forward_extend / forward_decode on this instance (a model
        that needs its own forwards: encoder-decoder, dual chunk, MLA) by
        impl(q, k, v, layer, forward_batch, save_kv_cache, decode, kwargs),
        so the plain path has no check for it."""
        def forward_extend(q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True,
                           **kwargs: Any) -> Any:
            return impl(q, k, v, layer, forward_batch, save_kv_cache, False, kwargs)

        def forward_decode(q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True,
                           **kwargs: Any) -> Any:
            return impl(q, k, v, layer, forward_batch, save_kv_cache, True, kwargs)

        setattr(self, "forward_extend", forward_extend)
        setattr(self, "forward_decode", forward_decode)
        self.forwards = impl

    # ------------------------------------------------------- encoder-decoder
    def _init_enc_dec(self) -> None:
        """An encoder-decoder model (sglang's is_encoder_decoder: mllama,
        whisper): each request's req_to_token row holds its encoder_lens[i]
        encoder tokens first, then its decoder tokens (seq_lens count the
        decoder's), as the ABI's batch does.  Cross layers (is_cross) attend
        over the encoder tokens, non-causally.  Their forwards replace
        forward_extend / forward_decode on this instance only, so the plain
        path has no check for it."""
        if "encoder_loc" not in self.backend.features:
            raise NotImplementedError(
                f"sglattn: encoder-decoder model {self.model.model_type or self.model.name!r}: the stack "
                f"{self.selection.label} does not declare encoder_loc (SGL_ATTN_FEAT_ENCODER_LOC), so its cross layers "
                f"could not save the encoder's K/V at forward_batch.encoder_out_cache_loc")
        self._use_forwards(self._forward_enc_dec)

    def _encoder_fields(self, common: Dict[str, Any], fb: Any, enc: Any, bs: int) -> None:
        """The batch's encoder fields.  sglang's encoder_out_cache_loc covers
        the requests whose encoder is not cached yet, the ABI's every
        request's encoder tokens: it goes to the stack only when the two
        agree (no request cached, or its length is every encoder length's
        sum); otherwise the cross layers save here (_forward_enc_dec)."""
        if not self.enc_dec:
            raise NotImplementedError("sglattn: a batch with encoder_lens for a model whose config is not "
                                      "encoder-decoder (is_encoder_decoder)")
        cpu = getattr(fb, "encoder_lens_cpu", None)
        common["encoder_lens"] = enc
        common["encoder_lens_cpu"] = cpu
        loc = getattr(fb, "encoder_out_cache_loc", None)
        passed = False
        if loc is not None and cpu is not None:
            total = int(cpu[:bs].sum()) if hasattr(cpu, "sum") else sum(int(n) for n in list(cpu)[:bs])
            passed = int(loc.shape[0]) == total
        if passed:
            common["encoder_out_cache_loc"] = loc
        self._enc_loc_passed = passed

    def _forward_enc_dec(self, q: Any, k: Any, v: Any, layer: Any, fb: Any, save_kv_cache: bool, decode: bool,
                         kwargs: Dict[str, Any]) -> Any:
        """A cross layer's call as sglang's backends take it: k and v are the
        encoder's K/V of the requests whose encoder is not cached yet, saved
        at encoder_out_cache_loc (by the stack when the batch carries it,
        else here, with the pool's set_kv_buffer, as sglang's backends save),
        or None once every request's encoder is cached: the layer then only
        reads the encoder's slots."""
        plain = SglAttnBackend.forward_decode if decode else SglAttnBackend.forward_extend
        if not layer.is_cross_attention:
            return plain(self, q, k, v, layer, fb, save_kv_cache, **kwargs)
        if k is None or not save_kv_cache:
            return plain(self, q, None, None, layer, fb, False, **kwargs)
        if self._enc_loc_passed:
            return plain(self, q, k, v, layer, fb, True, **kwargs)
        loc = getattr(fb, "encoder_out_cache_loc", None)
        if loc is None:
            raise NotImplementedError(f"sglattn: cross-attention layer {layer.layer_id} was given the encoder's k / v "
                                      f"to save, but the batch has no encoder_out_cache_loc")
        self.token_to_kv_pool.set_kv_buffer(layer, loc, k, v, getattr(layer, "k_scale", None),
                                            getattr(layer, "v_scale", None))
        return plain(self, q, None, None, layer, fb, False, **kwargs)

    # ------------------------------------------------------ dual chunk attention
    def _init_dual_chunk(self) -> None:
        """A dual chunk model: its forwards split sglang's five-variant q
        (_dual_chunk_queries) and pass forward_args.dual_chunk.  They replace
        forward_extend / forward_decode on this instance only, so the plain
        path has no check for it."""
        if "dual_chunk" not in self.backend.features:
            raise NotImplementedError(f"sglattn: dual chunk attention (dual_chunk_attention_config): the stack "
                                      f"{self.selection.label} does not declare dual_chunk (SGL_ATTN_FEAT_DUAL_CHUNK), "
                                      f"so it would compute plain attention")
        m = self.model
        self._dca_sizes = (int(m.dca_chunk_size), int(m.dca_local_size), int(m.dca_original_max_position))
        self._use_forwards(self._forward_dual_chunk)

    def _forward_dual_chunk(self, q: Any, k: Any, v: Any, layer: Any, fb: Any, save_kv_cache: bool, decode: bool,
                            kwargs: Dict[str, Any]) -> Any:
        L = self._layers.get(layer.layer_id)
        if L is None or kwargs or self._bind_pending is not None or L.topk is not None:
            L = self._prepare(L, layer, fb, kwargs)
        if getattr(fb, "mha_return_lse", False):
            raise NotImplementedError(_LSE.format(why="with dual chunk attention (sglang's dual_chunk_flash_attn "
                                                      "returns no LSE either; the plugins refuse it)"))
        dc = L.dual_chunk
        if dc is None:
            dc = DualChunk(*self._dca_sizes)
            L.set_dual_chunk(dc)
        q_intra, q_succ, q_inter = _dual_chunk_queries(q, int(L.struct.num_q_heads), int(L.struct.head_dim_qk))
        dc.set_queries(q_succ, q_inter)
        out = getattr(fb, "_attn_output", None)
        if out is None:
            alloc = self.backend.forward_decode_alloc if decode else self.backend.forward_extend_alloc
            return alloc(L, q_intra, k, v, self._rows, L.cols, self.out_dtype, self._dev, save_kv_cache)
        (self.backend.forward_decode if decode else self.backend.forward_extend)(L, q_intra, k, v, out,
                                                                                 save_kv_cache)
        return out

    # --------------------------------------------------------------------- MLA
    def _init_mla(self) -> None:
        """An MLA model (DeepSeek-V2/V3 shaped; sglang's use_mla_backend):
        its forwards take sglang's two layers of each attention block.  The
        absorbed layer (attn_mqa: one latent KV head, qk kv_lora_rank +
        qk_rope_head_dim, v kv_lora_rank) runs on the MLATokenToKVPool's
        kv_buffer as k_cache (v_cache NULL), with q_rope / k_rope passed
        through where sglang splits them (the stack declares mla_rope_split)
        or q and k whole.  The MHA prefill layer (attn_mha: qk_nope + rope /
        v_head_dim per head, K/V as tensors, save_kv_cache False) of an
        extend with no cached prefix runs as ragged attention.  They replace
        forward_extend / forward_decode on this instance only, so the plain
        path has no check for it."""
        m = self.model
        self._mla_dims = (int(m.kv_lora_rank), int(m.qk_rope_head_dim))
        self._mla_cu: Any = None
        self._mla_cu_cpu: Any = None
        self._mla_no_prefix = False
        self._use_forwards(self._forward_mla)

    def _mla_plan(self, fb: Any, kind: str) -> None:
        """Per extend batch: whether any request has a cached prefix, and the
        cu_seqlens of its new tokens (the MHA prefill layer's ragged call)."""
        self._mla_cu = self._mla_cu_cpu = None
        self._mla_no_prefix = False
        if kind != "extend":
            return
        pre = fb.extend_prefix_lens_cpu
        lens = fb.extend_seq_lens_cpu
        if pre is None or lens is None:
            return  # the MHA layer refuses a batch whose prefixes it cannot see
        bs = int(fb.batch_size)
        self._mla_no_prefix = all(int(x) == 0 for x in list(pre)[:bs])
        cu = [0]
        for n in list(lens)[:bs]:
            cu.append(cu[-1] + int(n))
        torch = self._torch
        self._mla_cu_cpu = torch.tensor(cu, dtype=torch.int32)
        self._mla_cu = self._mla_cu_cpu.to(self._dev)

    def _mla_layer(self, layer: Any) -> Layer:
        """The absorbed layer's Layer: the pool's kv_buffer as k_cache, no
        v_cache (the value is the row's first kv_lora_rank columns)."""
        lid = int(layer.layer_id)
        R, P = self._mla_dims
        if int(layer.tp_k_head_num) != 1 or int(layer.qk_head_dim) != R + P or int(layer.v_head_dim) != R:
            raise NotImplementedError(
                f"sglattn: MLA layer {lid}: {layer.tp_k_head_num} KV heads, qk_head_dim {layer.qk_head_dim}, "
                f"v_head_dim {layer.v_head_dim}; expected the absorbed layer (1 latent head, qk {R + P} = "
                f"kv_lora_rank {R} + qk_rope_head_dim {P}, v {R}) or the MHA prefill layer (save_kv_cache False)")
        if layer.is_cross_attention or getattr(getattr(layer, "attn_type", None), "value", "decoder") != "decoder":
            raise NotImplementedError(f"sglattn: MLA layer {lid}: only causal decoder attention is served")
        cap = float(getattr(layer, "logit_cap", 0.0) or 0.0)
        if cap > 0:
            raise NotImplementedError(f"sglattn: MLA layer {lid} caps logits ({cap}); not served on MLA")
        ks = getattr(layer, "k_scale_float", None)
        L = self.backend.layer(lid, self.token_to_kv_pool.get_key_buffer(lid), None,
                               num_q_heads=layer.tp_q_head_num, num_kv_heads=1, head_dim_qk=R + P, head_dim_v=R,
                               sm_scale=layer.scaling, k_scale=1.0 if ks is None else float(ks))
        L.cols = int(layer.tp_q_head_num) * R
        self._layers[lid] = L
        return L

    def _forward_mla(self, q: Any, k: Any, v: Any, layer: Any, fb: Any, save_kv_cache: bool, decode: bool,
                     kwargs: Dict[str, Any]) -> Any:
        R, P = self._mla_dims
        if (int(layer.tp_k_head_num), int(layer.qk_head_dim), int(layer.v_head_dim)) != (1, R + P, R):
            return self._forward_mla_mha(q, k, v, layer, fb, save_kv_cache, decode, kwargs)
        q_rope = kwargs.pop("q_rope", None)
        k_rope = kwargs.pop("k_rope", None)
        lid = int(layer.layer_id)
        L = self._layers.get(lid)
        if L is None:
            L = self._mla_layer(layer)
        if kwargs or self._bind_pending is not None or L.topk is not None:
            L = self._prepare(L, layer, fb, kwargs)
        if getattr(fb, "mha_return_lse", False):
            raise NotImplementedError(_LSE.format(why="on MLA's absorbed layer (sglang asks it of the MHA prefill "
                                                      "layer only)"))
        H = int(layer.tp_q_head_num)
        if (q_rope is None and k_rope is not None) or (q_rope is not None and k is not None and k_rope is None):
            raise NotImplementedError(f"sglattn: MLA layer {lid}: q_rope without k_rope (or the reverse); expected "
                                      f"both split, or q and k whole (kv_lora_rank + qk_rope_head_dim)")
        if q_rope is not None:
            if "mla_rope_split" not in self.backend.features:
                raise NotImplementedError(f"sglattn: q_rope / k_rope (MLA's rope part split from the latent part): "
                                          f"the stack {self.selection.label} does not declare mla_rope_split")
            q = q.view(-1, H, R)
            q_rope = q_rope.view(-1, H, P)
            if k is not None:
                k = k.view(-1, 1, R)
                k_rope = k_rope.view(-1, 1, P)
        else:
            q = q.view(-1, H, R + P)
            if k is not None:
                k = k.view(-1, 1, R + P)
        out = getattr(fb, "_attn_output", None)
        if out is None:
            out = self._torch.empty((self._rows, H, R), dtype=self.out_dtype, device=self._dev)
        (self.backend.forward_decode if decode else self.backend.forward_extend)(
            L, q, k if save_kv_cache else None, None, out.view(-1, H, R), save_kv_cache, q_rope=q_rope,
            k_rope=k_rope if save_kv_cache else None)
        return out.view(-1, H * R)

    def _forward_mla_mha(self, q: Any, k: Any, v: Any, layer: Any, fb: Any, save_kv_cache: bool, decode: bool,
                         kwargs: Dict[str, Any]) -> Any:
        """sglang's MHA prefill layer of an MLA model (DeepSeek's forward_normal:
        the latent row already saved by the model, K and V expanded per head
        as tensors): causal attention over the new tokens of each request, as
        a ragged call; only an extend with no cached prefix has all its keys
        in those tensors."""
        lid = int(layer.layer_id)
        what = (f"sglattn: MLA layer {lid}'s MHA prefill call ({layer.tp_k_head_num} KV heads, qk {layer.qk_head_dim}"
                f" / v {layer.v_head_dim}, K/V as tensors)")
        R, P = self._mla_dims
        if int(layer.tp_k_head_num) == 1:
            raise NotImplementedError(
                f"sglattn: MLA layer {lid}: 1 KV head, qk_head_dim {layer.qk_head_dim}, v_head_dim {layer.v_head_dim}; "
                f"expected the absorbed layer (qk {R + P} = kv_lora_rank {R} + qk_rope_head_dim {P}, v {R}) or the "
                f"MHA prefill layer (a K/V head per q head, save_kv_cache False)")
        if decode or self._mla_cu is None or not self._mla_no_prefix:
            raise NotImplementedError(f"{what} in a batch with a cached prefix or a decode: its prefix keys would "
                                      f"need sglang's chunked-prefix-cache tensors; the absorbed layer serves it")
        if save_kv_cache:
            raise NotImplementedError(f"{what} with save_kv_cache: the pool holds the latent row, not per-head K/V")
        for name, val in kwargs.items():
            if val is not None and val is not False:
                why = _REFUSED_KWARGS.get(name, "an argument this adapter does not know")
                raise NotImplementedError(f"sglattn: {name} ({why}) on {what}")
        if "ragged" not in self.backend.features:
            raise NotImplementedError(f"{what}: the stack {self.selection.label} does not declare ragged")
        H, Hk, Dqk, Dv = int(layer.tp_q_head_num), int(layer.tp_k_head_num), int(layer.qk_head_dim), \
            int(layer.v_head_dim)
        torch = self._torch
        out = getattr(fb, "_attn_output", None)
        if out is None:
            out = torch.empty((self._rows, H, Dv), dtype=self.out_dtype, device=self._dev)
        lse = None
        if getattr(fb, "mha_return_lse", False):
            if "lse" not in self.backend.features:
                raise NotImplementedError(_LSE.format(
                    why=f"the stack {self.selection.label} does not declare lse (SGL_ATTN_FEAT_LSE)"))
            lse = torch.empty((self._rows, H), dtype=torch.float32, device=self._dev)
        self.backend.forward_ragged(q.view(-1, H, Dqk), k.view(-1, Hk, Dqk), v.view(-1, Hk, Dv), out.view(-1, H, Dv),
                                    self._mla_cu, self._mla_cu, causal=True, sm_scale=float(layer.scaling), lse=lse,
                                    cu_seqlens_q_cpu=self._mla_cu_cpu, cu_seqlens_k_cpu=self._mla_cu_cpu)
        flat = out.view(-1, H * Dv)
        return (flat, lse) if lse is not None else flat

    # ---------------------------------------------------------------- graphs
    def _stream(self) -> Optional[int]:
        torch = self._torch
        if str(self.device).startswith("cuda") and torch.cuda.is_available():
            return int(torch.cuda.current_stream().cuda_stream) or None
        return None

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        if "graph_capture" not in self.backend.features:
            raise NotImplementedError(f"sglattn: the stack {self.selection.label} cannot be captured in CUDA "
                                      f"graphs; start sglang with --disable-cuda-graph")
        self.backend.init_graph_state(max_bs, max_num_tokens)
        self._graph_batches = {}
        self._graph_lin = {}
        if self.linear_backend is not None:  # _graph_slots tells sglang's padded requests by it
            self._graph_fill = self.backend.graph_seq_len_fill_value()

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return self.backend.graph_seq_len_fill_value()

    def init_forward_metadata_out_graph(self, forward_batch: Any, in_capture: bool = False) -> None:
        """Outside the graph: at capture, plan the captured shape's batch (the
        runner's static buffers); at replay, re-plan it in place."""
        fb = forward_batch
        kind = _mode_kind(fb.forward_mode)
        if kind == "idle":
            return
        key = (int(fb.batch_size), int(fb.forward_mode))
        batch = self._graph_batches.get(key)
        if in_capture or batch is None:
            if not in_capture:
                raise Error(f"sglattn: replay of batch size {key[0]} ({fb.forward_mode.name}) that was never "
                            f"captured", "init_forward_metadata_out_graph")
            batch = self._graph_batches[key] = Batch("idle")
            slots = self._graph_slots(key, fb, key[0], True) if self.linear_backend is not None else None
            self._fill(batch, fb, kind, slots=None if slots is None else slots.slots).set_stream(self._stream())
            self._batch = batch
            self._rows = batch.num_tokens
            self._bind_pending = None
            self.backend.capture(batch)
            self._lin_verify = slots if kind == "verify" else None
            return
        slots = self._graph_slots(key, fb, key[0], False) if self.linear_backend is not None else None
        self._fill(batch, fb, kind, replay=True, slots=None if slots is None else slots.slots).set_stream(
            self._stream())
        self.backend.replay(batch)
        # the commit after this replay reads this graph's rows, which its replay derives
        self._lin_verify = slots if kind == "verify" else None

    def init_forward_metadata_in_graph(self, forward_batch: Any) -> None:
        """Inside the capture: the forwards recorded next launch on the
        capturing stream; a verify batch of linear layers derives its rows
        and gather from its graph's slot buffer here, device ops only, so
        each replay derives them again from the slots its out-of-graph call
        wrote."""
        if self._batch is not None:
            self._batch.set_stream(self._stream())
            # a stack that plans on the device records that plan here (ABI 1.2)
            if "graph_device_plan" in self.backend.features and self.backend.supports(
                    "init_forward_metadata_in_graph"):
                self.backend.in_graph(self._batch)
        fb = forward_batch
        if self.linear_backend is not None and fb.forward_mode.is_target_verify():
            rec = self._graph_lin.get((int(fb.batch_size), int(fb.forward_mode)))
            if rec is None:
                raise Error(f"sglattn: init_forward_metadata_in_graph of a verify batch of {fb.batch_size} "
                            f"requests that init_forward_metadata_out_graph did not capture",
                            "init_forward_metadata_in_graph")
            self._lin_verify = rec.derive()

    # the older names (sglang trees before the out_graph / in_graph contract)
    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: Any,
                                                 seq_lens: Any, encoder_lens: Any, forward_mode: Any,
                                                 spec_info: Any) -> None:
        if encoder_lens is not None:
            raise NotImplementedError("sglattn: encoder_lens (encoder-decoder) in the older graph capture methods "
                                      "(init_forward_metadata_capture_cuda_graph) is not served")
        kind = _mode_kind(forward_mode)
        fb = _GraphBatchView(forward_mode, bs, req_pool_indices, seq_lens, spec_info, None)
        key = (bs, int(forward_mode))
        batch = self._graph_batches[key] = Batch("idle")
        slots = self._graph_slots(key, fb, bs, True) if self.linear_backend is not None else None
        self._fill(batch, fb, kind, slots=None if slots is None else slots.slots).set_stream(self._stream())
        self._batch = batch
        self._rows = batch.num_tokens
        self._bind_pending = batch  # out_cache_loc and positions come with the first forward
        self.backend.capture(batch, num_tokens=num_tokens)
        # no in-graph hook in this form: the rows are derived here and before each replay, outside the graph
        self._lin_verify = slots.derive() if slots is not None and kind == "verify" else None

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: Any, seq_lens: Any,
                                                seq_lens_sum: int, encoder_lens: Any, forward_mode: Any,
                                                spec_info: Any, seq_lens_cpu: Any = None) -> None:
        key = (bs, int(forward_mode))
        batch = self._graph_batches.get(key)
        if batch is None:
            raise Error(f"sglattn: replay of batch size {bs} ({forward_mode.name}) that was never captured",
                        "init_forward_metadata_replay_cuda_graph")
        fb = _GraphBatchView(forward_mode, bs, req_pool_indices[:bs], seq_lens[:bs], spec_info,
                             None if seq_lens_cpu is None else seq_lens_cpu[:bs], seq_lens_sum,
                             batch.tensor("out_cache_loc"), batch.tensor("positions"))
        kind = _mode_kind(forward_mode)
        slots = self._graph_slots(key, fb, bs, False) if self.linear_backend is not None else None
        self._fill(batch, fb, kind, replay=True, slots=None if slots is None else slots.slots).set_stream(
            self._stream())
        self.backend.replay(batch)
        self._lin_verify = slots.derive() if slots is not None and kind == "verify" else None

    def _bind_graph_batch(self, fb: Any) -> None:
        """Older trees capture without out_cache_loc and positions: take the
        runner's static buffers from the first captured forward's batch."""
        batch = self._bind_pending
        assert batch is not None
        self._bind_pending = None
        s = batch.struct
        for name in ("out_cache_loc", "positions"):
            t = getattr(fb, name, None)
            if t is not None:
                from ._tensor import TensorRef
                r = TensorRef().set_torch(t)
                batch._refs[name] = r
                setattr(s, name, r.addr)


class SglAttnLinearBackend(_Base):  # type: ignore[misc]  # sglang's class, found at import
    """The linear-attention half of a hybrid model on the same stack as the
    full-attention half (SglAttnBackend.linear_backend): it stands where
    sglang puts its GDN backend inside HybridLinearAttnBackend and takes
    that backend's calls (forward_decode / forward_extend with mixed_qkv, a,
    b and the RadixLinearAttention layer).  The batch is planned once, by
    the full-attention backend, for both kinds of layers."""

    needs_cpu_seq_lens = False

    def __init__(self, owner: SglAttnBackend) -> None:
        self.owner = owner
        self.req_to_token_pool = owner.req_to_token_pool
        self.token_to_kv_pool = owner.token_to_kv_pool

    def init_forward_metadata(self, forward_batch: Any) -> None:
        # sglang's hybrid wrapper plans the full backend first: plan only if it has not
        if self.owner._planned is not forward_batch:
            self.owner.init_forward_metadata(forward_batch)

    def init_forward_metadata_out_graph(self, forward_batch: Any, in_capture: bool = False) -> None:
        pass  # the full-attention backend's graph calls plan the shared batch

    def init_forward_metadata_in_graph(self, forward_batch: Any) -> None:
        pass

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        pass

    # the older graph methods (sglang's hybrid backend calls both of its backends)
    def init_forward_metadata_capture_cuda_graph(self, *args: Any, **kwargs: Any) -> None:
        pass

    def init_forward_metadata_replay_cuda_graph(self, *args: Any, **kwargs: Any) -> None:
        pass

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return 1

    def _call(self, layer: Any, forward_batch: Any, mixed_qkv: Any, a: Any, b: Any, kwargs: Dict[str, Any],
              decode: bool) -> Any:
        for k, val in kwargs.items():
            if val is not None and k not in ("layer_id", "q", "k", "v", "save_kv_cache"):
                raise NotImplementedError(f"sglattn: {k} (an argument of a linear-attention call this adapter does "
                                          f"not know) is not supported by the sglattn backend")
        if mixed_qkv is None or a is None or b is None:
            raise NotImplementedError("sglattn: a linear-attention call without mixed_qkv, a and b (the GDN "
                                      "backend's inputs)")
        return self.owner.forward_linear(layer, forward_batch, mixed_qkv, a, b, decode)

    def forward_decode(self, layer: Any = None, forward_batch: Any = None, mixed_qkv: Any = None, a: Any = None,
                       b: Any = None, **kwargs: Any) -> Any:
        return self._call(layer, forward_batch, mixed_qkv, a, b, kwargs, True)

    def forward_extend(self, layer: Any = None, forward_batch: Any = None, mixed_qkv: Any = None, a: Any = None,
                       b: Any = None, **kwargs: Any) -> Any:
        return self._call(layer, forward_batch, mixed_qkv, a, b, kwargs, False)


class _LinearLayer:
    """SglAttnBackend's cached call of one linear layer (_linear_entry):
    what it was made for (the layer object, the pool's whole conv and
    temporal tensors) and what it passes."""

    __slots__ = ("layer", "conv_all", "ssm_all", "L", "lin", "verify", "main")

    def __init__(self, layer: Any, conv_all: Any, ssm_all: Any, L: Layer, lin: LinearInputs) -> None:
        self.layer = layer
        self.conv_all = conv_all
        self.ssm_all = ssm_all
        self.L = L
        self.lin = lin
        self.verify: Optional[LinearInputs] = None
        self.main: Tuple[Any, Any] = (None, None)


class _LinearRows:
    """One batch's linear-state indices on sglang's MambaPool: slots, each
    request's slot (-1 padded; the batch's state_indices), and for verify
    rows (request i's scratch and intermediate row: i, or -1 when padded)
    and gather (the slot its state is gathered from; a padded request
    reads slot 0 into a row nothing uses).  An eager verify batch has its
    own; each captured graph keeps one at fixed addresses."""

    __slots__ = ("slots", "rows", "gather", "arange")

    def __init__(self, torch: Any, slots: Any) -> None:
        n, dev = int(slots.shape[0]), slots.device
        self.slots = slots
        self.arange = torch.arange(n, dtype=torch.int32, device=dev)
        self.rows = torch.full((n,), -1, dtype=torch.int32, device=dev)
        self.gather = torch.zeros(n, dtype=torch.int64, device=dev)

    def derive(self) -> "_LinearRows":
        """rows and gather from slots, in place and on the device only (no
        host read, no new buffer the forwards see): a graph that captures
        this call replays it on the slots written before the replay."""
        self.rows.copy_(self.arange)
        self.rows.masked_fill_(self.slots < 0, -1)
        self.gather.copy_(self.slots)
        self.gather.clamp_(min=0)
        return self


class _GraphBatchView:
    """The ForwardBatch fields _fill reads, from the older graph methods'
    arguments."""

    def __init__(self, forward_mode: Any, bs: int, req_pool_indices: Any, seq_lens: Any, spec_info: Any,
                 seq_lens_cpu: Any, seq_lens_sum: Optional[int] = None, out_cache_loc: Any = None,
                 positions: Any = None) -> None:
        self.forward_mode = forward_mode
        self.batch_size = bs
        self.req_pool_indices = req_pool_indices
        self.seq_lens = seq_lens
        self.spec_info = spec_info
        self.seq_lens_cpu = seq_lens_cpu if seq_lens_cpu is not None else seq_lens.cpu()
        self.seq_lens_sum = int(self.seq_lens_cpu.sum()) if seq_lens_sum is None else seq_lens_sum
        self.out_cache_loc = out_cache_loc
        self.positions = positions
        self.extend_seq_lens = self.extend_prefix_lens = None
        self.extend_seq_lens_cpu = self.extend_prefix_lens_cpu = None

