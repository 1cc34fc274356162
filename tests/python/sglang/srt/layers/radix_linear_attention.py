"""Mirrors python/sglang/srt/layers/radix_linear_attention.py in
sgl-project/sglang: the RadixLinearAttention attributes a linear-attention
backend reads (as gdn_backend.py at commit 0051ebf reads them): the layer
id, head counts and dims, the conv weight [conv_dim, W] and bias, the
activation, A_log and dt_bias.  Its forward hands mixed_qkv, a and b to the
active backend, as the model's GatedDeltaNet does."""
from __future__ import annotations

from typing import Any, Optional

from sglang.srt.model_executor.forward_context import get_attn_backend


class RadixLinearAttention:
    def __init__(self, layer_id: int, num_q_heads: int, num_k_heads: int, num_v_heads: int, head_q_dim: int,
                 head_k_dim: int, head_v_dim: int, conv_weights: Any, bias: Optional[Any], activation: str,
                 A_log: Any, dt_bias: Any) -> None:
        self.layer_id = layer_id
        self.num_q_heads, self.num_k_heads, self.num_v_heads = num_q_heads, num_k_heads, num_v_heads
        self.head_q_dim, self.head_k_dim, self.head_v_dim = head_q_dim, head_k_dim, head_v_dim
        self.q_dim = num_q_heads * head_q_dim
        self.k_dim = num_k_heads * head_k_dim
        self.v_dim = num_v_heads * head_v_dim
        self.conv_weights = conv_weights
        self.bias = bias
        self.activation = activation
        self.A_log = A_log
        self.dt_bias = dt_bias

    def forward(self, forward_batch, mixed_qkv, a, b, **kwargs):
        return get_attn_backend().forward(layer=self, forward_batch=forward_batch, mixed_qkv=mixed_qkv, a=a, b=b,
                                          **kwargs)

    __call__ = forward
