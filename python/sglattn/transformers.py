"""`paged|sglattn`: a Hugging Face transformers attention function that runs a
libsglattn stack on transformers' own paged cache (continuous batching,
`model.generate_batch`).

    import sglattn.transformers
    sglattn.transformers.register()            # AttentionInterface "paged|sglattn"
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="paged|sglattn")
    model.generate_batch(inputs, generation_config)

transformers keeps one cache tensor per layer, [pages, kv_heads, head_dim]:
sglang's token-pool layout, so the stack reads and writes it in place (no
copy; the plugin saves the new K/V at write_index, as cache.update would).
Each forward step, translate() turns transformers' indices (cu_seq_lens_q/k
with read_index and write_index, or a block_table) into an sgl_attn_batch:
request i reads slots read_index[cu_k[i]:cu_k[i+1]], its new tokens are the
last q_len[i] positions, written at write_index.  A block_table goes to a
stack that declares page_table (SGL_ATTN_FEAT_PAGE_TABLE) as the batch's
page_table, with page_size = the cache's block_size and no req_to_token;
to any other stack it is expanded into per-token req_to_token rows.  The
translation is done once per step and shared by the layers of a cache
group; it reads the lengths back to the host once (the CPU mirrors the
plugins plan from).

Refused with NotImplementedError: sliding-window layers (transformers keeps
those in a ring, whose read order is not a position order), a cache of
another layout, and calls without a paged cache.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .backend import Backend, Batch, Layer
from .host import Host, Model

NAME = "paged|sglattn"

_lock = threading.Lock()


@dataclass
class Translated:
    """One forward step's batch in the ABI's terms (device tensors, and host
    mirrors of the lengths)."""
    mode: str
    req_to_token: Any          # [bs, max_k] int32
    req_pool_indices: Any      # [bs] int32 (0..bs-1)
    seq_lens: Any              # [bs] int32, new tokens included
    extend_prefix_lens: Any    # [bs] int32
    extend_seq_lens: Any       # [bs] int32
    out_cache_loc: Any         # [T] int64
    positions: Any             # [T] int64
    seq_lens_cpu: Any
    extend_prefix_lens_cpu: List[int]
    extend_seq_lens_cpu: List[int]
    num_tokens: int
    page_table: Any = None     # [bs, max_blocks] (the block table as given), req_to_token None
    page_size: int = 1         # the cache's block_size with page_table, else 1


def host_lens(cu_seq_lens_q: Any, cu_seq_lens_k: Any) -> Tuple[List[int], List[int]]:
    """cu_seq_lens_q / cu_seq_lens_k read back to the host (the one read of a
    step); translate() takes them as `lens`."""
    return [int(x) for x in cu_seq_lens_q.cpu().tolist()], [int(x) for x in cu_seq_lens_k.cpu().tolist()]


def translate(cu_seq_lens_q: Any, cu_seq_lens_k: Any, read_index: Any = None, write_index: Any = None,
              block_table: Any = None, block_size: int = 0, page_table: bool = False,
              lens: Optional[Tuple[List[int], List[int]]] = None) -> Translated:
    """transformers' paged indices for one cache group -> an sgl_attn_batch's
    tensors.  read_index / write_index are the group's 1-D tensors of cache
    rows; block_table the group's [bs, max_blocks] (-1 padded) when given
    instead (then the new token of request i is at position k_len[i] - 1).
    With page_table (the stack declares it) the block table is passed as
    the batch's page_table, not expanded; only the new tokens' slots are
    computed from it.  An empty read_index means nothing is read from the
    cache (every request a fresh prefill): its rows are the write_index
    rows.  `lens` is host_lens() of the two cu tensors when the caller has
    read them already."""
    import torch

    dev = cu_seq_lens_q.device
    cu_q = cu_seq_lens_q.to(torch.int64)
    q_cpu, k_cpu = lens if lens is not None else host_lens(cu_seq_lens_q, cu_seq_lens_k)
    bs = len(q_cpu) - 1
    q_lens = [q_cpu[i + 1] - q_cpu[i] for i in range(bs)]
    k_lens = [k_cpu[i + 1] - k_cpu[i] for i in range(bs)]
    if any(k < q for q, k in zip(q_lens, k_lens)):
        raise ValueError(f"cu_seq_lens_k {k_cpu} is shorter than cu_seq_lens_q {q_cpu} for some request")
    prefix = [k - q for q, k in zip(q_lens, k_lens)]
    T = q_cpu[-1]

    def i32(xs: List[int]) -> Any:
        return torch.tensor(xs, device=dev, dtype=torch.int32)

    mode = "decode" if bs and max(q_lens) == 1 and min(q_lens) == 1 else "extend"
    req_of_tok = torch.repeat_interleave(torch.arange(bs, device=dev), torch.tensor(q_lens, device=dev))
    start = torch.tensor(prefix, device=dev, dtype=torch.int64)[req_of_tok]
    j = torch.arange(T, device=dev, dtype=torch.int64) - cu_q[:-1][req_of_tok]
    positions = start + j
    if page_table and block_table is not None:
        if block_size <= 0:
            raise ValueError("block_table given without the cache's block_size")
        bt = block_table if block_table.is_contiguous() else block_table.contiguous()
        # the new tokens' slots: page of position p, then its row inside the page
        pages = bt[req_of_tok, positions // block_size].to(torch.int64)
        out_loc = pages * block_size + positions % block_size
        return Translated(mode=mode, req_to_token=None, req_pool_indices=None, seq_lens=i32(k_lens),
                          extend_prefix_lens=i32(prefix), extend_seq_lens=i32(q_lens), out_cache_loc=out_loc,
                          positions=positions, seq_lens_cpu=k_lens, extend_prefix_lens_cpu=prefix,
                          extend_seq_lens_cpu=q_lens, num_tokens=T, page_table=bt, page_size=block_size)
    cu_k = cu_seq_lens_k.to(torch.int64)
    max_k = max(k_lens) if bs else 0
    col = torch.arange(max(max_k, 1), device=dev, dtype=torch.int64)
    k_len_t = torch.tensor(k_lens, device=dev, dtype=torch.int64)
    valid = col.view(1, -1) < k_len_t.view(-1, 1)
    if block_table is not None:
        if block_size <= 0:
            raise ValueError("block_table given without the cache's block_size")
        bt = block_table.to(torch.int64)
        blk = bt.gather(1, (col // block_size).clamp(max=bt.shape[1] - 1).view(1, -1).expand(bs, -1))
        rows = blk * block_size + (col % block_size).view(1, -1)
    else:
        src = write_index if read_index is None or read_index.numel() == 0 else read_index
        cu = cu_q if src is write_index else cu_k
        if src is write_index and any(p for p in prefix):
            raise ValueError("read_index is empty but some request has cached tokens to read")
        src = src.to(torch.int64)
        idx = (cu[:-1].view(-1, 1) + col.view(1, -1)).clamp(max=max(src.numel() - 1, 0))
        rows = src[idx] if src.numel() else torch.zeros_like(idx)
    r2t = torch.where(valid, rows, torch.zeros_like(rows)).to(torch.int32)
    if block_table is None and write_index is not None and write_index.numel():
        out_loc = write_index.to(torch.int64)[:T]
    else:
        out_loc = r2t[req_of_tok, positions].to(torch.int64)
    return Translated(mode=mode, req_to_token=r2t.contiguous(), req_pool_indices=i32(list(range(bs))),
                      seq_lens=i32(k_lens), extend_prefix_lens=i32(prefix), extend_seq_lens=i32(q_lens),
                      out_cache_loc=out_loc.contiguous(), positions=positions, seq_lens_cpu=k_lens,
                      extend_prefix_lens_cpu=prefix, extend_seq_lens_cpu=q_lens, num_tokens=T)


def _group_of(cache: Any, layer_idx: int) -> Tuple[int, int]:
    m = getattr(cache, "layer_index_to_group_indices", None)
    if m is None:
        return 0, layer_idx
    g = m[layer_idx]
    return int(g[0]), int(g[1])


def _per_group(x: Any, group: int) -> Any:
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return x[group]
    if isinstance(x, dict):
        return x.get("full_attention", next(iter(x.values())))
    if getattr(x, "dim", lambda: 1)() >= 2 and x.shape[0] > group:
        return x[group]
    return x


class _State:
    """The stack and its per-step batch for one transformers cache."""

    def __init__(self, module: Any, cache: Any, key: Any, host: Host, backend: Optional[str]) -> None:
        self.cache = cache
        self.host = host
        self.backend_name = backend
        cfg = module.config
        self.model = Model.load(cfg.to_dict() if hasattr(cfg, "to_dict") else dict(cfg))
        if self.model.is_hybrid:
            self.model = self.model.as_full_attention_only()
        self.model.dtype = str(key.dtype)
        self.model.kv_dtype = str(key.dtype)
        self.block_size = int(getattr(cache, "block_size", 0) or 0)
        self.pages = int(key.shape[0])
        self.backend: Optional[Backend] = None
        self.sizes = (0, 0, 0)
        self.layers: Dict[int, Layer] = {}
        self.batches: Dict[int, Tuple[Tuple[Any, ...], Batch]] = {}

    def ensure(self, bs: int, tokens: int, max_k: int) -> Backend:
        want = (bs, tokens, max_k)
        if self.backend is None or any(w > s for w, s in zip(want, self.sizes)):
            grow = tuple(max(64, 2 * w, s) for w, s in zip(want, self.sizes))
            sel = self.host.select(self.model, backend=self.backend_name)
            self.backend = sel.create(max_reqs=grow[0], max_tokens=grow[1], max_context=grow[2])
            self.sizes = grow  # type: ignore[assignment]
            self.layers = {}
            self.batches = {}
        assert self.backend is not None
        return self.backend


class PagedAttention:
    """The attention function transformers calls per layer (register() adds an
    instance).  `backend` names the plugin the host should pick (None: the
    host chooses)."""

    def __init__(self, backend: Optional[str] = None, host: Optional[Host] = None) -> None:
        self.backend_name = backend
        self._host = host
        self._states: Dict[int, _State] = {}

    def host(self) -> Host:
        if self._host is None:
            from .sglang import host as shared
            self._host = shared()
        return self._host

    def __call__(self, module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None, **kwargs: Any
                 ) -> Tuple[Any, None]:
        import torch

        cache = kwargs.get("cache")
        if cache is None:
            raise NotImplementedError("paged|sglattn: called without a paged cache (`cache`); it runs under "
                                      "continuous batching (model.generate_batch)")
        window = getattr(module, "sliding_window", None)
        if window:
            raise NotImplementedError(f"paged|sglattn: layer {module.layer_idx} has a sliding window ({window}); "
                                      f"transformers keeps those layers in a ring cache, which is not served")
        group, in_group = _group_of(cache, module.layer_idx)
        kc, vc = cache.key_cache[in_group], cache.value_cache[in_group]
        if kc.dim() != 3:
            raise NotImplementedError(f"paged|sglattn: the cache tensor of layer {module.layer_idx} has shape "
                                      f"{tuple(kc.shape)}; expected [pages, kv_heads, head_dim]")
        with _lock:
            st = self._states.get(id(cache))
            if st is None or st.cache is not cache:
                st = self._states[id(cache)] = _State(module, cache, kc, self.host(), self.backend_name)
        cu_q, cu_k = kwargs["cu_seq_lens_q"], kwargs["cu_seq_lens_k"]
        if isinstance(cu_k, dict):
            cu_k = cu_k.get("full_attention", next(iter(cu_k.values())))
        ri = _per_group(kwargs.get("read_index"), group)
        wi = _per_group(kwargs.get("write_index"), group)
        bt = _per_group(kwargs.get("block_table"), group)
        step_key = (cu_q, cu_k, ri, wi, bt)
        known = st.batches.get(group)
        if known is None or any(a is not b for a, b in zip(known[0], step_key)):
            lens = host_lens(cu_q, cu_k)
            bs = len(lens[0]) - 1
            be = st.ensure(bs, max(lens[0][-1], 1), max([lens[1][i + 1] - lens[1][i] for i in range(bs)] or [1]))
            tr = translate(cu_q, cu_k, ri, wi, bt, st.block_size, page_table="page_table" in be.features, lens=lens)
            pt = {} if tr.page_table is None else {"page_table": tr.page_table}
            batch = Batch(tr.mode, tr.req_to_token, tr.req_pool_indices, tr.seq_lens, tr.out_cache_loc,
                          positions=tr.positions, extend_prefix_lens=tr.extend_prefix_lens,
                          extend_seq_lens=tr.extend_seq_lens, seq_lens_cpu=tr.seq_lens_cpu,
                          extend_prefix_lens_cpu=tr.extend_prefix_lens_cpu,
                          extend_seq_lens_cpu=tr.extend_seq_lens_cpu, num_tokens=tr.num_tokens,
                          seq_lens_sum=sum(tr.seq_lens_cpu), batch_size=bs, page_size=tr.page_size, **pt)
            be.init_forward_metadata(batch)
            st.batches[group] = (step_key, batch)
            known = st.batches[group]
        batch = known[1]
        be = st.ensure(0, 0, 0)
        if be._batch is not batch:
            be.init_forward_metadata(batch)
        T = batch.num_tokens
        # [1, heads, tokens, dim] -> [tokens, heads, dim], compact
        q = query[0].transpose(0, 1)[:T].contiguous()
        k = key[0].transpose(0, 1)[:T].contiguous()
        v = value[0].transpose(0, 1)[:T].contiguous()
        layer = st.layers.get(module.layer_idx)
        if layer is None:
            scaling = kwargs.get("scaling")
            layer = st.layers[module.layer_idx] = be.layer(
                module.layer_idx, kc, vc, num_q_heads=q.shape[1], num_kv_heads=k.shape[1], head_dim_qk=q.shape[2],
                head_dim_v=v.shape[2], sm_scale=float(scaling if scaling is not None else module.scaling))
        sinks = kwargs.get("s_aux")
        if sinks is not None and (layer.sinks is None or layer.sinks.owner is not sinks):
            layer.set_sinks(sinks)
        out = torch.zeros((query.shape[2], q.shape[1], v.shape[2]), dtype=query.dtype, device=query.device)
        o = out[:T]
        if batch.mode == 2:  # decode
            be.forward_decode(layer, q, k, v, o)
        else:
            be.forward_extend(layer, q, k, v, o)
        return out, None


def register(name: str = NAME, backend: Optional[str] = None, host: Optional[Host] = None) -> str:
    """Add the attention function to transformers' AttentionInterface under
    `name` ("paged|sglattn"); a model picks it with attn_implementation=name."""
    from transformers import AttentionInterface

    AttentionInterface.register(name, PagedAttention(backend, host))
    return name
