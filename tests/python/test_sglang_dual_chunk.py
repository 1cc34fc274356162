"""Dual chunk attention (issue 24) through sglattn.sglang on cpu_ref: a
Qwen2.5-1M-shaped model (small heads, chunk 24 / local 8, so chunk_len 16)
whose queries come from the stub sglang's DualChunkRotaryEmbedding as
sglang lays them out ([tokens, 5 * heads * head_dim]), through prefill,
extend over a prefix and decode that cross chunk boundaries, on pages larger
and smaller than a chunk, with and without length scaling.  The reference is
dual chunk attention in float64 written here from docs/dual_chunk.md's
definition (three parts, each its own softmax, merged by log-sum-exp), over
a shadow copy of each request's keys and values.  Then the package's
DualChunk, the views (no copies), and the refusals."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence, Tuple

import pytest
import torch

import sglattn
import sglattn.sglang as ss
from sgl_driver import Engine, llama_config
from sglang.srt import server_args
from sglang.srt.layers.attention import attention_registry as reg
from sglang.srt.layers.rotary_embedding import DualChunkRotaryEmbedding
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context

CHUNK, LOCAL = 24, 8
CL = CHUNK - LOCAL  # keys per chunk
TOL = {torch.float32: 2e-5, torch.bfloat16: 3e-2, torch.float16: 4e-3}


def qwen_1m_config(layers: int, hq: int, hkv: int, d: int, dtype: str, omp: int = 0, **dca: Any) -> Dict[str, Any]:
    """A Qwen2.5-7B-Instruct-1M-shaped config (examples/models/qwen2.5-7b-instruct-1m.json), small."""
    conf: Dict[str, Any] = {"chunk_size": CHUNK, "local_size": LOCAL}
    if omp:
        conf["original_max_position_embeddings"] = omp
    conf.update(dca)
    return {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": layers,
            "num_attention_heads": hq, "num_key_value_heads": hkv, "hidden_size": hq * d,
            "intermediate_size": 4 * hq * d, "vocab_size": 1000, "max_position_embeddings": 1010000,
            "rope_theta": 10000000.0, "use_sliding_window": False, "torch_dtype": dtype,
            "dual_chunk_attention_config": conf}


def cpu_ref_auto(runner: Any) -> ss.SglAttnBackend:
    """No name asked: the host binds a dual chunk model to dual_chunk_flash_attn (cpu_ref here)."""
    return ss.SglAttnBackend(runner)


class DcaRun:
    """An Engine whose layers get sglang's five-variant q, and the float64
    dual chunk reference over each request's shadow K/V."""

    def __init__(self, *, layers: int = 2, hq: int = 4, hkv: int = 2, d: int = 32, dtype: torch.dtype,
                 page_size: int = 1, omp: int = 0, factory: Any = cpu_ref_auto, seed: int = 0,
                 device: str = "cpu") -> None:
        cfg = qwen_1m_config(layers, hq, hkv, d, str(dtype).rsplit(".", 1)[-1], omp)
        self.eng = Engine(factory, layers=layers, hq=hq, hkv=hkv, d=d, dtype=dtype, page_size=page_size,
                          max_reqs=8, max_context=256, pool_tokens=2048, hf_config=cfg, reference=None, seed=seed,
                          device=device)
        self.device = device
        self.hq, self.hkv, self.d, self.dtype, self.omp = hq, hkv, d, dtype, omp
        self.rope = DualChunkRotaryEmbedding(d, CHUNK, LOCAL)
        self.gen = torch.Generator().manual_seed(seed + 100)
        self.k: Dict[Tuple[int, int], torch.Tensor] = {}  # (rid, layer) -> [L, hkv, d] float64, as rounded
        self.v: Dict[Tuple[int, int], torch.Tensor] = {}

    def inputs(self, fb: ForwardBatch) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        T = int(fb.out_cache_loc.shape[0])
        g = self.gen
        q = torch.randn(T, self.hq * self.d, generator=g, dtype=torch.float64)
        k = torch.randn(T, self.hkv * self.d, generator=g, dtype=torch.float64)
        v = torch.randn(T, self.hkv * self.d, generator=g, dtype=torch.float64)
        q5, k = self.rope(fb.positions.cpu(), q, k)
        return tuple(x.to(self.dtype).to(self.device) for x in (q5, k, v))  # type: ignore[return-value]

    def step(self, fb: ForwardBatch) -> List[Tuple[torch.Tensor, torch.Tensor]]:
        eng = self.eng
        eng.metadata(fb)
        results = []
        with forward_context(ForwardContext(eng.backend)):
            for i, layer in enumerate(eng.layers):
                q5, k, v = self.inputs(fb)
                out = layer.forward(q5, k, v, fb)
                results.append((out, self.reference(fb, i, q5, k, v)))
        return results

    def reference(self, fb: ForwardBatch, layer: int, q5: torch.Tensor, k: torch.Tensor, v: torch.Tensor
                  ) -> torch.Tensor:
        """docs/dual_chunk.md: a query at position p, chunk start s = p // CL * CL,
        attends to [s, p] with q (causal), to [s - CL, s) with q_succ and to
        [0, s - CL) with q_inter; each part a softmax of its own, merged by
        log-sum-exp; every logit times max(1, 0.1 ln(seq_len / omp) + 1)."""
        hq, hkv, d = self.hq, self.hkv, self.d
        Q = q5.cpu().double().view(-1, 5, hq, d)
        K64, V64 = k.cpu().double().view(-1, hkv, d), v.cpu().double().view(-1, hkv, d)
        out = torch.empty(Q.shape[0], hq, d, dtype=torch.float64)
        o = 0
        for rid, n in zip(fb._rids, fb._new):  # type: ignore[attr-defined]
            key = (rid, layer)
            self.k[key] = torch.cat([self.k.get(key, torch.zeros(0, hkv, d, dtype=torch.float64)), K64[o:o + n]])
            self.v[key] = torch.cat([self.v.get(key, torch.zeros(0, hkv, d, dtype=torch.float64)), V64[o:o + n]])
            K = self.k[key].repeat_interleave(hq // hkv, 1)
            V = self.v[key].repeat_interleave(hq // hkv, 1)
            L = K.shape[0]
            scale = d ** -0.5
            if self.omp > 0:
                scale *= max(1.0, 0.1 * math.log(L / self.omp) + 1.0)
            for j in range(n):
                p = L - n + j
                s = p // CL * CL
                parts = [(0, s, p + 1), (1, s - CL, s), (2, 0, s - CL)]
                lses, outs = [], []
                for var, kb, ke in parts:
                    if kb < 0 or ke <= kb:
                        continue
                    logits = torch.einsum("hd,khd->hk", Q[o + j, var], K[kb:ke]) * scale
                    lses.append(torch.logsumexp(logits, -1))                       # [hq]
                    outs.append(torch.einsum("hk,khd->hd", logits.softmax(-1), V[kb:ke]))
                lse = torch.stack(lses)                                            # [parts, hq]
                w = (lse - lse.amax(0)).exp()
                out[o + j] = (w.unsqueeze(-1) * torch.stack(outs)).sum(0) / w.sum(0).unsqueeze(-1)
            o += n
        return out.view(-1, hq * d)


def check(results: Sequence[Tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype) -> None:
    for i, (out, ref) in enumerate(results):
        err = (out.cpu().double() - ref).abs().max().item()
        assert err < TOL[dtype] * max(1.0, ref.abs().max().item()), f"layer {i}: max error {err}"


# -------------------------------------------------------------- numerics
def _across_chunks(run: DcaRun, dtype: torch.dtype) -> None:
    eng = run.eng
    a, b, c = eng.add(), eng.add(), eng.add()
    # a: three chunks (boundaries at 16 and 32); b ends on a chunk's last position; c inside chunk 0
    check(run.step(eng.extend_batch([(a, 37), (b, 16), (c, 14)])), dtype)
    d = eng.add()
    # extend over a cached prefix across the boundary at 48; a fresh request ending in chunk 2
    check(run.step(eng.extend_batch([(a, 20), (d, 33)])), dtype)
    # one token over a prefix, on the first position of a chunk
    check(run.step(eng.extend_batch([(b, 1)])), dtype)
    for _ in range(3):  # c at 14, 15 (a chunk's last), 16 (the next chunk's first); b at 17..; a at 57..
        check(run.step(eng.decode_batch([a, b, c, d])), dtype)
    # the pool holds the keys the model gave (rotated at p % chunk_len), at each request's slots
    for rid in (a, b, c, d):
        for layer in range(eng.nlayers):
            k, v = eng.pool_kv(rid, layer)
            assert torch.equal(k.cpu().double(), run.k[(rid, layer)].view(k.shape))
            assert torch.equal(v.cpu().double(), run.v[(rid, layer)].view(v.shape))


@pytest.mark.parametrize("dtype,page,omp", [(torch.float32, 1, 0), (torch.float32, 32, 20), (torch.bfloat16, 4, 0),
                                            (torch.float16, 16, 20), (torch.float32, 5, 0)])
def test_prefill_extend_decode_across_chunks_on_cpu_ref(dtype, page, omp):
    """page 32 and 16 hold a whole chunk (chunk_len 16) or more; 5 cuts chunks mid-page."""
    run = DcaRun(dtype=dtype, page_size=page, omp=omp, seed=page + omp)
    assert run.eng.backend.stack == ["cpu_ref"] and "dual_chunk" in run.eng.backend.backend.features
    _across_chunks(run, dtype)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the GPU run: docs/python.md)")
@pytest.mark.parametrize("dtype,page,omp", [(torch.bfloat16, 16, 20), (torch.float16, 1, 0), (torch.bfloat16, 32, 0)])
def test_prefill_extend_decode_across_chunks_on_cuda(dtype, page, omp):
    """The same on the GPU: the host chooses cuda_attn, which takes the strided variants too."""
    run = DcaRun(dtype=dtype, d=64, page_size=page, omp=omp, seed=page + omp, device="cuda")
    assert "cuda_attn" in run.eng.backend.stack and "dual_chunk" in run.eng.backend.backend.features
    _across_chunks(run, dtype)


def test_length_scaling_changes_the_result():
    """omp 20: a request of 37 keys scales its logits by 1 + 0.1 ln(37 / 20);
    the same inputs without scaling differ (so the reference's scaling is
    what the check above held the plugin to)."""
    outs = []
    for omp in (0, 20):
        run = DcaRun(dtype=torch.float32, omp=omp, seed=7)
        a = run.eng.add()
        res = run.step(run.eng.extend_batch([(a, 37)]))
        check(res, torch.float32)
        outs.append(res[0][0])
    assert (outs[0] - outs[1]).abs().max() > 1e-3


def one_extend(n: int) -> Tuple["DcaRun", ForwardBatch, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A one-layer float32 dual chunk model with one request's extend of n
    tokens planned, and that step's q (five variants), k and v."""
    run = DcaRun(dtype=torch.float32, layers=1)
    a = run.eng.add()
    fb = run.eng.extend_batch([(a, n)])
    run.eng.metadata(fb)
    q5, k, v = run.inputs(fb)
    return run, fb, q5, k, v


def test_variants_reach_the_plugin_as_views_of_sglangs_q():
    run, fb, q5, k, v = one_extend(6)
    eng = run.eng
    with forward_context(ForwardContext(eng.backend)):
        eng.layers[0].forward(q5, k, v, fb)
    L = eng.backend._layers[0]
    dc = L.dual_chunk
    hd = run.hq * run.d
    assert L.args.dual_chunk == dc.addr
    assert (dc.chunk_size, dc.local_size, dc.original_max_position) == (CHUNK, LOCAL, 0)
    base, es = q5.data_ptr(), q5.element_size()
    assert L._dls[0].data == base                                          # q: the intra variant, in place
    for i, ref in enumerate(dc._refs):                                      # q_succ, q_inter
        assert ref.dl.data == base + (i + 1) * hd * es
        assert ref.dl.strides and [ref.strides[j] for j in range(3)] == [5 * hd, run.d, 1]
    # a q that is itself a view into a wider fused buffer stays a view
    fused = torch.randn(6, 5 * hd + 64)
    q_view = fused[:, :5 * hd]
    qi, qs, qn = ss._dual_chunk_queries(q_view, run.hq, run.d)
    assert [t.data_ptr() for t in (qi, qs, qn)] == [fused.data_ptr() + i * hd * 4 for i in range(3)]
    assert qs.stride() == (5 * hd + 64, run.d, 1)


def test_the_model_is_bound_to_dual_chunk_flash_attn():
    """sglang's server-args rule, held by the host: another name asked for a
    dual chunk model is refused with sglang's message; plain models keep the
    adapter's class forwards (no dual chunk check on their path)."""
    with pytest.raises(sglattn.Error, match=r"Dual chunk attention is enabled, but attention backend is set to "
                                            r"cpu_ref\. Please set it to 'dual_chunk_flash_attn'\."):
        DcaRun(dtype=torch.float32, factory=lambda r: ss.SglAttnBackend(r, backend="cpu_ref"))
    run = DcaRun(dtype=torch.float32, factory=lambda r: ss.SglAttnBackend(r, backend="dual_chunk_flash_attn"))
    assert run.eng.backend.stack == ["cpu_ref"] and "forward_decode" in vars(run.eng.backend)
    plain = Engine(lambda r: ss.SglAttnBackend(r, backend="cpu_ref"), layers=1, hq=4, hkv=2, d=32,
                   dtype=torch.float32)
    assert "forward_decode" not in vars(plain.backend) and "forward_extend" not in vars(plain.backend)


def test_served_under_sglangs_name_through_the_override(monkeypatch):
    """sglang itself accepts only dual_chunk_flash_attn for such a model:
    SGLATTN_SGLANG_OVERRIDE=dual_chunk_flash_attn puts the stack there."""
    monkeypatch.setattr(reg, "ATTENTION_BACKENDS", dict(reg.ATTENTION_BACKENDS))
    monkeypatch.setattr(server_args, "ATTENTION_BACKEND_CHOICES", list(server_args.ATTENTION_BACKEND_CHOICES))
    monkeypatch.setenv(ss.OVERRIDE_ENV, "dual_chunk_flash_attn")
    ss._HOST = sglattn.Host()
    assert "dual_chunk_flash_attn" in ss.register()
    run = DcaRun(dtype=torch.float32, factory=reg.ATTENTION_BACKENDS["dual_chunk_flash_attn"])
    assert run.eng.backend.name == "dual_chunk_flash_attn" and run.eng.backend.stack == ["cpu_ref"]
    a = run.eng.add()
    check(run.step(run.eng.extend_batch([(a, 20)])), torch.float32)
    check(run.step(run.eng.decode_batch([a])), torch.float32)


# -------------------------------------------------------------- refusals
@pytest.mark.parametrize("sparse", [{"sparse_attention_enabled": True},
                                    {"sparse_attention_config": [{"0": ["vertical_and_slash", 1000, 6096, 0]}]}])
def test_sparse_prefill_is_refused_with_the_switch_to_turn_off(sparse):
    with pytest.raises(NotImplementedError, match=r"sparse_attention_enabled.*vertical-slash.*"
                                                  r"\"sparse_attention_enabled\": false"):
        Engine(cpu_ref_auto, layers=1, hq=4, hkv=2, d=32, dtype=torch.float32,
               hf_config=qwen_1m_config(1, 4, 2, 32, "float32", **sparse))
    # switched off: served
    cfg = qwen_1m_config(1, 4, 2, 32, "float32", **dict(sparse, sparse_attention_enabled=False))
    eng = Engine(cpu_ref_auto, layers=1, hq=4, hkv=2, d=32, dtype=torch.float32, hf_config=cfg)
    assert eng.backend.stack == ["cpu_ref"]


def test_a_q_without_the_five_variants_is_refused():
    run, fb, q5, k, v = one_extend(4)
    eng = run.eng
    with pytest.raises(NotImplementedError, match=r"q has shape \[4, 128\]; expected sglang's 5 query variants "
                                                  r"side by side, \[tokens, 5 \* 4 heads \* 32\]"):
        eng.backend.forward_extend(q5[:, :128].contiguous(), k, v, eng.layers[0], fb)
    eng.backend.forward_extend(q5, k, v, eng.layers[0], fb)


def test_mha_return_lse_is_refused():
    run, fb, q5, k, v = one_extend(4)
    eng = run.eng
    fb.mha_return_lse = True
    with pytest.raises(NotImplementedError, match=r"mha_return_lse.*with dual chunk attention"):
        eng.backend.forward_extend(q5, k, v, eng.layers[0], fb)


def test_cpu_ref_refuses_an_lse_output_with_dual_chunk():
    """Below the adapter: the plugin names it instead of leaving lse unwritten."""
    run, fb, q5, k, v = one_extend(4)
    eng = run.eng
    L = eng.backend._layer(eng.layers[0])
    qi, qs, qn = ss._dual_chunk_queries(q5, 4, 32)
    L.set_dual_chunk(sglattn.DualChunk(CHUNK, LOCAL, q_succ=qs, q_inter=qn))
    out = torch.empty(4, 128)
    with pytest.raises(sglattn.UnsupportedError, match="dual chunk attention with an LSE output"):
        eng.backend.backend.forward_extend(L, qi, k, v, out, lse=torch.empty(4, 4))


# ------------------------------------------------------------ the package
def test_dual_chunk_from_a_qwen_1m_config_and_its_checks(build_dir):
    import os
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    m = sglattn.Model.load(os.path.join(repo, "examples", "models", "qwen2.5-7b-instruct-1m.json"))
    dc = sglattn.DualChunk.from_model(m)
    assert (dc.chunk_size, dc.local_size, dc.original_max_position) == (262144, 8192, 262144)
    assert dc.struct.q_succ is None and dc.struct.q_inter is None
    with pytest.raises(sglattn.InvalidArgumentError, match="has no dual chunk attention"):
        sglattn.DualChunk.from_model(sglattn.Model.load(llama_config(1, 4, 2, 32)))
    for bad in ((16, 16, 0), (0, 0, 0), (24, -1, 0), (24, 8, -5)):
        with pytest.raises(sglattn.InvalidArgumentError, match="expected 0 <= local_size < chunk_size"):
            sglattn.DualChunk(*bad)
    # set_queries: a tensor like the last one costs a pointer write; another shape is re-described; None clears
    a, b = torch.zeros(3, 2, 8), torch.zeros(3, 2, 8)
    dc.set_queries(a, a)
    assert dc._refs[0].dl.data == a.data_ptr() and dc.struct.q_succ == dc._refs[0].addr
    dc.set_queries(b, None)
    assert dc._refs[0].dl.data == b.data_ptr() and dc.struct.q_inter is None
    c = torch.zeros(5, 2, 8)
    dc.set_queries(c, c)
    assert dc._refs[0].shape[0] == 5 and dc._refs[1].dl.data == c.data_ptr()
