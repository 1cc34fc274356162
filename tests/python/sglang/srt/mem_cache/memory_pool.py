"""Mirrors python/sglang/srt/mem_cache/memory_pool.py in sgl-project/sglang
(read 2026-12-04): ReqToTokenPool and MHATokenToKVPool with the buffers,
accessors and fields attention backends use.  Buffers are
[size + page_size, heads, dim] per layer (slot 0 is the padding slot);
fp8 is stored as uint8 and viewed as float8 by the accessors.  MambaPool
(its State: conv [layers, size + 1, conv_dim, W-1] and temporal
[layers, size + 1, HV, V, K], per-layer views from mamba2_layer_cache) and
HybridReqToTokenPool (a request row's mamba slot, get_mamba_indices, and
the layer id -> mamba layer map), as read 2026-12-04; with
speculative_num_draft_tokens, the SpeculativeState's intermediate_ssm
[layers, spec_state_size + 1, draft tokens, HV, V, K] and
intermediate_conv_window [layers, spec_state_size + 1, draft tokens,
conv_dim, W-1], indexed by verify batch row, not by slot (commit 012945e).  MLATokenToKVPool (its class says
what it holds)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional, Tuple

import torch

# float8 dtypes this torch has (torch < 2.1 has none)
_FP8 = tuple(getattr(torch, n) for n in ("float8_e5m2", "float8_e4m3fn") if hasattr(torch, n))


class ReqToTokenPool:
    def __init__(self, size: int, max_context_len: int, device: str, enable_memory_saver: bool = False) -> None:
        self.size = size
        self.max_context_len = max_context_len
        self.device = device
        self.req_to_token = torch.zeros((size, max_context_len), dtype=torch.int32, device=device)
        self.free_slots = list(range(size))

    def write(self, indices: Any, values: Any) -> None:
        self.req_to_token[indices] = values

    def alloc(self, need_size: int) -> Optional[list]:
        if need_size > len(self.free_slots):
            return None
        out, self.free_slots = self.free_slots[:need_size], self.free_slots[need_size:]
        return out

    def free(self, index: Any) -> None:
        self.free_slots.extend([index] if isinstance(index, int) else list(index))


class KVCache:
    def __init__(self, size: int, page_size: int, dtype: torch.dtype, layer_num: int, device: str,
                 enable_memory_saver: bool, start_layer: Optional[int] = None, end_layer: Optional[int] = None):
        self.size = size
        self.page_size = page_size
        self.dtype = dtype
        self.device = device
        self.layer_num = layer_num
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1
        self.store_dtype = torch.uint8 if dtype in _FP8 else dtype


class MHATokenToKVPool(KVCache):
    def __init__(self, size: int, page_size: int, dtype: torch.dtype, head_num: int, head_dim: int, layer_num: int,
                 device: str, enable_memory_saver: bool = False, v_head_dim: Optional[int] = None,
                 start_layer: Optional[int] = None, end_layer: Optional[int] = None) -> None:
        super().__init__(size, page_size, dtype, layer_num, device, enable_memory_saver, start_layer, end_layer)
        self.head_num = head_num
        self.head_dim = head_dim
        self.v_head_dim = v_head_dim if v_head_dim is not None else head_dim
        self.k_buffer = [torch.zeros((size + page_size, head_num, head_dim), dtype=self.store_dtype, device=device)
                         for _ in range(layer_num)]
        self.v_buffer = [torch.zeros((size + page_size, head_num, self.v_head_dim), dtype=self.store_dtype,
                                     device=device) for _ in range(layer_num)]

    def _view(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(self.dtype) if self.store_dtype != self.dtype else t

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.k_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.v_buffer[layer_id - self.start_layer])

    def get_kv_buffer(self, layer_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.get_key_buffer(layer_id), self.get_value_buffer(layer_id)

    def set_kv_buffer(self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, cache_v: torch.Tensor,
                      k_scale: Any = None, v_scale: Any = None) -> None:
        i = layer.layer_id - self.start_layer
        if cache_k.dtype != self.dtype:
            cache_k, cache_v = cache_k.to(self.dtype), cache_v.to(self.dtype)
        self.k_buffer[i][loc] = cache_k.view(self.store_dtype) if self.store_dtype != self.dtype else cache_k
        self.v_buffer[i][loc] = cache_v.view(self.store_dtype) if self.store_dtype != self.dtype else cache_v


class MLATokenToKVPool(KVCache):
    """Mirrors MLATokenToKVPool in python/sglang/srt/mem_cache/memory_pool.py
    (sgl-project/sglang, commit 000ccdb): one kv_buffer per layer,
    [size + page_size, 1, kv_lora_rank + qk_rope_head_dim], the latent part
    first; the value buffer is a view of its first kv_lora_rank columns;
    set_mla_kv_buffer writes the two parts of a row side by side."""

    def __init__(self, size: int, page_size: int, dtype: torch.dtype, kv_lora_rank: int, qk_rope_head_dim: int,
                 layer_num: int, device: str, enable_memory_saver: bool = False, start_layer: Optional[int] = None,
                 end_layer: Optional[int] = None) -> None:
        super().__init__(size, page_size, dtype, layer_num, device, enable_memory_saver, start_layer, end_layer)
        self.kv_lora_rank = kv_lora_rank
        self.qk_rope_head_dim = qk_rope_head_dim
        self.kv_cache_dim = kv_lora_rank + qk_rope_head_dim
        self.kv_buffer = [torch.zeros((size + page_size, 1, self.kv_cache_dim), dtype=self.store_dtype, device=device)
                          for _ in range(layer_num)]

    def _view(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(self.dtype) if self.store_dtype != self.dtype else t

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.kv_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.kv_buffer[layer_id - self.start_layer][..., :self.kv_lora_rank])

    def get_kv_buffer(self, layer_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.get_key_buffer(layer_id), self.get_value_buffer(layer_id)

    def set_kv_buffer(self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, cache_v: Any,
                      k_scale: Any = None, v_scale: Any = None) -> None:
        if cache_k.dtype != self.dtype:
            cache_k = cache_k.to(self.dtype)
        buf = self.kv_buffer[layer.layer_id - self.start_layer]
        buf[loc] = cache_k.view(self.store_dtype) if self.store_dtype != self.dtype else cache_k

    def set_mla_kv_buffer(self, layer: Any, loc: torch.Tensor, cache_k_nope: torch.Tensor,
                          cache_k_rope: torch.Tensor) -> None:
        self.set_kv_buffer(layer, loc, torch.cat([cache_k_nope, cache_k_rope], -1), None)


class MambaPool:
    @dataclass(frozen=True)
    class State:
        conv: List[torch.Tensor]
        temporal: torch.Tensor

        def at_layer_idx(self, layer: int) -> "MambaPool.State":
            kw = {}
            for f in fields(self):
                v = getattr(self, f.name)
                kw[f.name] = [c[layer] for c in v] if f.name in ("conv", "intermediate_conv_window") else v[layer]
            return type(self)(**kw)

    @dataclass(frozen=True)
    class SpeculativeState(State):
        intermediate_ssm: torch.Tensor
        intermediate_conv_window: List[torch.Tensor]

    def __init__(self, *, size: int, conv_shape: Tuple[int, int], temporal_shape: Tuple[int, int, int],
                 num_mamba_layers: int, device: str, conv_dtype: torch.dtype = torch.float32,
                 ssm_dtype: torch.dtype = torch.float32, spec_state_size: Optional[int] = None,
                 speculative_num_draft_tokens: Optional[int] = None) -> None:
        self.size = size
        self.device = device
        conv = [torch.zeros((num_mamba_layers, size + 1) + tuple(conv_shape), dtype=conv_dtype, device=device)]
        temporal = torch.zeros((num_mamba_layers, size + 1) + tuple(temporal_shape), dtype=ssm_dtype, device=device)
        if speculative_num_draft_tokens is not None:
            # per verify row (spec_state_size + 1 rows, not per slot): the state after each draft token
            rows = (spec_state_size if spec_state_size is not None else size) + 1
            n = speculative_num_draft_tokens
            self.mamba_cache = self.SpeculativeState(
                conv=conv, temporal=temporal,
                intermediate_ssm=torch.zeros((num_mamba_layers, rows, n) + tuple(temporal_shape), dtype=ssm_dtype,
                                             device=device),
                intermediate_conv_window=[torch.zeros((num_mamba_layers, rows, n) + tuple(conv_shape),
                                                      dtype=conv_dtype, device=device)])
        else:
            self.mamba_cache = self.State(conv=conv, temporal=temporal)
        self.num_mamba_layers = num_mamba_layers

    def get_speculative_mamba2_params_all_layers(self) -> "MambaPool.SpeculativeState":
        assert isinstance(self.mamba_cache, self.SpeculativeState)
        return self.mamba_cache

    def mamba2_layer_cache(self, layer_id: int) -> "MambaPool.State":
        return self.mamba_cache.at_layer_idx(layer_id)


class HybridReqToTokenPool(ReqToTokenPool):
    def __init__(self, *, size: int, mamba_size: int, max_context_len: int, device: str, mamba_layer_ids: List[int],
                 conv_shape: Tuple[int, int], temporal_shape: Tuple[int, int, int],
                 conv_dtype: torch.dtype = torch.float32, ssm_dtype: torch.dtype = torch.float32,
                 enable_memory_saver: bool = False, speculative_num_draft_tokens: Optional[int] = None) -> None:
        super().__init__(size, max_context_len, device, enable_memory_saver)
        self.mamba_pool = MambaPool(size=mamba_size, conv_shape=conv_shape, temporal_shape=temporal_shape,
                                    num_mamba_layers=len(mamba_layer_ids), device=device, conv_dtype=conv_dtype,
                                    ssm_dtype=ssm_dtype, spec_state_size=size,
                                    speculative_num_draft_tokens=speculative_num_draft_tokens)
        self.mamba_map: Dict[int, int] = {lid: i for i, lid in enumerate(mamba_layer_ids)}
        self.req_index_to_mamba_index_mapping = torch.zeros(size, dtype=torch.int32, device=device)

    def get_mamba_indices(self, req_pool_indices: torch.Tensor) -> torch.Tensor:
        return self.req_index_to_mamba_index_mapping[req_pool_indices]

    def mamba2_layer_cache(self, layer_id: int) -> MambaPool.State:
        return self.mamba_pool.mamba2_layer_cache(self.mamba_map[layer_id])

    def get_speculative_mamba2_params_all_layers(self) -> MambaPool.SpeculativeState:
        return self.mamba_pool.get_speculative_mamba2_params_all_layers()
