"""sglattn.sglang serving both halves of a hybrid GDN model (Qwen3-Next
shaped, three linear layers and one full-attention layer) on gdn/cpu_ref,
driven as sglang drives a hybrid model: register() wraps sglang's
attn_backend_wrapper, which then puts our linear backend (not sglang's GDN
one) into sglang's HybridLinearAttnBackend; the linear layers run on the
stub MambaPool's own tensors as caller-owned state, at the slots
get_mamba_indices gives.  Prefill (a chunk longer than 64 tokens), extend
over a prefix, decode and a mixed batch; the linear outputs are checked bit
for bit against gdn/cpu_ref's pool-owned path and against the float64 path
on float64 state tensors, the engine's state against that float64 state,
the full-attention layer against float64 attention over its pool.  Verify
with its commit, eagerly and through sglang's verify graph order
(tests/python/sgl_hybrid.py's HybridGraphRunner) against an eager twin."""
from __future__ import annotations

import math
import os
import types

import pytest
import torch

import sglattn
import sglattn.sglang as ss
from sglang.srt import server_args
from sglang.srt.layers.attention import attention_registry as reg
from sglang.srt.layers.attention.hybrid_linear_attn_backend import HybridLinearAttnBackend
from sglang.srt.layers.attention.linear.gdn_backend import GDNAttnBackend
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sgl_hybrid import (CFG, CONV, CTX, D, FULL, HKV, HQ, HV, MAMBA_SLOTS, MAX_REQS, TOKENS, K, V, W, HybridEngine,
                        HybridGraphRunner, decode_graphs_against_eager, verify_graphs_against_eager)


@pytest.fixture()
def registry(monkeypatch):
    """sglang's registry, its CLI choices and attn_backend_wrapper, restored after the test."""
    monkeypatch.setattr(reg, "ATTENTION_BACKENDS", dict(reg.ATTENTION_BACKENDS))
    monkeypatch.setattr(reg, "attn_backend_wrapper", reg.attn_backend_wrapper)
    monkeypatch.setattr(server_args, "ATTENTION_BACKEND_CHOICES", list(server_args.ATTENTION_BACKEND_CHOICES))
    monkeypatch.delenv(ss.OVERRIDE_ENV, raising=False)
    ss._HOST = sglattn.Host()
    ss.register()
    return reg


