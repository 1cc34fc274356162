"""A hybrid GDN model (Qwen3-Next shaped: three linear layers and one
full-attention layer) as sglang builds and drives it, over the stub `sglang`
package: its HybridReqToTokenPool / MambaPool and token pool, the model
runner, the backend tree (a registered sglattn factory, then
attn_backend_wrapper, which register() has wrapped) and the layers with
random GDN weights.  HybridGraphRunner captures TARGET_VERIFY (or DECODE)
batches in sglang's graph call order and replays real batches padded to the captured
size; verify_graphs_against_eager checks such replays against an eager twin.

Used by tests/python/test_sglang_hybrid.py (CPU, gdn/cpu_ref) and
bench/gpu/python_e2e.py's hybrid_vgraph part (CUDA, a real torch.cuda graph).
register() must have run (the tests' registry fixture, or the bench part).
"""
from __future__ import annotations

import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.layers.attention import attention_registry as reg
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.layers.radix_linear_attention import RadixLinearAttention
from sglang.srt.mem_cache.memory_pool import HybridReqToTokenPool, MHATokenToKVPool
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import EagleVerifyInput

from sgl_driver import load_static_batch, record_graph

HQ, HKV, D = 4, 2, 64                      # full attention
HK, HV, K, V, W = 2, 4, 16, 8, 4           # linear (GDN)
CONV = 2 * HK * K + HV * V
LAYERS, FULL = 4, [3]
MAX_REQS, MAMBA_SLOTS, CTX, TOKENS = 8, 12, 256, 1024
CFG = {"model_type": "qwen3_next", "num_hidden_layers": LAYERS, "num_attention_heads": HQ,
       "num_key_value_heads": HKV, "hidden_size": HQ * D, "head_dim": D, "full_attention_interval": 4,
       "linear_num_key_heads": HK, "linear_num_value_heads": HV, "linear_key_head_dim": K,
       "linear_value_head_dim": V, "linear_conv_kernel_dim": W, "torch_dtype": "float32"}


