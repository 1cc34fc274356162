"""Mirrors python/sglang/srt/layers/attention/base_attn_backend.py in
sgl-project/sglang, the version with the three-method metadata contract
(init_forward_metadata = out_graph + in_graph, PR #26735; read 2026-12-04),
plus the two graph methods older trees call (commit 43681aa).  Only the
dispatch and the defaults the adapter relies on."""
from __future__ import annotations

from abc import ABC
from typing import Any, Optional


class AttentionBackend(ABC):
    prefill_attention_backend_str: Optional[str] = None
    decode_attention_backend_str: Optional[str] = None
    supports_ragged_verify_graph: bool = False
    supports_target_verify_cuda_graph: bool = True
    needs_cpu_seq_lens: bool = True
    use_captured_forward_metadata_for_breakable_cuda_graph: bool = False

    def init_forward_metadata(self, forward_batch: Any) -> None:
        self.init_forward_metadata_out_graph(forward_batch)
        self.init_forward_metadata_in_graph(forward_batch)

    def init_forward_metadata_out_graph(self, forward_batch: Any, in_capture: bool = False) -> None:
        pass

    def init_forward_metadata_in_graph(self, forward_batch: Any) -> None:
        pass

    def draft_extend_metadata_captured_in_graph(self) -> bool:
        return False

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        raise NotImplementedError()

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        raise NotImplementedError()

    def on_after_cuda_graph_warmup(self) -> None:
        pass

    def forward(self, q, k, v, layer, forward_batch, save_kv_cache: bool = True, **kwargs):
        if forward_batch.forward_mode.is_idle():
            return q.new_empty(q.shape[0], layer.tp_q_head_num * layer.v_head_dim)
        if forward_batch.forward_mode.is_decode():
            return self.forward_decode(q, k, v, layer, forward_batch, save_kv_cache=save_kv_cache, **kwargs)
        return self.forward_extend(q, k, v, layer, forward_batch, save_kv_cache=save_kv_cache, **kwargs)

    def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache: bool = True, **kwargs):
        raise NotImplementedError()

    def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache: bool = True, **kwargs):
        raise NotImplementedError()

    def support_triton(self) -> bool:
        return True

    def get_indexer_metadata(self, layer_id: int, forward_batch: Any) -> Any:
        return None