class LinearReference:
    """gdn/cpu_ref driven directly: the wrapper's own pool (float32, its own
    slots 0..) and the float64 path on float64 state tensors at the engine's
    slots."""

    def __init__(self, host, draft_tokens=0):
        spec = dict(spec_tokens=draft_tokens) if draft_tokens else {}
        self.pool = host.create_stack(["gdn", "cpu_ref"], sglattn.Model.load(CFG, **spec), max_reqs=MAX_REQS,
                                      max_tokens=TOKENS, max_context=CTX)
        self.f64 = host.create_stack(["gdn", "cpu_ref"], sglattn.Model.load(CFG, lin_state_dtype="f64", **spec),
                                     max_reqs=MAX_REQS, max_tokens=TOKENS, max_context=CTX)
        self.lp = {i: self.pool.layer(i, None, None) for i in range(3)}
        self.l64 = {i: self.f64.layer(i, None, None) for i in range(3)}
        self.st64 = {i: (torch.zeros(MAMBA_SLOTS + 1, CONV, W - 1, dtype=torch.float64),
                         torch.zeros(MAMBA_SLOTS + 1, HV, V, K, dtype=torch.float64)) for i in range(3)}
        # the float64 path's intermediates, by slot (the ABI's indexing)
        steps = max(draft_tokens, 1)
        self.inter64 = {i: (torch.zeros(MAMBA_SLOTS + 1, steps, CONV, W - 1, dtype=torch.float64),
                            torch.zeros(MAMBA_SLOTS + 1, steps, HV, V, K, dtype=torch.float64)) for i in range(3)}
        self.verify = False

    def commit(self, own_slots, engine_slots, steps):
        """Both paths' commit of each request's accepted step."""
        steps = torch.tensor(steps, dtype=torch.int32)
        self.pool.state_batch("commit", torch.tensor(own_slots, dtype=torch.int32), steps=steps)
        for i in range(3):
            (conv, ssm), (iconv, issm) = self.st64[i], self.inter64[i]
            st = sglattn.LinearInputs("gdn", conv_state=conv, ssm_state=ssm, intermediate_conv_state=iconv,
                                      intermediate_ssm_state=issm)
            self.f64.state_batch("commit", torch.tensor(engine_slots, dtype=torch.int32), steps=steps, state=st)

    def plan(self, fb, own_slots, engine_slots):
        bs = fb.batch_size
        ext = [n for _, n in fb._items]
        kw = {}
        self.verify = fb.forward_mode == ForwardMode.TARGET_VERIFY
        if self.verify:
            kw = dict(tokens_per_req=ext[0])
        elif fb.forward_mode != ForwardMode.DECODE:
            kw = dict(extend_prefix_lens=torch.tensor(fb._prefix, dtype=torch.int32),
                      extend_seq_lens=torch.tensor(ext, dtype=torch.int32), extend_prefix_lens_cpu=fb._prefix,
                      extend_seq_lens_cpu=ext)
        mode = "decode" if fb.forward_mode == ForwardMode.DECODE else "verify" if self.verify else "extend"
        lens = [p + n for p, n in zip(fb._prefix, ext)]
        common = (torch.zeros(MAX_REQS, CTX, dtype=torch.int32), torch.arange(bs, dtype=torch.int32),
                  torch.tensor(lens, dtype=torch.int32), torch.zeros(sum(ext), dtype=torch.int64))
        self.pool.init_forward_metadata(sglattn.Batch(mode, *common, seq_lens_cpu=lens,
                                                      state_indices=torch.tensor(own_slots, dtype=torch.int32), **kw))
        self.f64.init_forward_metadata(sglattn.Batch(mode, *common, seq_lens_cpu=lens,
                                                     state_indices=torch.tensor(engine_slots, dtype=torch.int32),
                                                     **kw))
        self.decode = mode == "decode"

    def run(self, layer, x, a, b):
        w = dict(conv_weight=layer.conv_weights, conv_bias=layer.bias, A_log=layer.A_log, dt_bias=layer.dt_bias)
        T = x.shape[0]
        out = torch.full((T, HV, V), float("nan"))
        keep = self.verify
        lin = sglattn.LinearInputs("gdn", keep_intermediate=keep, out=out, x=x, a=a, b=b, **w)
        (self.pool.forward_decode if self.decode else self.pool.forward_extend)(self.lp[layer.layer_id], None, None,
                                                                              None, None, linear=lin)
        out64 = torch.full((T, HV, V), float("nan"), dtype=torch.float64)
        conv, ssm = self.st64[layer.layer_id]
        iconv, issm = self.inter64[layer.layer_id]
        w64 = {k: (t.double() if t is not None else None) for k, t in w.items()}
        lin = sglattn.LinearInputs("gdn", keep_intermediate=keep, out=out64, x=x.double(), a=a.double(),
                                   b=b.double(), conv_state=conv, ssm_state=ssm, intermediate_conv_state=iconv,
                                   intermediate_ssm_state=issm, **w64)
        (self.f64.forward_decode if self.decode else self.f64.forward_extend)(self.l64[layer.layer_id], None, None,
                                                                            None, None, linear=lin)
        return out, out64


def full_reference(eng, fb, q):
    """float64 causal attention of layer 3's new tokens over what its pool
    holds for each request (through req_to_token, so the save is checked)."""
    kp, vp = eng.kv_pool.get_key_buffer(3).double(), eng.kv_pool.get_value_buffer(3).double()
    qv = q.double().view(-1, HQ, D)
    out, o = torch.empty_like(qv), 0
    for (rid, n) in fb._items:
        row, L = eng.reqs[rid]
        idx = eng.req_pool.req_to_token[row, :L].long()
        Kr, Vr = kp[idx].repeat_interleave(HQ // HKV, 1), vp[idx].repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qv[o:o + n], Kr) * D ** -0.5
        s.masked_fill_(torch.arange(L).view(1, -1) > torch.arange(L - n, L).view(-1, 1), -math.inf)
        out[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), Vr)
        o += n
    return out.view(-1, HQ * D)