class HybridEngine:
    """sglang's pools for a hybrid model, its model runner, the backend tree
    sglang builds (factory, then attn_backend_wrapper) and the model's
    layers with random GDN weights.  `dtype` is the model's (token pool,
    activations); the GDN weights stay float32, the MambaPool state is in
    conv_dtype / ssm_dtype.  graphs: sglang runs with CUDA graphs (the
    stack is selected for capture)."""

    def __init__(self, conv_dtype: torch.dtype = torch.float32, ssm_dtype: torch.dtype = torch.float32, seed: int = 0,
                 draft_tokens: Optional[int] = None, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 backend: str = "sglattn_cpu_ref", graphs: bool = False) -> None:
        self.g = torch.Generator().manual_seed(seed)
        self.device, self.dtype = device, dtype
        self.req_pool = HybridReqToTokenPool(size=MAX_REQS, mamba_size=MAMBA_SLOTS, max_context_len=CTX,
                                             device=device, mamba_layer_ids=[0, 1, 2], conv_shape=(CONV, W - 1),
                                             temporal_shape=(HV, V, K), conv_dtype=conv_dtype, ssm_dtype=ssm_dtype,
                                             speculative_num_draft_tokens=draft_tokens)
        self.req_pool.alloc(1)  # row 0: padding
        self.kv_pool = MHATokenToKVPool(TOKENS, 1, dtype, HKV, D, LAYERS, device)
        sa = ServerArgs(page_size=1, max_running_requests=MAX_REQS, max_prefill_tokens=TOKENS,
                        disable_cuda_graph=not graphs, speculative_num_draft_tokens=draft_tokens)
        cfg = dict(CFG, torch_dtype=str(dtype).rsplit(".", 1)[-1])
        self.runner = ModelRunner(ModelConfig(cfg, context_len=CTX), sa, self.kv_pool, self.req_pool, device, dtype)
        self.runner.mambaish_config = self.runner.hybrid_gdn_config = types.SimpleNamespace(
            full_attention_layer_ids=FULL)
        self.full = reg.ATTENTION_BACKENDS[backend](self.runner)
        self.backend = reg.attn_backend_wrapper(self.runner, self.full)
        self.runner.attn_backend = self.backend
        r = lambda *s: torch.randn(*s, generator=self.g).to(device)  # noqa: E731
        self.layers: List[Any] = [
            RadixLinearAttention(i, HK, HK, HV, K, K, V, r(CONV, W) * 0.5, r(CONV) * 0.1, "silu",
                                 torch.rand(HV, generator=self.g).to(device), r(HV) * 0.1) for i in range(3)]
        self.layers.append(RadixAttention(HQ, D, D ** -0.5, HKV, 3))
        self.next_slot = 1
        self.reqs: Dict[str, List[int]] = {}  # rid -> [row, length]

    def add(self, rid: str, mamba_slot: int) -> None:
        row = self.req_pool.alloc(1)[0]
        self.req_pool.req_index_to_mamba_index_mapping[row] = mamba_slot
        self.reqs[rid] = [row, 0]

    def batch(self, items: Sequence[Tuple[str, int]], mode: ForwardMode) -> ForwardBatch:
        """items [(rid, new tokens)]: an sglang ForwardBatch."""
        rows, prefix, seq, locs, pos = [], [], [], [], []
        for rid, n in items:
            row, length = self.reqs[rid]
            new = list(range(self.next_slot, self.next_slot + n))
            self.next_slot += n
            self.req_pool.req_to_token[row, length:length + n] = torch.tensor(new, dtype=torch.int32)
            rows.append(row)
            prefix.append(length)
            seq.append(length + n)
            locs += new
            pos += list(range(length, length + n))
            self.reqs[rid][1] = length + n
        ext = [n for _, n in items]
        dev = self.device
        i32 = lambda x: torch.tensor(x, dtype=torch.int32, device=dev)  # noqa: E731
        i64 = lambda x: torch.tensor(x, dtype=torch.int64, device=dev)  # noqa: E731
        kw: Dict[str, Any] = {}
        if mode == ForwardMode.TARGET_VERIFY:
            seq = prefix
            kw["spec_info"] = EagleVerifyInput(topk=1, draft_token_num=ext[0])
        elif mode != ForwardMode.DECODE:
            kw = dict(extend_num_tokens=sum(ext), extend_seq_lens=i32(ext), extend_prefix_lens=i32(prefix),
                      extend_start_loc=i32([sum(ext[:i]) for i in range(len(ext))]), extend_prefix_lens_cpu=prefix,
                      extend_seq_lens_cpu=ext)
        fb = ForwardBatch(forward_mode=mode, batch_size=len(items),
                          input_ids=torch.zeros(sum(ext), dtype=torch.int64, device=dev),
                          req_pool_indices=i64(rows), seq_lens=i32(seq), out_cache_loc=i64(locs),
                          seq_lens_sum=sum(seq), seq_lens_cpu=torch.tensor(seq, dtype=torch.int32),
                          positions=i64(pos), **kw)
        fb._items, fb._prefix = list(items), prefix  # type: ignore[attr-defined]
        return fb

    def mamba(self, layer: int) -> Tuple[torch.Tensor, torch.Tensor]:
        c = self.req_pool.mamba2_layer_cache(layer)
        return c.conv[0], c.temporal

    def inputs(self, T: int, g: torch.Generator) -> List[Tuple[torch.Tensor, ...]]:
        """One forward's inputs per layer: (mixed_qkv, a, b) for a linear
        layer, (q, k, v) for the full-attention one, in the model's dtype."""
        out: List[Tuple[torch.Tensor, ...]] = []
        for layer in self.layers:
            sizes = (HQ * D, HKV * D, HKV * D) if layer.layer_id in FULL else (CONV, HV, HV)
            out.append(tuple(torch.randn(T, n, generator=g).to(self.dtype).to(self.device) for n in sizes))
        return out

    def run(self, fb: ForwardBatch, inputs: List[Tuple[torch.Tensor, ...]], plan: bool = True) -> List[Any]:
        """One forward of every layer (eager): each layer's output."""
        if plan:
            self.backend.init_forward_metadata(fb)
        return run_layers(self, fb, inputs)


def run_layers(eng: HybridEngine, fb: ForwardBatch, inputs: Sequence[Tuple[torch.Tensor, ...]]) -> List[Any]:
    outs = []
    with forward_context(ForwardContext(eng.backend)):
        for layer, x in zip(eng.layers, inputs):
            if layer.layer_id in FULL:
                outs.append(layer.forward(x[0], x[1], x[2], fb))
            else:
                outs.append(layer.forward(fb, x[0], x[1], x[2]))
    return outs


