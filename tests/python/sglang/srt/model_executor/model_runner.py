"""Mirrors python/sglang/srt/model_executor/model_runner.py in
sgl-project/sglang (read 2026-12-04): the ModelRunner fields an attention
backend factory reads (`runner` in register_attention_backend factories),
and mambaish_config / hybrid_gdn_config (the hybrid model's config, whose
full_attention_layer_ids attn_backend_wrapper reads; None otherwise).
The runner here holds pools the tests build; it runs no model."""
from __future__ import annotations

from typing import Any

from sglang.srt.server_args import ServerArgs


class ModelRunner:
    def __init__(self, model_config: Any, server_args: ServerArgs, token_to_kv_pool: Any, req_to_token_pool: Any,
                 device: str, dtype: Any, kv_cache_dtype: Any = None, is_draft_worker: bool = False,
                 tp_size: int = 1) -> None:
        self.model_config = model_config
        self.server_args = server_args
        self.token_to_kv_pool = token_to_kv_pool
        self.req_to_token_pool = req_to_token_pool
        self.device = device
        self.gpu_id = 0
        self.dtype = dtype
        self.kv_cache_dtype = kv_cache_dtype if kv_cache_dtype is not None else dtype
        self.page_size = server_args.page_size
        self.is_draft_worker = is_draft_worker
        self.tp_size = tp_size
        self.use_mla_backend = False
        self.sliding_window_size = None
        self.attn_backend = None
        self.mambaish_config: Any = None
        self.hybrid_gdn_config: Any = None