def check_states(eng, ref, slots):
    """The engine's MambaPool state at `slots` against the float64 path's."""
    for l in range(3):
        conv, ssm = eng.mamba(l)
        c64, s64 = ref.st64[l]
        for s in slots:
            assert (ssm[s].double() - s64[s]).abs().max() < 1e-4 * max(1.0, s64[s].abs().max().item())
            assert (conv[s].double() - c64[s]).abs().max() < 1e-6 * max(1.0, c64[s].abs().max().item())


def run_checked(eng, ref, items, mode, slots, own):
    """One forward of every layer: the full-attention layer against float64
    attention over its pool, each linear layer bit for bit against
    gdn/cpu_ref's own pool path and within float32 error of the float64
    path.  Returns the engine's main state before the step."""
    g = eng.g
    fb = eng.batch(items, mode)
    rids = [r for r, _ in items]
    ref.plan(fb, [own[r] for r in rids], [slots[r] for r in rids])
    T = sum(n for _, n in items)
    before = {l: [t.clone() for t in eng.mamba(l)] for l in range(3)}
    eng.backend.init_forward_metadata(fb)
    with forward_context(ForwardContext(eng.backend)):
        for layer in eng.layers:
            if layer.layer_id in FULL:
                q, k, v = (torch.randn(T, h * D, generator=g) for h in (HQ, HKV, HKV))
                out = layer.forward(q, k, v, fb)
                want = full_reference(eng, fb, q)
                assert (out.double() - want).abs().max() < 2e-5 * max(1.0, want.abs().max().item())
                continue
            x, a, b = (torch.randn(T, n, generator=g) for n in (CONV, HV, HV))
            out = layer.forward(fb, x, a, b)
            assert out.shape == (1, T, HV, V) and torch.isfinite(out).all()
            pool_out, out64 = ref.run(layer, x, a, b)
            assert torch.equal(out[0], pool_out), (mode, layer.layer_id)
            assert (out[0].double() - out64).abs().max() < 1e-4 * max(1.0, out64.abs().max().item())
    return before


def test_hybrid_model_linear_layers_on_sglangs_mamba_pool(registry):
    eng = HybridEngine(seed=4)
    full, hyb = eng.full, eng.backend
    assert isinstance(hyb, HybridLinearAttnBackend) and hyb.full_attn_backend is full
    assert hyb.linear_attn_backend is full.linear_backend and hyb.full_attn_layers == FULL
    assert full.stack == ["gdn", "cpu_ref"] and "caller_state" in full.backend.features
    ref = LinearReference(sglattn.Host())
    # engine slots past max_reqs (sglang's mamba pool is larger than the request pool)
    slots = {"a": 9, "b": 4, "c": 11}
    own = {"a": 0, "b": 1, "c": 2}
    eng.add("a", 9)
    eng.add("b", 4)
    steps = [([("a", 9), ("b", 70)], ForwardMode.EXTEND),          # prefill, b longer than one 64-token chunk
             ([("a", 5), ("c", 12)], ForwardMode.EXTEND),          # extend over a prefix, c fresh
             ([("a", 1), ("b", 1), ("c", 1)], ForwardMode.DECODE),
             ([("b", 1), ("c", 6), ("a", 1)], ForwardMode.MIXED),
             ([("a", 1), ("b", 1), ("c", 1)], ForwardMode.DECODE)]
    for i, (items, mode) in enumerate(steps):
        if i == 1:
            eng.add("c", 11)
        before = run_checked(eng, ref, items, mode, slots, own)
        # the engine's tensors are the ones updated: the batch's slots changed, no other did
        used = [slots[r] for r, _ in items]
        for l in range(3):
            conv, ssm = eng.mamba(l)
            for s in range(MAMBA_SLOTS + 1):
                same = torch.equal(ssm[s], before[l][1][s]) and torch.equal(conv[s], before[l][0][s])
                assert same == (s not in used), (i, l, s)
    check_states(eng, ref, slots.values())


