"""Mirrors python/sglang/srt/layers/attention/attention_registry.py in
sgl-project/sglang (commit 00a66eb): the ATTENTION_BACKENDS dict and the
register_attention_backend decorator, which overwrites an existing name;
attn_backend_wrapper (read 2026-12-04), which puts a hybrid model's
full-attention backend and sglang's own linear backend (GDN here) into a
HybridLinearAttnBackend and returns any other backend as it is.
A few built-in names are registered with factories that only say they are
stubs, so tests can check that sglattn leaves sglang's own names alone."""
from __future__ import annotations

from typing import Any, Callable, Dict

ATTENTION_BACKENDS: Dict[str, Callable[[Any], Any]] = {}


def register_attention_backend(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def decorator(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        ATTENTION_BACKENDS[name] = fn
        return fn

    return decorator


def _builtin(name: str) -> None:
    def factory(runner: Any) -> Any:
        raise RuntimeError(f"stub sglang: the built-in backend {name!r} is not available in tests")

    factory.__name__ = f"create_{name}_backend"
    register_attention_backend(name)(factory)


for _name in ("flashinfer", "triton", "torch_native", "flex_attention", "fa3", "fa4", "trtllm_mha", "aiter",
              "ascend", "intel_amx", "flashmla", "cutlass_mla", "trtllm_mla"):
    _builtin(_name)


def attn_backend_wrapper(runner: Any, full_attn_backend: Any) -> Any:
    cfg = runner.mambaish_config
    if cfg:
        from sglang.srt.layers.attention.hybrid_linear_attn_backend import HybridLinearAttnBackend
        from sglang.srt.layers.attention.linear.gdn_backend import GDNAttnBackend

        full_attn_layers = [0] if runner.is_draft_worker else cfg.full_attention_layer_ids
        return HybridLinearAttnBackend(full_attn_backend, GDNAttnBackend(runner), full_attn_layers)
    return full_attn_backend
