"""Mirrors the dual chunk attention side of sgl-project/sglang that an
attention backend meets: DualChunkRotaryEmbedding, which builds the query a
dual chunk layer hands its backend.  Written here from these facts (read
2026-12-04), not copied:

python/sglang/srt/layers/rotary_embedding/rope_variant.py (commit 0b1fd02;
rotary_embedding.py in older trees), DualChunkRotaryEmbedding.forward:
- with chunk_len = chunk_size - local_size, the key of position p is rotated
  at p % chunk_len, once;
- the query is rotated five times, each variant flattened to
  [tokens, heads * head_dim] and concatenated on the last dim, in this order:
  intra (p % chunk_len), successor (p % chunk_len + chunk_len, clamped to
  chunk_size), inter (the fixed position min(2 * chunk_len - 1, chunk_size)),
  successor-critical (p % chunk_len + chunk_len, unclamped) and
  inter-critical (p % chunk_len + chunk_size).  So q reaches the backend as
  [tokens, 5 * heads * head_dim], variant i in columns [i * H * D, (i+1) * H * D).
- The models that pass dual_chunk_attention_config to get_rope (Qwen2 and
  its MoE / Qwen3 relatives) hand that q, unchanged, to RadixAttention, whose
  forward views only k and v.

python/sglang/srt/layers/attention/dual_chunk_flashattention_backend.py
(commit 1951f6a), DualChunkFlashAttentionBackend:
- forward_extend / forward_decode split q into five equal parts of the last
  dim (query, query_succ, query_inter, query_succ_critical,
  query_inter_critical) and view each as [-1, heads, head_dim];
- decode and the dense prefill use only the first three: the own chunk with
  query (causal), the previous chunk with query_succ, every earlier key with
  query_inter, merged by their log-sum-exp; the two critical variants only
  score the last 64 queries (sparse_attention_last_q) to pick the
  vertical-slash pattern of the sparse prefill, which applies when
  sparse_attention_enabled (default: a sparse_attention_config is given) and
  the prompt is longer than sparse_attention_threshold (default 32768);
- the length scaling max(1, 0.1 ln(len / original_max_position_embeddings) + 1)
  takes the prompt's whole length (orig_seq_lens) in prefill and seq_lens in
  decode; decode multiplies the three queries by it;
- it supports neither causal=False nor a sliding window, and needs
  chunk_len to be a multiple of the page size;
- it returns no LSE (no mha_return_lse path).

python/sglang/srt/server_args.py: a model whose hf_config has
dual_chunk_attention_config gets attention_backend dual_chunk_flash_attn
when none is given; any other name raises "Dual chunk attention is enabled,
but attention backend is set to X. Please set it to 'dual_chunk_flash_attn'."
(so sglattn serves it under that name: SGLATTN_SGLANG_OVERRIDE).

The rotation here is the neox form in float64 (the tests round after it).
"""
from __future__ import annotations

from typing import Tuple

import torch


def _rotate(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Neox rotary embedding of x [T, H, D] at positions pos [T], in float64."""
    d = x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = pos.to(torch.float64).view(-1, 1) * inv.view(1, -1)          # [T, D/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1).unsqueeze(1)            # [T, 1, D]
    sin = torch.cat([ang.sin(), ang.sin()], -1).unsqueeze(1)
    x = x.to(torch.float64)
    rot = torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


class DualChunkRotaryEmbedding:
    """forward(positions, query [T, H*D], key [T, Hkv*D]) -> (q [T, 5*H*D],
    key [T, Hkv*D]), both float64, laid out as sglang's."""

    def __init__(self, head_size: int, chunk_size: int, local_size: int, base: float = 10000.0) -> None:
        self.head_size = head_size
        self.chunk_size = chunk_size
        self.local_size = local_size
        self.base = base

    def forward(self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        d, cs = self.head_size, self.chunk_size
        cl = cs - self.local_size
        T = query.shape[0]
        q = query.reshape(T, -1, d)
        k = key.reshape(T, -1, d)
        p = positions.to(torch.int64) % cl
        k_rot = _rotate(k, p, self.base)
        variants = [p, (p + cl).clamp(max=cs), torch.full_like(p, min(2 * cl - 1, cs)), p + cl, p + cs]
        qs = [_rotate(q, v, self.base).reshape(T, -1) for v in variants]
        return torch.cat(qs, dim=-1), k_rot.reshape(T, -1)

    __call__ = forward