def test_verify_on_linear_layers_then_commit_the_accepted_steps(registry):
    """A Qwen3-Next-shaped model with MTP: prefill, a verify of 3 draft
    tokens per request (sglang's intermediate_ssm / intermediate_conv_window
    written at the request's batch row, the main state untouched), sglang's
    update_mamba_state_after_mtp_verify with an accepted length per request
    (and a radix track of one request's first draft), then decode; again
    with other accepted lengths.  Outputs and states against gdn/cpu_ref's
    own pool (verify with keep_intermediate, state_batch commit) and the
    float64 path."""
    N = 3
    eng = HybridEngine(seed=8, draft_tokens=N)
    ref = LinearReference(sglattn.Host(), draft_tokens=N)
    assert type(eng.backend).__name__ == "SglAttnHybridLinearAttnBackend"
    slots = {"a": 9, "b": 4}
    own = {"a": 0, "b": 1}
    eng.add("a", 9)
    eng.add("b", 4)
    spec = eng.req_pool.get_speculative_mamba2_params_all_layers()
    run_checked(eng, ref, [("a", 9), ("b", 70)], ForwardMode.EXTEND, slots, own)
    for accepted, track in (([2, 3], [0, -1]), ([3, 1], None)):
        prefix = {r: eng.reqs[r][1] for r in slots}
        before = run_checked(eng, ref, [("a", N), ("b", N)], ForwardMode.TARGET_VERIFY, slots, own)
        for l in range(3):  # verify leaves the main state alone ...
            conv, ssm = eng.mamba(l)
            assert torch.equal(conv, before[l][0]) and torch.equal(ssm, before[l][1])
            # ... and writes the state after each draft at the request's batch row, as the float64 path at its slot
            for row, r in enumerate(("a", "b")):
                i64c, i64s = ref.inter64[l][0][slots[r]], ref.inter64[l][1][slots[r]]
                assert (spec.intermediate_ssm[l, row].double() - i64s).abs().max() < 1e-4 * max(1.0, i64s.abs().max())
                assert (spec.intermediate_conv_window[0][l, row].double() - i64c).abs().max() < 1e-6 * max(
                    1.0, i64c.abs().max())
        inter = spec.intermediate_ssm.clone(), spec.intermediate_conv_window[0].clone()
        last = torch.tensor([n - 1 for n in accepted], dtype=torch.int64)
        kw = {}
        if track is not None:  # sglang's radix cache keeps a's state after its first draft in spare slot 6
            kw = dict(mamba_track_indices=torch.tensor([6, -1], dtype=torch.int64),
                      mamba_steps_to_track=torch.tensor(track, dtype=torch.int64))
        eng.backend.update_mamba_state_after_mtp_verify(last, kw.get("mamba_track_indices"),
                                                        kw.get("mamba_steps_to_track"), None)
        ref.commit([own[r] for r in ("a", "b")], [slots[r] for r in ("a", "b")], [n - 1 for n in accepted])
        for l in range(3):
            conv, ssm = eng.mamba(l)
            for row, r in enumerate(("a", "b")):
                assert torch.equal(ssm[slots[r]], inter[0][l, row, accepted[row] - 1])
                assert torch.equal(conv[slots[r]], inter[1][l, row, accepted[row] - 1])
            if track is not None:
                assert torch.equal(ssm[6], inter[0][l, 0, 0]) and torch.equal(conv[6], inter[1][l, 0, 0])
            for s in range(1, MAMBA_SLOTS + 1):  # nothing else but sglang's padding slot 0
                if s not in (9, 4) and not (track is not None and s == 6):
                    assert torch.equal(ssm[s], before[l][1][s]) and torch.equal(conv[s], before[l][0][s]), (l, s)
        # sglang keeps the accepted tokens only
        for r, n in zip(("a", "b"), accepted):
            eng.reqs[r][1] = prefix[r] + n
        run_checked(eng, ref, [("a", 1), ("b", 1)], ForwardMode.DECODE, slots, own)
    check_states(eng, ref, slots.values())


