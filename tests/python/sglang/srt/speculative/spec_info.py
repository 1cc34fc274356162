"""Mirrors python/sglang/srt/speculative/spec_info.py and eagle_info.py's
EagleVerifyInput in sgl-project/sglang (read 2026-12-04): the verify fields
an attention backend reads (draft_token_num, topk, custom_mask, positions)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class EagleVerifyInput:
    draft_token: Any = None
    custom_mask: Any = None
    positions: Any = None
    retrieve_index: Any = None
    retrieve_next_token: Any = None
    retrieve_next_sibling: Any = None
    retrieve_cum_len: Any = None
    spec_steps: int = 0
    topk: int = 1
    draft_token_num: int = 1
    capture_hidden_mode: Any = None
    seq_lens_sum: Optional[int] = None
    seq_lens_cpu: Any = None
