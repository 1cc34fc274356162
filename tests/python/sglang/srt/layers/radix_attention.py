"""Mirrors python/sglang/srt/layers/radix_attention.py in sgl-project/sglang
(commit 0088621): RadixAttention's constructor and attributes, and its
forward's eager path (k and v viewed as [T, heads, dim], or k alone as
[T, heads, v_head_dim] when k_rope is passed, MLA's split form; then the
active backend's forward).  The piecewise-graph path is not modelled."""
from __future__ import annotations

from enum import Enum
from typing import Any

from sglang.srt.model_executor.forward_context import get_attn_backend


class AttentionType(Enum):
    DECODER = "decoder"
    DECODER_BIDIRECTIONAL = "decoder_bidirectional"
    ENCODER_ONLY = "encoder_only"


class RadixAttention:
    def __init__(self, num_heads: int, head_dim: int, scaling: float, num_kv_heads: int, layer_id: int,
                 logit_cap: float = 0.0, v_head_dim: int = -1, sliding_window_size: int = -1,
                 is_cross_attention: bool = False, pos_encoding_mode: str = "NONE",
                 logit_capping_method: str = "tanh", quant_config: Any = None,
                 attn_type: AttentionType = AttentionType.DECODER, use_irope: bool = False,
                 prefix: str = "") -> None:
        self.tp_q_head_num = num_heads
        self.tp_k_head_num = num_kv_heads
        self.tp_v_head_num = num_kv_heads
        self.head_dim = head_dim
        self.qk_head_dim = head_dim
        self.v_head_dim = v_head_dim if v_head_dim != -1 else head_dim
        self.scaling = scaling
        self.layer_id = layer_id
        self.logit_cap = logit_cap
        self.sliding_window_size = sliding_window_size or -1
        self.is_cross_attention = is_cross_attention
        self.use_irope = use_irope
        self.k_scale = None
        self.v_scale = None
        self.k_scale_float = None
        self.v_scale_float = None
        self.quant_method = None
        self.attn_type = attn_type
        self.pos_encoding_mode = pos_encoding_mode
        self.logit_capping_method = logit_capping_method
        self.xai_temperature_len = -1

    def forward(self, q, k, v, forward_batch, save_kv_cache: bool = True, **kwargs):
        if k is not None:
            assert v is not None
            if "k_rope" not in kwargs:
                k = k.view(-1, self.tp_k_head_num, self.qk_head_dim)
                v = v.view(-1, self.tp_v_head_num, self.v_head_dim)
            else:  # MLA with the rope part split off: k is the latent part
                k = k.view(-1, self.tp_k_head_num, self.v_head_dim)
        return get_attn_backend().forward(q, k, v, self, forward_batch, save_kv_cache, **kwargs)

    __call__ = forward