def test_linear_verify_refused_by_name(registry):
    eng = HybridEngine()
    eng.add("a", 3)
    eng.backend.init_forward_metadata(eng.batch([("a", 5)], ForwardMode.EXTEND))
    with pytest.raises(sglattn.Error, match=r"update_mamba_state_after_mtp_verify without a verify batch"):
        eng.backend.update_mamba_state_after_mtp_verify(torch.tensor([0]), None, None, None)
    fb = eng.batch([("a", 3)], ForwardMode.TARGET_VERIFY)
    eng.backend.init_forward_metadata(fb)
    with forward_context(ForwardContext(eng.backend)):
        # a pool without intermediate states (sglang without speculative_num_draft_tokens)
        with pytest.raises(NotImplementedError, match=r"target verify on linear-attention layer 0: the MambaPool "
                                                      r"keeps no intermediate_ssm"):
            eng.layers[0].forward(fb, torch.randn(3, CONV), torch.randn(3, HV), torch.randn(3, HV))
    eng = HybridEngine(draft_tokens=3)
    eng.add("a", 3)
    eng.backend.init_forward_metadata(eng.batch([("a", 5)], ForwardMode.EXTEND))
    fb = eng.batch([("a", 3)], ForwardMode.TARGET_VERIFY)
    eng.backend.init_forward_metadata(fb)
    fb.spec_info.topk = 2  # a tree (planned as a chain here): the linear state follows one chain
    with forward_context(ForwardContext(eng.backend)):
        with pytest.raises(NotImplementedError, match=r"tree verify \(speculative topk 2 > 1\) on linear-attention "
                                                      r"layer 0"):
            eng.layers[0].forward(fb, torch.randn(3, CONV), torch.randn(3, HV), torch.randn(3, HV))
        with pytest.raises(NotImplementedError, match=r"layer 1 is a linear-attention layer; its calls go through "
                                                      r"linear_backend"):
            eng.full.forward_extend(torch.randn(3, HQ * D), torch.randn(3, HKV, D), torch.randn(3, HKV, D),
                                    RadixAttention(HQ, D, D ** -0.5, HKV, 1), fb)


def test_bad_mamba_slot_and_state_dtype_name_the_field(registry):
    eng = HybridEngine()
    eng.add("a", MAMBA_SLOTS + 5)  # past the pool's S = MAMBA_SLOTS + 1
    fb = eng.batch([("a", 4)], ForwardMode.EXTEND)
    eng.backend.init_forward_metadata(fb)  # plans: a caller's slot is bounded by its tensors, at the forward
    with forward_context(ForwardContext(eng.backend)):
        with pytest.raises(sglattn.Error, match=r"gdn layer 0: batch.state_indices\[0\] = 17; expected -1 "
                                                r"\(padding\) or a slot 0..12 \(linear.conv_state has 13 slots\)"):
            eng.layers[0].forward(fb, torch.randn(4, CONV), torch.randn(4, HV), torch.randn(4, HV))
    # the pool's conv state replaced by one in another dtype than the instance keeps (float32)
    eng = HybridEngine()
    eng.add("a", 2)
    eng.req_pool.mamba_pool.mamba_cache.conv[0] = eng.req_pool.mamba_pool.mamba_cache.conv[0].double()
    fb = eng.batch([("a", 4)], ForwardMode.EXTEND)
    eng.backend.init_forward_metadata(fb)
    with forward_context(ForwardContext(eng.backend)):
        with pytest.raises(sglattn.Error, match=r"linear.conv_state has dtype float64; expected float32"):
            eng.layers[0].forward(fb, torch.randn(4, CONV), torch.randn(4, HV), torch.randn(4, HV))


