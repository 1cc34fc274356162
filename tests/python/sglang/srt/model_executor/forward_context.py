"""Mirrors python/sglang/srt/model_executor/forward_context.py in
sgl-project/sglang (read 2026-12-04): the active attention backend of a
forward, and the pools read from it (the batch no longer carries them)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional


@dataclass(frozen=True)
class ForwardContext:
    attn_backend: Any


_current: Optional[ForwardContext] = None


def set_forward_context(ctx: Optional[ForwardContext]) -> Optional[ForwardContext]:
    global _current
    prev, _current = _current, ctx
    return prev


def get_forward_context() -> ForwardContext:
    assert _current is not None, "no forward context active"
    return _current


def get_attn_backend() -> Any:
    return get_forward_context().attn_backend


def get_token_to_kv_pool() -> Any:
    return get_attn_backend().token_to_kv_pool


def get_req_to_token_pool() -> Any:
    return get_attn_backend().req_to_token_pool


@contextmanager
def forward_context(ctx: ForwardContext) -> Iterator[None]:
    prev = set_forward_context(ctx)
    try:
        yield
    finally:
        set_forward_context(prev)