class HybridGraphRunner:
    """sglang's graph runner for TARGET_VERIFY batches (chains, `draft`
    tokens per request; or DECODE batches with mode= and draft 1), reduced to the attention calls and their order
    (the current form): init_cuda_graph_state once; per batch size, largest
    first, init_forward_metadata_out_graph(fb, in_capture=True) outside the
    graph, then run_once = init_forward_metadata_in_graph(fb) + every layer
    on the static input buffers, twice to warm up and once captured.  A
    replay copies the real batch into the static buffers (a padded request:
    request row 0, seq_lens the fill value, slot 0 for its tokens; its input
    rows keep whatever they held), calls init_forward_metadata_out_graph
    with the padded batch and replays.  legacy: the older methods
    (init_forward_metadata_capture_cuda_graph / _replay_cuda_graph, no
    in-graph hook), called on both backends as sglang's hybrid backend does.

    With CUDA the capture is a torch.cuda.CUDAGraph.  On the CPU there is no
    graph: a replay runs the captured run_once again on the captured batch
    object, after rebinding what a graph fixes at capture (the graph's Batch
    struct that the forwards' arguments point at, its row count), and with
    every host-side plan call (a Batch refilled, a plugin plan, the
    MambaPool's slots read) made to fail, so only what the graph records
    runs again, and with the adapter's attributes put back afterwards as
    the out-of-graph call left them (a graph replay runs no Python); and the stack's capture and replay hooks plan as
    init_forward_metadata (_host_graph_plans)."""

    HOST_PLAN = ("_fill", "_graph_slots", "_mamba_indices", "init_forward_metadata",
                 "init_forward_metadata_out_graph", "init_forward_metadata_capture_cuda_graph",
                 "init_forward_metadata_replay_cuda_graph")

    def __init__(self, eng: HybridEngine, draft: int, capture_bs: Sequence[int] = (2, 4),
                 cuda_graph: Optional[bool] = None, legacy: bool = False,
                 mode: ForwardMode = ForwardMode.TARGET_VERIFY) -> None:
        self.eng = eng
        self.draft = draft
        self.legacy = legacy
        self.mode = mode
        self.cuda = eng.device.startswith("cuda") if cuda_graph is None else cuda_graph
        self.capture_bs = sorted(capture_bs)
        self.max_bs = max(capture_bs)
        if not self.cuda:
            self._host_graph_plans()
        be, dev, n = eng.backend, eng.device, draft
        be.init_cuda_graph_state(self.max_bs, self.max_bs * n)
        self.fill = int(be.get_cuda_graph_seq_len_fill_value())
        self.req_pool_indices = torch.zeros(self.max_bs, dtype=torch.int64, device=dev)
        self.seq_lens = torch.full((self.max_bs,), self.fill, dtype=torch.int32, device=dev)
        self.out_cache_loc = torch.zeros(self.max_bs * n, dtype=torch.int64, device=dev)
        self.positions = torch.zeros(self.max_bs * n, dtype=torch.int64, device=dev)
        g = torch.Generator().manual_seed(1234)
        # static inputs; rows no real token fills keep this noise (a padded request's must not matter)
        self.inputs = [tuple(t * 10 for t in x) for x in eng.inputs(self.max_bs * n, g)]
        self.graphs: Dict[int, Any] = {}
        self.outputs: Dict[int, List[Any]] = {}
        self.fbs: Dict[int, ForwardBatch] = {}
        self.pool: Any = None
        for bs in reversed(self.capture_bs):
            self.capture(bs)

    def _host_graph_plans(self) -> None:
        """cpu_ref plans on the host and has no graph ops: here a capture or
        replay hook of the stack plans the graph's batch as
        init_forward_metadata does (what the stack's graph ops do with a
        batch is the C tests' business; this runner tests the adapter)."""
        be = self.eng.full.backend
        if "graph_capture" in be.features:
            return
        be.features.append("graph_capture")
        be.init_graph_state = lambda max_bs, max_num_tokens: None
        be.capture = lambda batch, *a, **k: be.init_forward_metadata(batch)
        be.replay = lambda batch, *a, **k: be.init_forward_metadata(batch)
        # cpu_ref plans from what the batch holds then; the older form's batch gets out_cache_loc and
        # positions at the first captured forward, so the emulated plan runs again there
        full = self.eng.full
        bind = full._bind_graph_batch

        def bind_and_plan(fb: Any) -> None:
            batch = full._bind_pending
            bind(fb)
            be.init_forward_metadata(batch)

        full._bind_graph_batch = bind_and_plan

    def _fb(self, bs: int, seq_lens_cpu: torch.Tensor) -> ForwardBatch:
        n = self.draft
        spec = EagleVerifyInput(topk=1, draft_token_num=n) if self.mode == ForwardMode.TARGET_VERIFY else None
        return ForwardBatch(forward_mode=self.mode, batch_size=bs, input_ids=None,
                            req_pool_indices=self.req_pool_indices[:bs], seq_lens=self.seq_lens[:bs],
                            out_cache_loc=self.out_cache_loc[:bs * n], seq_lens_sum=int(seq_lens_cpu.sum()),
                            seq_lens_cpu=seq_lens_cpu, positions=self.positions[:bs * n],
                            spec_info=spec)

    def _run_once(self, bs: int, fb: ForwardBatch) -> List[Any]:
        if not self.legacy:
            self.eng.backend.init_forward_metadata_in_graph(fb)
        T = bs * self.draft
        return run_layers(self.eng, fb, [tuple(t[:T] for t in x) for x in self.inputs])

    def capture(self, bs: int) -> None:
        be = self.eng.backend
        fb = self._fb(bs, torch.full((bs,), self.fill, dtype=torch.int32))
        if self.legacy:  # sglang's hybrid backend calls both of its backends' older methods
            for b in (self.eng.full, self.eng.full.linear_backend):
                b.init_forward_metadata_capture_cuda_graph(bs, bs * self.draft, fb.req_pool_indices, fb.seq_lens,
                                                           None, self.mode, fb.spec_info)
        else:
            be.init_forward_metadata_out_graph(fb, in_capture=True)
        record_graph(self, bs, fb)
        self.fbs[bs] = fb

    def bucket(self, raw_bs: int) -> int:
        for bs in self.capture_bs:
            if bs >= raw_bs:
                return bs
        raise ValueError(f"batch of {raw_bs} exceeds the largest captured size {self.max_bs}")

    def replay(self, fb: ForwardBatch, inputs: Sequence[Tuple[torch.Tensor, ...]]) -> List[Any]:
        """Replay a real verify batch (HybridEngine.batch) padded to its
        bucket; returns each layer's output rows of the real tokens."""
        raw, n = fb.batch_size, self.draft
        bs = self.bucket(raw)
        T = raw * n
        load_static_batch(self, fb, T)
        for static, live in zip(self.inputs, inputs):
            for s, x in zip(static, live):
                s[:T].copy_(x)
        cpu = torch.full((bs,), self.fill, dtype=torch.int32)
        cpu[:raw] = fb.seq_lens_cpu
        be = self.eng.backend
        sfb = self._fb(bs, cpu)
        if self.legacy:
            for b in (self.eng.full, self.eng.full.linear_backend):
                b.init_forward_metadata_replay_cuda_graph(bs, self.req_pool_indices, self.seq_lens,
                                                          sfb.seq_lens_sum, None, self.mode,
                                                          sfb.spec_info, cpu)
        else:
            be.init_forward_metadata_out_graph(sfb)
        if self.graphs[bs] is not None:
            self.graphs[bs].replay()
            outs = self.outputs[bs]
        else:
            outs = self._emulated_replay(bs)
        return [o[0, :T] if o.dim() == 4 else o[:T] for o in outs]

    def _emulated_replay(self, bs: int) -> List[Any]:
        full = self.eng.full
        # a replay runs no Python: what the adapter holds after it is what init_forward_metadata_out_graph left
        after_out_graph, bound = dict(full.__dict__), full.backend._batch
        batch = full._graph_batches[(bs, int(self.mode))]
        full._batch, full._rows = batch, batch.num_tokens
        full.backend._bind(batch)

        def refused(name: str) -> Any:
            def call(*a: Any, **k: Any) -> Any:
                raise AssertionError(f"{name} ran inside an emulated graph replay: a host-side plan a CUDA graph "
                                     f"does not record")
            return call

        for name in self.HOST_PLAN:
            setattr(full, name, refused(name))
        plans = {name: full.backend.__dict__.get(name) for name in ("init_forward_metadata", "capture", "replay")}
        for name in plans:
            setattr(full.backend, name, refused(f"Backend.{name}"))
        try:
            return self._run_once(bs, self.fbs[bs])
        finally:
            for name, was in plans.items():
                if was is None:
                    delattr(full.backend, name)
                else:
                    setattr(full.backend, name, was)
            full.__dict__.clear()
            full.__dict__.update(after_out_graph)
            full.backend._bind(bound)