def test_conv_and_ssm_state_in_two_dtypes_stay_with_sglang(registry):
    """A wrapper keeps one state dtype: a pool with float64 conv and float32
    temporal state leaves the linear layers to sglang, naming both."""
    eng = HybridEngine(conv_dtype=torch.float64)
    assert eng.full.linear_backend is None and eng.full.stack == ["cpu_ref"]
    assert isinstance(eng.backend.linear_attn_backend, GDNAttnBackend)
    assert eng.full.linear_refusal == ("the MambaPool keeps its conv state in torch.float64 and its temporal (SSM) "
                                       "state in torch.float32; a wrapper keeps both in one dtype (lin_state_dtype)")


def test_state_in_a_dtype_no_stack_keeps_falls_back_to_sglangs_linear_backend(registry):
    """bf16 state: the CPU wrappers keep F32/F64 only, so the adapter serves
    the full-attention layers and leaves the linear ones to sglang's own GDN
    backend, saying why when a linear layer reaches it."""
    eng = HybridEngine(conv_dtype=torch.bfloat16, ssm_dtype=torch.bfloat16)
    assert eng.full.linear_backend is None and eng.full.stack == ["cpu_ref"]
    assert isinstance(eng.backend, HybridLinearAttnBackend)
    assert isinstance(eng.backend.linear_attn_backend, GDNAttnBackend)
    assert "bf16" in eng.full.linear_refusal
    eng.add("a", 1)
    fb = eng.batch([("a", 5)], ForwardMode.EXTEND)
    eng.full.init_forward_metadata(fb)
    with pytest.raises(NotImplementedError, match=r"layer 0 is a linear-attention layer of qwen3_next; .*"
                                                  r"full-attention layers \[3\] .*bf16"):
        eng.full.forward_extend(torch.randn(5, HQ * D), torch.randn(5, HKV, D), torch.randn(5, HKV, D),
                                RadixAttention(HQ, D, D ** -0.5, HKV, 0), fb)


def test_register_wraps_attn_backend_wrapper_once(registry):
    w = reg.attn_backend_wrapper
    assert getattr(w, "_sglattn", False)
    ss.register()
    assert reg.attn_backend_wrapper is w
    # a backend that is not ours goes to sglang's function unchanged
    runner = types.SimpleNamespace(mambaish_config=None)
    other = object()
    assert w(runner, other) is other


def test_linear_call_cached_per_layer_and_rebuilt_when_the_pool_tensors_change(registry, monkeypatch):
    """A linear layer's LinearInputs is made once: decode steps make none,
    and only point x, a, b and out at their tensors.  Replacing the pool's
    tensors (sglang reallocating its MambaPool) makes a new one, and the
    forwards then update the new tensors, not the old."""
    made = []

    class Counting(sglattn.LinearInputs):
        def __init__(self, *args, **kw):
            made.append(kw.get("conv_state"))
            super().__init__(*args, **kw)

    monkeypatch.setattr(ss, "LinearInputs", Counting)
    eng = HybridEngine(seed=6)
    eng.add("a", 3)
    g = eng.g

    def step(items, mode):
        fb = eng.batch(items, mode)
        T = sum(n for _, n in items)
        eng.backend.init_forward_metadata(fb)
        outs = []
        with forward_context(ForwardContext(eng.backend)):
            for layer in eng.layers[:3]:
                outs.append(layer.forward(fb, torch.randn(T, CONV, generator=g), torch.randn(T, HV, generator=g),
                                          torch.randn(T, HV, generator=g)))
        return outs

    step([("a", 7)], ForwardMode.EXTEND)
    assert len(made) == 3  # one per linear layer
    entries = {l: eng.full._lin_cache[l] for l in range(3)}
    for _ in range(3):
        step([("a", 1)], ForwardMode.DECODE)
    assert len(made) == 3
    assert all(eng.full._lin_cache[l] is entries[l] for l in range(3))
    # sglang replaces the pool's tensors: the next call describes the new ones
    mc = eng.req_pool.mamba_pool.mamba_cache
    old_conv, old_ssm = mc.conv[0], mc.temporal
    mc.conv[0] = old_conv.clone()
    object.__setattr__(mc, "temporal", old_ssm.clone())  # State is a frozen dataclass, as in sglang
    snap = old_conv.clone(), old_ssm.clone()
    step([("a", 1)], ForwardMode.DECODE)
    assert len(made) == 6 and all(eng.full._lin_cache[l] is not entries[l] for l in range(3))
    assert made[3].data_ptr() == mc.conv[0][0].data_ptr()
    assert torch.equal(old_conv, snap[0]) and torch.equal(old_ssm, snap[1])  # the old tensors untouched
    assert not torch.equal(mc.temporal[:, 3], snap[1][:, 3]) and not torch.equal(mc.conv[0][:, 3], snap[0][:, 3])


