"""Mirrors python/sglang/srt/layers/attention/hybrid_linear_attn_backend.py in
sgl-project/sglang (commit 012945e): HybridLinearAttnBackend, which holds a
full-attention backend and a linear-attention one and routes each call by
layer id (a linear call carries mixed_qkv, a and b).  Metadata goes to both,
the full one first.  The MTP-verify state update and the graph details are
not modelled."""
from __future__ import annotations

from typing import Any, List, Optional

from sglang.srt.layers.attention.base_attn_backend import AttentionBackend


class HybridLinearAttnBackend(AttentionBackend):
    def __init__(self, full_attn_backend: Any, linear_attn_backend: Any, full_attn_layers: List[int]) -> None:
        self.full_attn_layers = full_attn_layers
        self.full_attn_backend = full_attn_backend
        self.linear_attn_backend = linear_attn_backend
        self.attn_backend_list = [full_attn_backend, linear_attn_backend]
        self.token_to_kv_pool = full_attn_backend.token_to_kv_pool
        self.req_to_token_pool = full_attn_backend.req_to_token_pool
        self.needs_cpu_seq_lens = full_attn_backend.needs_cpu_seq_lens or linear_attn_backend.needs_cpu_seq_lens

    def _is_full_attn(self, layer: Any, layer_id: Optional[int] = None) -> bool:
        if layer is not None:
            layer_id = layer.layer_id
        assert layer_id is not None, "either layer or layer_id must be provided"
        return layer_id in self.full_attn_layers

    def init_forward_metadata(self, forward_batch: Any) -> None:
        for b in self.attn_backend_list:
            b.init_forward_metadata(forward_batch)

    def init_forward_metadata_out_graph(self, forward_batch: Any, in_capture: bool = False) -> None:
        for b in self.attn_backend_list:
            b.init_forward_metadata_out_graph(forward_batch, in_capture=in_capture)

    def init_forward_metadata_in_graph(self, forward_batch: Any) -> None:
        for b in self.attn_backend_list:
            b.init_forward_metadata_in_graph(forward_batch)

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        for b in self.attn_backend_list:
            b.init_cuda_graph_state(max_bs, max_num_tokens)

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return self.full_attn_backend.get_cuda_graph_seq_len_fill_value()

    def forward_decode(self, layer, forward_batch, save_kv_cache=True, q=None, k=None, v=None, mixed_qkv=None,
                       a=None, b=None, **kwargs):
        if self._is_full_attn(layer, kwargs.get("layer_id")):
            return self.full_attn_backend.forward_decode(q, k, v, layer, forward_batch, save_kv_cache, **kwargs)
        return self.linear_attn_backend.forward_decode(q=q, k=k, v=v, layer=layer, forward_batch=forward_batch,
                                                       save_kv_cache=save_kv_cache, mixed_qkv=mixed_qkv, a=a, b=b,
                                                       **kwargs)

    def forward_extend(self, layer, forward_batch, save_kv_cache=True, q=None, k=None, v=None, mixed_qkv=None,
                       a=None, b=None, **kwargs):
        if self._is_full_attn(layer, kwargs.get("layer_id")):
            return self.full_attn_backend.forward_extend(q, k, v, layer, forward_batch, save_kv_cache, **kwargs)
        return self.linear_attn_backend.forward_extend(q=q, k=k, v=v, layer=layer, forward_batch=forward_batch,
                                                       save_kv_cache=save_kv_cache, mixed_qkv=mixed_qkv, a=a, b=b,
                                                       **kwargs)

    def forward(self, q=None, k=None, v=None, layer=None, forward_batch=None, save_kv_cache=True, mixed_qkv=None,
                a=None, b=None, **kwargs):
        is_linear = not self._is_full_attn(layer, kwargs.get("layer_id"))
        if forward_batch.forward_mode.is_idle():
            if is_linear:
                return mixed_qkv.new_empty(mixed_qkv.shape[0], layer.num_v_heads, layer.head_v_dim)
            return q.new_empty(q.shape[0], layer.tp_q_head_num * layer.v_head_dim)
        if forward_batch.forward_mode.is_decode():
            return self.forward_decode(layer, forward_batch, save_kv_cache, q, k, v, mixed_qkv, a, b, **kwargs)
        return self.forward_extend(layer, forward_batch, save_kv_cache, q, k, v, mixed_qkv, a, b, **kwargs)