def _close(a: torch.Tensor, b: torch.Tensor, tol: float) -> bool:
    if tol == 0:
        return torch.equal(a, b)
    return bool((a.double() - b.double()).abs().max() <= tol * max(1.0, b.double().abs().max().item()))


def verify_graphs_against_eager(device: str = "cpu", dtype: torch.dtype = torch.float32,
                                backend: str = "sglattn_cpu_ref", tol: float = 0.0,
                                state_dtype: torch.dtype = torch.float32, legacy: bool = False) -> Dict[str, Any]:
    """Two twins of one hybrid model (same weights, pools and inputs): one
    runs every step eagerly, the other captures verify graphs of 2 and 4
    requests x 3 draft tokens before any request exists, then replays
    verify batches of 4, 3 (one padded request), 1, 2 and 4 requests in
    other orders, each followed by sglang's
    update_mamba_state_after_mtp_verify (other accepted lengths, a radix
    track once) and some by an eager decode step.  Each replayed layer's
    output rows and, after each commit, every MambaPool slot and the
    full-attention layer's K/V pool must match the eager twin's (tol 0:
    bit for bit).  Raises AssertionError naming the step; returns what ran."""
    N = 3
    kw = dict(seed=11, draft_tokens=N, device=device, dtype=dtype, backend=backend,
              conv_dtype=state_dtype, ssm_dtype=state_dtype)
    eager = HybridEngine(graphs=False, **kw)  # type: ignore[arg-type]
    graph = HybridEngine(graphs=device.startswith("cuda"), **kw)  # type: ignore[arg-type]
    assert graph.full.linear_backend is not None, graph.full.linear_refusal
    runner = HybridGraphRunner(graph, N, capture_bs=(2, 4), legacy=legacy)
    g = torch.Generator().manual_seed(5)
    slots = {"a": 9, "b": 4, "c": 7, "d": 2}
    for e in (eager, graph):
        for r, s in slots.items():
            e.add(r, s)
    prefill = [("a", 9), ("b", 70), ("c", 5), ("d", 33)]
    x = eager.inputs(sum(n for _, n in prefill), g)
    for e in (eager, graph):
        e.run(e.batch(prefill, ForwardMode.EXTEND), x)
    steps = [(["a", "b", "c", "d"], [3, 1, 2, 3], None),
             (["b", "d", "a"], [2, 3, 1], None),          # 3 requests in the graph of 4
             (["c"], [2], ([5], [0])),                     # 1 in the graph of 2; track c's first draft in slot 5
             (["d", "a"], [1, 1], None),
             (["c", "a", "d", "b"], [3, 3, 2, 1], None)]
    ran = []
    for i, (rids, accepted, track) in enumerate(steps):
        items = [(r, N) for r in rids]
        prefix = {r: eager.reqs[r][1] for r in rids}
        T = len(rids) * N
        x = eager.inputs(T, g)
        want = eager.run(eager.batch(items, ForwardMode.TARGET_VERIFY), x)
        got = runner.replay(graph.batch(items, ForwardMode.TARGET_VERIFY), x)
        for lid, (o, w) in enumerate(zip(got, want)):
            w = w[0] if w.dim() == 4 else w
            assert o.shape == w.shape, (i, lid, o.shape, w.shape)
            assert _close(o, w, tol), f"verify step {i} ({len(rids)} requests): layer {lid}'s output"
        last = torch.tensor([n - 1 for n in accepted], dtype=torch.int64, device=device)
        tk = {}
        if track is not None:
            tk = dict(mamba_track_indices=torch.tensor(track[0], dtype=torch.int64, device=device),
                      mamba_steps_to_track=torch.tensor(track[1], dtype=torch.int64, device=device))
        for e in (eager, graph):
            e.backend.update_mamba_state_after_mtp_verify(last, tk.get("mamba_track_indices"),
                                                          tk.get("mamba_steps_to_track"), None)
            for r, n in zip(rids, accepted):
                e.reqs[r][1] = prefix[r] + n
        for lid in range(3):
            for t_e, t_g, what in zip(eager.mamba(lid), graph.mamba(lid), ("conv", "ssm")):
                for s in range(1, MAMBA_SLOTS + 1):
                    assert _close(t_g[s], t_e[s], tol), f"after verify step {i}'s commit: layer {lid} {what} slot {s}"
        for t_e, t_g in zip(eager.kv_pool.get_kv_buffer(3), graph.kv_pool.get_kv_buffer(3)):
            assert _close(t_g[1:], t_e[1:], tol), f"verify step {i}: the full-attention layer's K/V pool"
        if i % 2 == 1:  # an eager decode step on both, from the committed states
            x = eager.inputs(len(rids), g)
            dec = [(r, 1) for r in rids]
            outs = [e.run(e.batch(dec, ForwardMode.DECODE), x) for e in (eager, graph)]
            for lid, (o, w) in enumerate(zip(*outs)):
                assert _close(o, w, tol), f"decode after verify step {i}: layer {lid}"
        ran.append({"requests": len(rids), "graph_bs": runner.bucket(len(rids)), "accepted": accepted})
    return {"steps": ran, "stack": graph.full.selection.label,
            "supports_target_verify_cuda_graph": bool(graph.full.supports_target_verify_cuda_graph)}