def test_verify_graphs_follow_the_stacks_caps(registry, monkeypatch):
    """sglang captures verify batches in graphs (supports_target_verify_cuda_graph)
    where the stack declares graph_verify (SGL_ATTN_FEAT_GRAPH_VERIFY):
    gdn/cpu_ref does not (CPU, no graphs).  With the bit, the adapter says
    yes whether it serves the linear layers too (their verify rows and
    gather are derived inside the graph) or the full-attention ones only."""
    eng = HybridEngine(draft_tokens=3)
    assert eng.full.stack == ["gdn", "cpu_ref"] and eng.full.linear_backend is not None
    assert "graph_verify" not in eng.full.backend.features
    assert eng.full.supports_target_verify_cuda_graph is False
    create = sglattn.host.Selection.create

    def create_with_bit(self, **kw):
        be = create(self, **kw)
        be.features.append("graph_verify")
        return be

    monkeypatch.setattr(sglattn.host.Selection, "create", create_with_bit)
    eng = HybridEngine(draft_tokens=3)
    assert eng.full.stack == ["gdn", "cpu_ref"] and eng.full.linear_backend is not None
    assert eng.full.supports_target_verify_cuda_graph is True
    assert not hasattr(eng.full, "verify_graph_refusal")
    eng = HybridEngine(conv_dtype=torch.float64, draft_tokens=3)  # the linear layers stay with sglang
    assert eng.full.stack == ["cpu_ref"] and eng.full.linear_backend is None
    assert eng.full.supports_target_verify_cuda_graph is True


@pytest.mark.parametrize("legacy", [False, True], ids=["out_in_graph", "capture_replay"])
def test_verify_graphs_replay_the_batch_they_are_given(registry, legacy):
    """The linear layers' verify through sglang's graph order on gdn/cpu_ref:
    graphs of 2 and 4 requests captured before any request exists, then
    verify batches of 4, 3 (padded to 4), 1 (padded to 2), 2 and 4 requests
    replayed, each committed with other accepted lengths (a radix track
    once) and some followed by a decode: every output row, every MambaPool
    slot and the K/V pool bit for bit an eager twin's.  A CPU replay runs
    what the capture ran with every host-side plan call refused
    (HybridGraphRunner), so rows or a gather planned outside the graph, or
    a commit reading another graph's rows, fail here.  Both graph forms:
    the current one (rows derived in the in-graph hook) and the older
    capture/replay methods (derived in their hooks)."""
    res = verify_graphs_against_eager(legacy=legacy)
    assert res["stack"] == "gdn/cpu_ref"
    assert [(s["requests"], s["graph_bs"]) for s in res["steps"]] == [(4, 4), (3, 4), (1, 2), (2, 2), (4, 4)]


def test_decode_graphs_of_a_hybrid_model_pad_with_no_slot(registry):
    """Decode graphs of the hybrid model (no speculative decoding): replays of
    fewer requests than captured give the padded ones slot -1 (before, they
    all named request row 0's slot, which a plan refuses), and every output,
    state and K/V row is bit for bit an eager twin's."""
    res = decode_graphs_against_eager()
    assert [(s["requests"], s["graph_bs"]) for s in res["steps"]] == [(3, 4), (4, 4), (1, 2), (2, 2), (3, 4)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here; on the GPU: PARTS=hybrid_vgraph:180 "
                                                            "bash bench/gpu/run.sh python_e2e (or this test there)")
