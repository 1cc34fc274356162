"""Drive an sglang attention backend the way sglang's model runner does,
over the stub `sglang` package (tests/python/sglang): the pools, request
rows and page-aligned token slots, one ForwardBatch per step (extend with a
cached prefix, decode, mixed, chained verify), the layers' RadixAttention
under a forward context, and a CUDA-graph runner in sglang's call order
(current form and the older one).  The reference is float64 attention over
a shadow copy of every request's K/V kept here, not read from the pool, so
a wrong save shows up in a later step.

Used by tests/python/test_sglang_adapter.py (CPU, cpu_ref and the recording
fake) and bench/gpu/python_e2e.py (CUDA).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import EagleVerifyInput


def llama_config(layers: int, hq: int, hkv: int, d: int, dtype: str = "bfloat16", **extra: Any) -> Dict[str, Any]:
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": layers,
           "num_attention_heads": hq, "num_key_value_heads": hkv, "hidden_size": hq * d, "head_dim": d,
           "intermediate_size": 4 * hq * d, "vocab_size": 32000, "max_position_embeddings": 8192,
           "torch_dtype": dtype}
    cfg.update(extra)
    return cfg


@dataclass
class Req:
    row: int
    slots: List[int] = field(default_factory=list)     # slot of each position
    k: List[torch.Tensor] = field(default_factory=list)  # per layer [n, hkv, d] float64 (the truth)
    v: List[torch.Tensor] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.slots)


class Engine:
    """Pools, requests and a backend created by `factory(runner)`."""

    def __init__(self, factory: Callable[[Any], Any], *, layers: int, hq: int, hkv: int, d: int,
                 dtype: torch.dtype, device: str = "cpu", page_size: int = 1, max_reqs: int = 16,
                 max_context: int = 512, pool_tokens: int = 4096, hf_config: Optional[Dict[str, Any]] = None,
                 draft_tokens: int = 0, disable_cuda_graph: bool = True, seed: int = 0,
                 reference: Optional[str] = "f64") -> None:
        self.hq, self.hkv, self.d, self.dtype, self.device = hq, hkv, d, dtype, device
        self.page_size = page_size
        self.nlayers = layers
        cfg = hf_config or llama_config(layers, hq, hkv, d, str(dtype).rsplit(".", 1)[-1])
        self.server_args = ServerArgs(page_size=page_size, max_running_requests=max_reqs,
                                      max_prefill_tokens=pool_tokens, disable_cuda_graph=disable_cuda_graph,
                                      speculative_num_draft_tokens=draft_tokens or None,
                                      speculative_eagle_topk=1 if draft_tokens else None)
        self.req_pool = ReqToTokenPool(max_reqs, max_context, device)
        self.req_pool.alloc(1)  # row 0: the padding row graph batches point padded requests at
        self.kv_pool = MHATokenToKVPool(pool_tokens, page_size, dtype, hkv, d, layers, device)
        self.runner = ModelRunner(ModelConfig(cfg, context_len=max_context), self.server_args, self.kv_pool,
                                  self.req_pool, device, dtype)
        self.free_pages = list(range(1, pool_tokens // page_size + 1))  # page 0 holds the padding slot 0
        self.backend = factory(self.runner)
        self.runner.attn_backend = self.backend
        self.layers = [RadixAttention(hq, d, d ** -0.5, hkv, i) for i in range(layers)]
        self.reqs: Dict[int, Req] = {}
        self.gen = torch.Generator().manual_seed(seed)
        self._next = 0
        # "f64": float64 over the shadow K/V (small shapes); "sdpa": torch SDPA
        # on the K/V gathered back from the pool; None: no reference
        self.ref_kind = reference

    # --------------------------------------------------------------- requests
    def add(self) -> int:
        rows = self.req_pool.alloc(1)
        assert rows, "request pool full"
        rid = self._next
        self._next += 1
        self.reqs[rid] = Req(rows[0], [], [torch.zeros(0, self.hkv, self.d, dtype=torch.float64)
                                           for _ in range(self.nlayers)],
                             [torch.zeros(0, self.hkv, self.d, dtype=torch.float64) for _ in range(self.nlayers)])
        return rid

    def _slots_for(self, req: Req, n: int) -> List[int]:
        """Slots of the next n positions: pages are taken whole, a page's slots in order."""
        out = []
        P = self.page_size
        for pos in range(req.length, req.length + n):
            if pos % P == 0:
                page = self.free_pages.pop(0)
            else:
                page = req.slots[pos - 1] // P if pos - 1 < req.length else out[-1] // P
            out.append(page * P + pos % P)
        return out

    def _write_rows(self, items: Sequence[Tuple[Req, List[int]]]) -> None:
        for req, new in items:
            start = req.length
            self.req_pool.req_to_token[req.row, start:start + len(new)] = torch.tensor(new, dtype=torch.int32)
            req.slots += new

    def _i32(self, xs: Sequence[int]) -> torch.Tensor:
        return torch.tensor(list(xs), dtype=torch.int32, device=self.device)

    def _i64(self, xs: Sequence[int]) -> torch.Tensor:
        return torch.tensor(list(xs), dtype=torch.int64, device=self.device)

    # ---------------------------------------------------------------- batches
    def extend_batch(self, items: Sequence[Tuple[int, int]], mode: ForwardMode = ForwardMode.EXTEND) -> ForwardBatch:
        """Extend requests [(rid, new tokens)] after their cached prefix."""
        reqs = [self.reqs[r] for r, _ in items]
        prefix = [q.length for q in reqs]
        new = [self._slots_for(q, n) for q, (_, n) in zip(reqs, items)]
        self._write_rows(list(zip(reqs, new)))
        ext = [n for _, n in items]
        seq = [q.length for q in reqs]
        T = sum(ext)
        starts = [sum(ext[:i]) for i in range(len(ext))]
        fb = ForwardBatch(forward_mode=mode, batch_size=len(items),
                          input_ids=torch.zeros(T, dtype=torch.int64, device=self.device),
                          req_pool_indices=self._i64([q.row for q in reqs]), seq_lens=self._i32(seq),
                          out_cache_loc=self._i64([s for n_ in new for s in n_]), seq_lens_sum=sum(seq),
                          seq_lens_cpu=torch.tensor(seq, dtype=torch.int32),
                          positions=self._i64([p for pre, n in zip(prefix, ext) for p in range(pre, pre + n)]),
                          extend_num_tokens=T, extend_seq_lens=self._i32(ext), extend_prefix_lens=self._i32(prefix),
                          extend_start_loc=self._i32(starts), extend_prefix_lens_cpu=prefix, extend_seq_lens_cpu=ext)
        fb._rids = [r for r, _ in items]  # type: ignore[attr-defined]
        fb._new = ext  # type: ignore[attr-defined]
        return fb

    def decode_batch(self, rids: Sequence[int]) -> ForwardBatch:
        reqs = [self.reqs[r] for r in rids]
        new = [self._slots_for(q, 1) for q in reqs]
        self._write_rows(list(zip(reqs, new)))
        seq = [q.length for q in reqs]
        fb = ForwardBatch(forward_mode=ForwardMode.DECODE, batch_size=len(rids),
                          input_ids=torch.zeros(len(rids), dtype=torch.int64, device=self.device),
                          req_pool_indices=self._i64([q.row for q in reqs]), seq_lens=self._i32(seq),
                          out_cache_loc=self._i64([n[0] for n in new]), seq_lens_sum=sum(seq),
                          seq_lens_cpu=torch.tensor(seq, dtype=torch.int32),
                          positions=self._i64([s - 1 for s in seq]))
        fb._rids = list(rids)  # type: ignore[attr-defined]
        fb._new = [1] * len(rids)  # type: ignore[attr-defined]
        return fb

    def verify_batch(self, rids: Sequence[int], n_draft: int) -> ForwardBatch:
        """A chained (topk 1) TARGET_VERIFY batch: n_draft tokens per request;
        sglang's seq_lens exclude them and req_to_token already holds their slots."""
        reqs = [self.reqs[r] for r in rids]
        before = [q.length for q in reqs]
        new = [self._slots_for(q, n_draft) for q in reqs]
        self._write_rows(list(zip(reqs, new)))
        spec = EagleVerifyInput(topk=1, draft_token_num=n_draft, spec_steps=n_draft - 1)
        fb = ForwardBatch(forward_mode=ForwardMode.TARGET_VERIFY, batch_size=len(rids),
                          input_ids=torch.zeros(len(rids) * n_draft, dtype=torch.int64, device=self.device),
                          req_pool_indices=self._i64([q.row for q in reqs]), seq_lens=self._i32(before),
                          out_cache_loc=self._i64([s for n_ in new for s in n_]), seq_lens_sum=sum(before),
                          seq_lens_cpu=torch.tensor(before, dtype=torch.int32),
                          positions=self._i64([p for b in before for p in range(b, b + n_draft)]), spec_info=spec)
        fb._rids = list(rids)  # type: ignore[attr-defined]
        fb._new = [n_draft] * len(rids)  # type: ignore[attr-defined]
        return fb

    def accept(self, rid: int, keep: int) -> None:
        """After verify: keep the first `keep` draft tokens of the last step."""
        req = self.reqs[rid]
        drop = self._last_new.get(rid, 0) - keep
        if drop > 0:
            del req.slots[-drop:]
            for i in range(self.nlayers):
                req.k[i] = req.k[i][:-drop]
                req.v[i] = req.v[i][:-drop]

    # ------------------------------------------------------------------- step
    def qkv(self, T: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = self.gen
        q = torch.randn(T, self.hq * self.d, generator=g, dtype=torch.float32)
        k = torch.randn(T, self.hkv * self.d, generator=g, dtype=torch.float32)
        v = torch.randn(T, self.hkv * self.d, generator=g, dtype=torch.float32)
        return tuple(x.to(self.dtype).to(self.device) for x in (q, k, v))  # type: ignore[return-value]

    def metadata(self, fb: ForwardBatch) -> None:
        self.backend.init_forward_metadata(fb)

    def step(self, fb: ForwardBatch, plan: bool = True,
             inputs: Optional[List[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = None
             ) -> List[Tuple[torch.Tensor, torch.Tensor]]:
        """One forward of every layer: [(out, float64 reference)] per layer."""
        if plan:
            self.metadata(fb)
        T = int(fb.out_cache_loc.shape[0])
        results = []
        with forward_context(ForwardContext(self.backend)):
            for i, layer in enumerate(self.layers):
                q, k, v = inputs[i] if inputs is not None else self.qkv(T)
                out = layer.forward(q, k, v, fb)
                if self.ref_kind == "f64":
                    ref = self.reference(fb, i, q, k, v)
                elif self.ref_kind == "sdpa":
                    ref = self.sdpa_reference(fb, i, q)
                else:
                    ref = None
                results.append((out, ref))
        self._last_new = dict(zip(fb._rids, fb._new))  # type: ignore[attr-defined]
        return results

    def reference(self, fb: ForwardBatch, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
                  ) -> torch.Tensor:
        """float64 causal attention of the batch's new tokens over each
        request's shadow K/V; appends this layer's new k/v to the shadow."""
        hq, hkv, d = self.hq, self.hkv, self.d
        q64 = q.detach().to("cpu", torch.float64).view(-1, hq, d)
        k64 = k.detach().to("cpu", torch.float64).view(-1, hkv, d)
        v64 = v.detach().to("cpu", torch.float64).view(-1, hkv, d)
        out = torch.empty(q64.shape[0], hq, d, dtype=torch.float64)
        o = 0
        for rid, n in zip(fb._rids, fb._new):  # type: ignore[attr-defined]
            req = self.reqs[rid]
            req.k[layer] = torch.cat([req.k[layer], k64[o:o + n]])
            req.v[layer] = torch.cat([req.v[layer], v64[o:o + n]])
            K = req.k[layer].repeat_interleave(hq // hkv, 1)
            V = req.v[layer].repeat_interleave(hq // hkv, 1)
            L = K.shape[0]
            s = torch.einsum("qhd,khd->hqk", q64[o:o + n], K) * (d ** -0.5)
            pos = torch.arange(L - n, L).view(-1, 1)
            s.masked_fill_(torch.arange(L).view(1, -1) > pos, -math.inf)
            out[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), V)
            o += n
        return out.view(-1, hq * d)

    def sdpa_reference(self, fb: ForwardBatch, layer: int, q: torch.Tensor) -> torch.Tensor:
        """torch SDPA, in the pool's dtype on the pool's device, over the K/V
        gathered back from the pool through req_to_token (so it checks the
        save too); the new tokens of request i attend causally."""
        import torch.nn.functional as F

        hq, hkv, d = self.hq, self.hkv, self.d
        kp, vp = self.kv_pool.get_key_buffer(layer), self.kv_pool.get_value_buffer(layer)
        qv = q.view(-1, hq, d)
        out = torch.empty(qv.shape[0], hq, d, dtype=qv.dtype, device=qv.device)
        o = 0
        for rid, n in zip(fb._rids, fb._new):  # type: ignore[attr-defined]
            req = self.reqs[rid]
            L = req.length
            idx = self.req_pool.req_to_token[req.row, :L].long()
            K = kp[idx].transpose(0, 1).repeat_interleave(hq // hkv, 0).unsqueeze(0)  # [1, hq, L, d]
            V = vp[idx].transpose(0, 1).repeat_interleave(hq // hkv, 0).unsqueeze(0)
            Q = qv[o:o + n].transpose(0, 1).unsqueeze(0)                                 # [1, hq, n, d]
            mask = torch.arange(L, device=q.device).view(1, -1) <= torch.arange(L - n, L, device=q.device).view(-1, 1)
            if hasattr(F, "scaled_dot_product_attention"):
                r = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=d ** -0.5)
            else:  # torch < 2.0: the same, spelled out in float32
                s = (Q.float() @ K.float().transpose(-1, -2)) * d ** -0.5
                r = (s.masked_fill(~mask, float("-inf")).softmax(-1) @ V.float()).to(Q.dtype)
            out[o:o + n] = r[0].transpose(0, 1)
            o += n
        return out.view(-1, hq * d)

    def pool_kv(self, rid: int, layer: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """What the pool holds for a request, in position order."""
        req = self.reqs[rid]
        idx = torch.tensor(req.slots, dtype=torch.int64, device=self.device)
        return self.kv_pool.get_key_buffer(layer)[idx], self.kv_pool.get_value_buffer(layer)[idx]


def record_graph(runner: Any, bs: int, fb: Any) -> None:
    """sglang's capture of one batch size after its metadata call: run_once twice to warm up, then once
    recorded in a CUDA graph on a side stream sharing the runner's pool (runner.cuda), or once more on
    the CPU, where nothing is recorded.  Keeps the graph and the outputs under bs."""
    for _ in range(2):
        runner._run_once(bs, fb)
    if runner.cuda:
        g = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.graph(g, pool=runner.pool, stream=stream):
            outs = runner._run_once(bs, fb)
        torch.cuda.current_stream().wait_stream(stream)
        runner.pool = g.pool()
        runner.graphs[bs] = g
        runner.outputs[bs] = outs
    else:
        runner.outputs[bs] = runner._run_once(bs, fb)
        runner.graphs[bs] = None


def load_static_batch(runner: Any, fb: Any, tokens: int) -> None:
    """sglang's replay: the real batch into the runner's static buffers, the rest padding (request row 0,
    seq_lens the fill value, slot 0 and position 0 for the tokens past the real ones)."""
    raw = fb.batch_size
    runner.req_pool_indices.zero_()
    runner.req_pool_indices[:raw].copy_(fb.req_pool_indices)
    runner.seq_lens.fill_(runner.fill)
    runner.seq_lens[:raw].copy_(fb.seq_lens)
    runner.out_cache_loc.zero_()
    runner.out_cache_loc[:tokens].copy_(fb.out_cache_loc)
    runner.positions.zero_()
    runner.positions[:tokens].copy_(fb.positions)


class GraphRunner:
    """sglang's decode CUDA-graph runner, reduced to the attention calls and
    their order.  Current form: init_cuda_graph_state once; per batch size
    (largest first) out_graph(fb, in_capture=True) outside the graph, then
    run_once = in_graph(fb) + the layers, twice to warm up and once captured;
    at replay the real batch is copied into the static buffers (padded rows:
    request row 0, seq_len = the fill value, slot 0), out_graph(fb view) and
    the graph replays.  legacy=True uses the older capture/replay methods.
    With CUDA the capture is a torch.cuda.CUDAGraph; on the CPU the captured
    call is recorded but replay does not run the layers (no graph)."""

    def __init__(self, eng: Engine, capture_bs: Sequence[int] = (1, 2, 4, 8), legacy: bool = False,
                 cuda_graph: Optional[bool] = None) -> None:
        self.eng = eng
        self.legacy = legacy
        self.cuda = eng.device.startswith("cuda") if cuda_graph is None else cuda_graph
        self.capture_bs = sorted(capture_bs)
        self.max_bs = max(capture_bs)
        dev = eng.device
        be = eng.backend
        be.init_cuda_graph_state(self.max_bs, self.max_bs)
        self.fill = int(be.get_cuda_graph_seq_len_fill_value())
        self.req_pool_indices = torch.zeros(self.max_bs, dtype=torch.int64, device=dev)
        self.seq_lens = torch.full((self.max_bs,), self.fill, dtype=torch.int32, device=dev)
        self.out_cache_loc = torch.zeros(self.max_bs, dtype=torch.int64, device=dev)
        self.positions = torch.zeros(self.max_bs, dtype=torch.int64, device=dev)
        self.q = [torch.zeros(self.max_bs, eng.hq * eng.d, dtype=eng.dtype, device=dev) for _ in eng.layers]
        self.k = [torch.zeros(self.max_bs, eng.hkv * eng.d, dtype=eng.dtype, device=dev) for _ in eng.layers]
        self.v = [torch.zeros(self.max_bs, eng.hkv * eng.d, dtype=eng.dtype, device=dev) for _ in eng.layers]
        self.graphs: Dict[int, Any] = {}
        self.outputs: Dict[int, List[torch.Tensor]] = {}
        self.pool = None
        for bs in reversed(self.capture_bs):
            self.capture(bs)

    def _fb(self, bs: int, seq_lens_cpu: torch.Tensor, seq_lens_sum: int) -> ForwardBatch:
        return ForwardBatch(forward_mode=ForwardMode.DECODE, batch_size=bs, input_ids=None,
                            req_pool_indices=self.req_pool_indices[:bs], seq_lens=self.seq_lens[:bs],
                            out_cache_loc=self.out_cache_loc[:bs], seq_lens_sum=seq_lens_sum,
                            seq_lens_cpu=seq_lens_cpu, positions=self.positions[:bs])

    def _run_once(self, bs: int, fb: ForwardBatch) -> List[torch.Tensor]:
        be = self.eng.backend
        if not self.legacy:
            be.init_forward_metadata_in_graph(fb)
        outs = []
        with forward_context(ForwardContext(be)):
            for i, layer in enumerate(self.eng.layers):
                outs.append(layer.forward(self.q[i][:bs], self.k[i][:bs], self.v[i][:bs], fb))
        return outs

    def capture(self, bs: int) -> None:
        be = self.eng.backend
        fb = self._fb(bs, torch.full((bs,), self.fill, dtype=torch.int32), bs * self.fill)
        if self.legacy:
            be.init_forward_metadata_capture_cuda_graph(bs, bs, fb.req_pool_indices, fb.seq_lens, None,
                                                        ForwardMode.DECODE, None)
        else:
            be.init_forward_metadata_out_graph(fb, in_capture=True)
        record_graph(self, bs, fb)
        self.fbs = getattr(self, "fbs", {})
        self.fbs[bs] = fb

    def bucket(self, raw_bs: int) -> int:
        for bs in self.capture_bs:
            if bs >= raw_bs:
                return bs
        raise ValueError(f"batch of {raw_bs} exceeds the largest captured size {self.max_bs}")

    def replay(self, fb: ForwardBatch, inputs: List[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
               ) -> List[torch.Tensor]:
        """Replay a real decode batch (made by Engine.decode_batch) padded to
        the bucket; returns each layer's output rows of the real requests."""
        raw = fb.batch_size
        bs = self.bucket(raw)
        load_static_batch(self, fb, raw)
        for i, (q, k, v) in enumerate(inputs):
            self.q[i][:raw].copy_(q)
            self.k[i][:raw].copy_(k)
            self.v[i][:raw].copy_(v)
        cpu = torch.full((bs,), self.fill, dtype=torch.int32)
        cpu[:raw] = fb.seq_lens_cpu
        total = int(cpu.sum())
        be = self.eng.backend
        if self.legacy:
            be.init_forward_metadata_replay_cuda_graph(bs, self.req_pool_indices, self.seq_lens, total, None,
                                                       ForwardMode.DECODE, None, cpu)
        else:
            be.init_forward_metadata_out_graph(self._fb(bs, cpu, total))
        if self.graphs[bs] is not None:
            self.graphs[bs].replay()
        return [o[:raw] for o in self.outputs[bs]]
