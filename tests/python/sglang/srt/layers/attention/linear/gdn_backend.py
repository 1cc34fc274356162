"""Mirrors python/sglang/srt/layers/attention/linear/gdn_backend.py in
sgl-project/sglang (commit 0051ebf): only the class name, which sglang's
attn_backend_wrapper puts beside a full-attention backend for a hybrid GDN
model.  Its Triton / CUDA kernels do not exist here, so a call says so."""
from __future__ import annotations

from typing import Any


class GDNAttnBackend:
    needs_cpu_seq_lens = False

    def __init__(self, model_runner: Any) -> None:
        self.req_to_token_pool = model_runner.req_to_token_pool

    def init_forward_metadata(self, forward_batch: Any) -> None:
        pass

    def forward_decode(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("stub sglang: the built-in GDN backend is not available in tests")

    forward_extend = forward_decode