def test_verify_graphs_on_cuda_match_eager(registry):
    """The same on the GPU with real torch.cuda graphs on gdn_cuda/cuda_attn
    (bf16 model, float32 MambaPool state): each replay against the eager
    twin within bf16 error (cuda_attn may split an eager batch of 3 unlike
    the graph's of 4)."""
    res = verify_graphs_against_eager("cuda", torch.bfloat16, "sglattn_cuda_attn", tol=2e-2)
    assert res["stack"] == "gdn_cuda/cuda_attn" and res["supports_target_verify_cuda_graph"], res
    decode_graphs_against_eager("cuda", torch.bfloat16, "sglattn_cuda_attn", tol=2e-2)


def test_verify_graph_padding_and_fill_value_slots(registry):
    """A graph's slot buffer: a padded request (seq_lens the fill value and
    its tokens at out_cache_loc 0, as sglang's runner pads) gets slot -1, so
    no two requests name one slot; a live request whose length is the fill
    value keeps its slot, at the end of the batch too; the rows follow the
    slots, and the commit after a replay reads the replayed graph's rows,
    not those of the graph captured last."""
    eng = HybridEngine(seed=2, draft_tokens=3)
    runner = HybridGraphRunner(eng, 3, capture_bs=(2, 4))
    full = eng.full
    for r, s in (("a", 9), ("b", 4), ("c", 7)):
        eng.add(r, s)
    g = torch.Generator().manual_seed(3)
    eng.run(eng.batch([("a", 1), ("b", 6), ("c", 4)], ForwardMode.EXTEND), eng.inputs(11, g))
    key4, key2 = (4, int(ForwardMode.TARGET_VERIFY)), (2, int(ForwardMode.TARGET_VERIFY))
    assert full._graph_lin[key2].slots.tolist() == [-1, -1]  # captured: all padding
    assert full._lin_verify is None
    out = runner.replay(eng.batch([("b", 3), ("c", 3), ("a", 3)], ForwardMode.TARGET_VERIFY), eng.inputs(9, g))
    rec = full._graph_lin[key4]
    assert full._lin_verify is rec  # not the graph of 2, captured last
    assert rec.slots.tolist() == [4, 7, 9, -1]  # a: seq_len 1, the fill value, last of the live ones
    assert rec.rows.tolist() == [0, 1, 2, -1] and rec.gather.tolist() == [4, 7, 9, 0]
    assert all(torch.isfinite(o).all() for o in out)
    full.commit_linear_verify(torch.tensor([-1, -1, -1]))  # nothing accepted
    assert full._lin_verify is None
    eng.reqs["a"][1], eng.reqs["c"][1] = 1, 4
    runner.replay(eng.batch([("c", 3), ("a", 3)], ForwardMode.TARGET_VERIFY), eng.inputs(6, g))
    assert full._lin_verify is full._graph_lin[key2] and full._graph_lin[key2].slots.tolist() == [7, 9]


def test_cuda_linear_stack_declares_verify_graphs(build_dir):
    """The CUDA linear wrapper over cuda_attn (their emulated builds, which
    probe as SM 8.0 devices) declares graph_verify as a stack: both layers
    claim it; the CPU stack gdn/cpu_ref does not."""
    emu = os.path.join(build_dir, "emu-plugins")
    if not os.path.isfile(os.path.join(emu, "gdn_cuda.so")):
        pytest.skip(f"no emulated CUDA plugins in {emu} (make cuda_linear_emu)")
    h = sglattn.Host(emu)
    try:
        model = sglattn.Model.load(dict(CFG, torch_dtype="bfloat16"), spec_tokens=3)
        for stack, want in ((["gdn_cuda", "cuda_attn"], True), (["gdn", "cpu_ref"], False)):
            be = h.create_stack(stack, model, max_reqs=4, max_tokens=64, max_context=128)
            try:
                assert ("graph_verify" in be.features) == want, (stack, be.features)
                assert "caller_state" in be.features
            finally:
                be.close()
    finally:
        h.close()
