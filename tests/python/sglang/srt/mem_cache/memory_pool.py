"""Mirrors python/sglang/srt/mem_cache/memory_pool.py in sgl-project/sglang
(read 2026-12-04): ReqToTokenPool and MHATokenToKVPool with the buffers,
accessors and fields attention backends use.  Buffers are
[size + page_size, heads, dim] per layer (slot 0 is the padding slot);
fp8 is stored as uint8 and viewed as float8 by the accessors."""
from __future__ import annotations

from typing import Any, Optional, Tuple

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
