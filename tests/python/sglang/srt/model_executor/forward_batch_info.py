"""Mirrors python/sglang/srt/model_executor/forward_batch_info.py in
sgl-project/sglang (commit 003bbaf): ForwardMode with its members and the
predicates backends use, and the ForwardBatch fields an attention backend
reads (mha_return_lse comes from the DeepSeek mixin; _attn_output is the
piecewise-graph output buffer RadixAttention may set)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, auto
from typing import Any, List, Optional


class ForwardMode(IntEnum):
    EXTEND = auto()
    DECODE = auto()
    MIXED = auto()
    IDLE = auto()
    TARGET_VERIFY = auto()
    DRAFT_EXTEND_V2 = auto()
    PREBUILT = auto()
    SPLIT_PREFILL = auto()
    DLLM_EXTEND = auto()

    def is_prefill(self, include_draft_extend_v2: bool = False) -> bool:
        return self.is_extend(include_draft_extend_v2=include_draft_extend_v2)

    def is_extend(self, include_draft_extend_v2: bool = False) -> bool:
        return (self in (ForwardMode.EXTEND, ForwardMode.MIXED, ForwardMode.TARGET_VERIFY,
                         ForwardMode.SPLIT_PREFILL, ForwardMode.DLLM_EXTEND)
                or (include_draft_extend_v2 and self == ForwardMode.DRAFT_EXTEND_V2))

    def is_decode(self) -> bool:
        return self == ForwardMode.DECODE

    def is_mixed(self) -> bool:
        return self == ForwardMode.MIXED

    def is_idle(self) -> bool:
        return self == ForwardMode.IDLE

    def is_decode_or_idle(self) -> bool:
        return self in (ForwardMode.DECODE, ForwardMode.IDLE)

    def is_target_verify(self) -> bool:
        return self == ForwardMode.TARGET_VERIFY

    def is_draft_extend_v2(self) -> bool:
        return self == ForwardMode.DRAFT_EXTEND_V2

    def is_cuda_graph(self) -> bool:
        return self in (ForwardMode.DECODE, ForwardMode.TARGET_VERIFY, ForwardMode.IDLE, ForwardMode.DLLM_EXTEND)

    def is_split_prefill(self) -> bool:
        return self == ForwardMode.SPLIT_PREFILL

    def is_dllm_extend(self) -> bool:
        return self == ForwardMode.DLLM_EXTEND


@dataclass
class ForwardBatch:
    forward_mode: ForwardMode
    batch_size: int
    input_ids: Any
    req_pool_indices: Any
    seq_lens: Any
    out_cache_loc: Any
    seq_lens_sum: int
    encoder_lens: Any = None
    encoder_out_cache_loc: Any = None
    spec_info: Any = None
    seq_lens_cpu: Any = None
    encoder_lens_cpu: Optional[List[int]] = None
    encoder_cached: Optional[List[bool]] = None
    positions: Any = None
    extend_num_tokens: Optional[int] = None
    extend_seq_lens: Any = None
    extend_prefix_lens: Any = None
    extend_start_loc: Any = None
    extend_prefix_lens_cpu: Optional[List[int]] = None
    extend_seq_lens_cpu: Optional[List[int]] = None
    mha_return_lse: bool = False
    _attn_output: Any = None
