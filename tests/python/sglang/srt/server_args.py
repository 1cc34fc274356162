"""Mirrors python/sglang/srt/server_args.py in sgl-project/sglang (read
2026-12-04): ATTENTION_BACKEND_CHOICES and add_attention_backend_choices(),
and the ServerArgs fields sglattn.sglang reads."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

ATTENTION_BACKEND_CHOICES: List[str] = [
    "triton", "torch_native", "flex_attention", "dsa", "cutlass_mla", "fa3", "fa4", "flashinfer", "flashmla",
    "trtllm_mla", "trtllm_mha", "dual_chunk_flash_attn", "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
]


def add_attention_backend_choices(choices: List[str]) -> None:
    ATTENTION_BACKEND_CHOICES.extend(choices)


@dataclass
class ServerArgs:
    model_path: str = ""
    attention_backend: Optional[str] = None
    prefill_attention_backend: Optional[str] = None
    decode_attention_backend: Optional[str] = None
    page_size: int = 1
    max_running_requests: Optional[int] = None
    max_prefill_tokens: int = 16384
    chunked_prefill_size: Optional[int] = None
    disable_cuda_graph: bool = False
    cuda_graph_max_bs: Optional[int] = None
    speculative_algorithm: Optional[str] = None
    speculative_num_steps: Optional[int] = None
    speculative_eagle_topk: Optional[int] = None
    speculative_num_draft_tokens: Optional[int] = None
    kv_cache_dtype: str = "auto"
    tp_size: int = 1