def decode_graphs_against_eager(device: str = "cpu", dtype: torch.dtype = torch.float32,
                                backend: str = "sglattn_cpu_ref", tol: float = 0.0) -> Dict[str, Any]:
    """A hybrid model without speculative decoding: decode graphs of 2 and 4
    requests on one twin, replayed with 3 (padded), 4, 1 (padded) and 2
    requests, against the eager twin: outputs, every MambaPool slot (each
    replay writes the live requests' states, the padded ones none) and the
    K/V pool."""
    kw = dict(seed=12, device=device, dtype=dtype, backend=backend)
    eager = HybridEngine(graphs=False, **kw)  # type: ignore[arg-type]
    graph = HybridEngine(graphs=device.startswith("cuda"), **kw)  # type: ignore[arg-type]
    assert graph.full.linear_backend is not None, graph.full.linear_refusal
    runner = HybridGraphRunner(graph, 1, capture_bs=(2, 4), mode=ForwardMode.DECODE)
    g = torch.Generator().manual_seed(6)
    for e in (eager, graph):
        for r, s in (("a", 9), ("b", 4), ("c", 7), ("d", 2)):
            e.add(r, s)
    prefill = [("a", 1), ("b", 20), ("c", 5), ("d", 70)]
    x = eager.inputs(sum(n for _, n in prefill), g)
    for e in (eager, graph):
        e.run(e.batch(prefill, ForwardMode.EXTEND), x)
    ran = []
    for i, rids in enumerate((["b", "a", "c"], ["a", "b", "c", "d"], ["d"], ["c", "a"], ["d", "c", "b"])):
        items = [(r, 1) for r in rids]
        x = eager.inputs(len(rids), g)
        want = eager.run(eager.batch(items, ForwardMode.DECODE), x)
        got = runner.replay(graph.batch(items, ForwardMode.DECODE), x)
        for lid, (o, w) in enumerate(zip(got, want)):
            w = w[0] if w.dim() == 4 else w
            assert _close(o, w, tol), f"decode step {i} ({len(rids)} requests): layer {lid}'s output"
        for lid in range(3):
            for t_e, t_g, what in zip(eager.mamba(lid), graph.mamba(lid), ("conv", "ssm")):
                for s in range(1, MAMBA_SLOTS + 1):
                    assert _close(t_g[s], t_e[s], tol), f"decode step {i}: layer {lid} {what} slot {s}"
        for t_e, t_g in zip(eager.kv_pool.get_kv_buffer(3), graph.kv_pool.get_kv_buffer(3)):
            assert _close(t_g[1:], t_e[1:], tol), f"decode step {i}: the full-attention layer's K/V pool"
        ran.append({"requests": len(rids), "graph_bs": runner.bucket(len(rids))})
    return {"steps": ran, "stack": graph.full.selection.label}
