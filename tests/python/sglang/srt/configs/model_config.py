"""Mirrors python/sglang/srt/configs/model_config.py in sgl-project/sglang
(read 2026-12-04): the ModelConfig fields an attention backend factory reads."""
from __future__ import annotations

from typing import Any


class AttentionArch:
    MLA = "mla"
    MHA = "mha"


class ModelConfig:
    def __init__(self, hf_config: Any, context_len: int = 4096, dtype: Any = None) -> None:
        self.hf_config = hf_config
        self.hf_text_config = hf_config
        self.context_len = context_len
        cfg = hf_config if isinstance(hf_config, dict) else hf_config.to_dict()
        self.num_attention_heads = cfg["num_attention_heads"]
        self.num_key_value_heads = cfg.get("num_key_value_heads", self.num_attention_heads)
        self.head_dim = cfg.get("head_dim") or cfg["hidden_size"] // self.num_attention_heads
        self.num_hidden_layers = cfg["num_hidden_layers"]
        self.is_encoder_decoder = bool(cfg.get("is_encoder_decoder", False))
        # MLA (DeepSeek-V2/V3 shaped: kv_lora_rank in the config)
        self.attention_arch = AttentionArch.MLA if cfg.get("kv_lora_rank") else AttentionArch.MHA
        if self.attention_arch == AttentionArch.MLA:
            self.kv_lora_rank = cfg["kv_lora_rank"]
            self.qk_rope_head_dim = cfg["qk_rope_head_dim"]
            self.qk_nope_head_dim = cfg.get("qk_nope_head_dim")
            self.v_head_dim = cfg.get("v_head_dim")
            self.head_dim = self.kv_lora_rank + self.qk_rope_head_dim
        self.dtype = dtype

    def get_num_kv_heads(self, tensor_parallel_size: int) -> int:
        return max(1, self.num_key_value_heads // tensor_parallel_size)
