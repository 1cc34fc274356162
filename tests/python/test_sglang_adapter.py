"""sglattn.sglang driven the way sglang's model runner drives an attention
backend (tests/python/sgl_driver.py over the stub sglang): registration,
decode, extend with a cached prefix, mixed batches and chained verify on
cpu_ref against float64, the refusals, and the CUDA-graph call order with
the recording fake plugin."""
from __future__ import annotations

import ctypes
import gc
import logging
import math
import os
import sys

import pytest
import torch

import sglattn
import sglattn.sglang as ss
from sgl_driver import Engine, GraphRunner, llama_config
from sglang.srt import server_args
from sglang.srt.layers.attention import attention_registry as reg
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context

TOL = {torch.float32: 2e-5, torch.bfloat16: 3e-2, torch.float16: 4e-3}


@pytest.fixture()
def registry(monkeypatch):
    """sglang's registry and CLI choices, restored after the test."""
    monkeypatch.setattr(reg, "ATTENTION_BACKENDS", dict(reg.ATTENTION_BACKENDS))
    monkeypatch.setattr(server_args, "ATTENTION_BACKEND_CHOICES", list(server_args.ATTENTION_BACKEND_CHOICES))
    monkeypatch.delenv(ss.OVERRIDE_ENV, raising=False)
    return reg


@pytest.fixture()
def rec_host(test_plugins):
    h = sglattn.Host(test_plugins)
    yield h
    h.close()


def cpu_ref(runner, **kw):
    return ss.SglAttnBackend(runner, backend="cpu_ref", **kw)


def check(results, dtype):
    for i, (out, ref) in enumerate(results):
        err = (out.double().cpu() - ref).abs().max().item()
        assert err < TOL[dtype] * max(1.0, ref.abs().max().item()), f"layer {i}: max error {err}"


def check_pool(eng, rid, dtype):
    for layer in range(eng.nlayers):
        k, v = eng.pool_kv(rid, layer)
        req = eng.reqs[rid]
        assert torch.equal(k.double().cpu(), req.k[layer].to(dtype).double())
        assert torch.equal(v.double().cpu(), req.v[layer].to(dtype).double())


# ---------------------------------------------------------------- register
def test_register_adds_our_names_once_and_leaves_sglangs_alone(registry):
    ss._HOST = sglattn.Host()
    builtin = dict(reg.ATTENTION_BACKENDS)
    names = ss.register()
    assert names == ["sglattn", "sglattn_cpu_ref"] == ss.backend_names()
    for n in names:
        assert getattr(reg.ATTENTION_BACKENDS[n], "_sglattn", False)
        assert server_args.ATTENTION_BACKEND_CHOICES.count(n) == 1
    for n, f in builtin.items():
        assert reg.ATTENTION_BACKENDS[n] is f, n
    factories = {n: reg.ATTENTION_BACKENDS[n] for n in names}
    choices = list(server_args.ATTENTION_BACKEND_CHOICES)
    assert ss.register() == names
    assert server_args.ATTENTION_BACKEND_CHOICES == choices
    assert all(reg.ATTENTION_BACKENDS[n] is factories[n] for n in names)


def test_a_foreign_backend_of_our_name_is_left_with_a_warning(registry, caplog):
    ss._HOST = sglattn.Host()

    def theirs(runner):
        return None

    reg.register_attention_backend("sglattn_cpu_ref")(theirs)
    with caplog.at_level(logging.WARNING, "sglattn.sglang"):
        names = ss.register()
    assert "sglattn_cpu_ref" not in names and reg.ATTENTION_BACKENDS["sglattn_cpu_ref"] is theirs
    assert "already has an attention backend named 'sglattn_cpu_ref'" in caplog.text


def test_override_replaces_only_the_listed_sglang_names(registry, monkeypatch, caplog):
    ss._HOST = sglattn.Host()
    fa3 = reg.ATTENTION_BACKENDS["fa3"]
    monkeypatch.setenv(ss.OVERRIDE_ENV, "torch_native")
    with caplog.at_level(logging.WARNING, "sglattn.sglang"):
        names = ss.register()
    assert "torch_native" in names and getattr(reg.ATTENTION_BACKENDS["torch_native"], "_sglattn", False)
    assert reg.ATTENTION_BACKENDS["fa3"] is fa3
    assert "replacing sglang's attention backend 'torch_native'" in caplog.text
    # the replaced name asks the host for that sglang name: cpu_ref declares torch_native
    eng = Engine(reg.ATTENTION_BACKENDS["torch_native"], layers=1, hq=2, hkv=1, d=32, dtype=torch.float32)
    assert eng.backend.stack == ["cpu_ref"] and eng.backend.name == "torch_native"


def test_entry_point_runs_register(registry, tmp_path, monkeypatch):
    """sglang's load_plugins() finds register() through the entry point the
    package declares (python/pyproject.toml; `make install` writes the same)."""
    import tomllib

    with open(os.path.join(os.path.dirname(sglattn.__file__), "..", "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["sglang.srt.plugins"]
    assert eps == {"sglattn": "sglattn.sglang:register"}
    dist = tmp_path / "sglattn-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sglattn\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[sglang.srt.plugins]\nsglattn = sglattn.sglang:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import sglang.srt.plugins as plugins
    monkeypatch.setattr(plugins, "_loaded", False)
    ss._HOST = sglattn.Host()
    plugins.load_plugins()
    assert getattr(reg.ATTENTION_BACKENDS.get("sglattn"), "_sglattn", False)


# -------------------------------------------------------------- numerics
@pytest.mark.parametrize("dtype,page", [(torch.float32, 1), (torch.float32, 16), (torch.bfloat16, 16),
                                        (torch.float16, 4)])
def test_prefill_prefix_decode_mixed_on_cpu_ref(dtype, page):
    eng = Engine(cpu_ref, layers=3, hq=8, hkv=2, d=64, dtype=dtype, page_size=page, max_reqs=8, max_context=256,
                 pool_tokens=2048, seed=1)
    a, b, c = eng.add(), eng.add(), eng.add()
    check(eng.step(eng.extend_batch([(a, 23), (b, 1), (c, 40)])), dtype)           # ragged prefill
    d = eng.add()
    check(eng.step(eng.extend_batch([(a, 9), (d, 17)])), dtype)                     # extend over a prefix
    for _ in range(3):
        check(eng.step(eng.decode_batch([a, b, c, d])), dtype)                      # decode
    check(eng.step(eng.extend_batch([(b, 1), (c, 12), (a, 1)], ForwardMode.MIXED)), dtype)  # mixed
    for rid in (a, b, c, d):
        check_pool(eng, rid, dtype)
    assert eng.backend.stack == ["cpu_ref"]


def test_chained_verify_then_decode():
    eng = Engine(cpu_ref, layers=2, hq=4, hkv=2, d=64, dtype=torch.float32, page_size=4, draft_tokens=4, seed=2)
    a, b = eng.add(), eng.add()
    check(eng.step(eng.extend_batch([(a, 11), (b, 6)])), torch.float32)
    check(eng.step(eng.verify_batch([a, b], 4)), torch.float32)
    eng.accept(a, 2)
    eng.accept(b, 4)
    check(eng.step(eng.decode_batch([a, b])), torch.float32)
    check(eng.step(eng.verify_batch([a, b], 4)), torch.float32)
    assert eng.backend.model.spec_tokens == 4


def test_tree_verify_with_a_chain_shaped_mask():
    """cpu_ref declares tree_mask: a topk > 1 verify passes spec_info.custom_mask
    (sglang's layout, [n, seq_len + n] per request); a mask shaped as the chain
    must give the causal float64 answer."""
    eng = Engine(cpu_ref, layers=1, hq=4, hkv=2, d=64, dtype=torch.float32, draft_tokens=4)
    a, b = eng.add(), eng.add()
    eng.step(eng.extend_batch([(a, 5), (b, 9)]))
    fb = eng.verify_batch([a, b], 4)
    fb.spec_info.topk = 2
    blocks = []
    for before in fb.seq_lens.tolist():
        cols = torch.arange(before + 4).view(1, -1)
        blocks.append((cols <= before + torch.arange(4).view(-1, 1)).flatten())
    fb.spec_info.custom_mask = torch.cat(blocks)
    check(eng.step(fb), torch.float32)


def test_output_goes_into_attn_output_when_given():
    eng = Engine(cpu_ref, layers=1, hq=4, hkv=2, d=64, dtype=torch.float32)
    a = eng.add()
    fb = eng.extend_batch([(a, 6)])
    fb._attn_output = buf = torch.full((6, 4 * 64), float("nan"))
    res = eng.step(fb)
    assert res[0][0] is buf
    check(res, torch.float32)


# ---------------------------------------------------------------- refusals
def _one_layer(factory=cpu_ref, **kw):
    eng = Engine(factory, layers=1, hq=4, hkv=2, d=64, dtype=torch.float32, **kw)
    a = eng.add()
    fb = eng.extend_batch([(a, 5)])
    eng.metadata(fb)
    q, k, v = eng.qkv(5)
    return eng, fb, q, k.view(5, 2, 64), v.view(5, 2, 64)


@pytest.mark.parametrize("kw", ["q_rope", "k_rope", "cos_sin_cache", "llama_4_scaling",
                                "something_new"])
def test_arguments_it_cannot_honour_raise_naming_them(kw):
    eng, fb, q, k, v = _one_layer()
    with pytest.raises(NotImplementedError, match=rf"sglattn: {kw} \("):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb, **{kw: torch.zeros(1)})
    eng.backend.forward_extend(q, k, v, eng.layers[0], fb, q_rope=None, topk_indices=None)  # None: not asked


def test_topk_indices_pass_through_to_a_stack_declaring_dsa():
    """cpu_ref declares sparse MLA: the indices reach the plugin (which
    serves them on MLA layers only, so this GQA layer's refusal proves they
    arrived); the next call without them is dense again."""
    eng, fb, q, k, v = _one_layer()
    assert "sparse_mla" in eng.backend.backend.dsa_ops
    with pytest.raises(sglattn.Error, match="MLA only"):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb, topk_indices=torch.zeros(5, 4, dtype=torch.int32))
    eng.backend.forward_extend(q, k, v, eng.layers[0], fb)


def test_topk_indices_refused_by_a_stack_without_dsa(rec_host):
    eng, fb, q, k, v = _one_layer(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host))
    with pytest.raises(NotImplementedError, match=r"sglattn: topk_indices \(DeepSeek sparse attention's selected "
                                                  r"tokens\): the stack recorder does not declare sparse MLA"):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb, topk_indices=torch.zeros(5, 4, dtype=torch.int32))


def test_mha_return_lse_gives_out_and_lse():
    """sglang's mha_return_lse on a stack that declares lse (cpu_ref): the
    adapter passes forward_args.lse and returns (out, lse), lse [tokens, q
    heads] fp32, both against float64."""
    eng, fb, q, k, v = _one_layer()
    fb.mha_return_lse = True
    out, lse = eng.backend.forward_extend(q, k, v, eng.layers[0], fb)
    assert lse.shape == (5, 4) and lse.dtype == torch.float32
    Q, K, V = q.double().view(5, 4, 64), k.double().repeat_interleave(2, 1), v.double().repeat_interleave(2, 1)
    s = torch.einsum("qhd,khd->hqk", Q, K) / 8.0
    s.masked_fill_(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), -math.inf)
    ref = torch.einsum("hqk,khd->qhd", s.softmax(-1), V).reshape(5, -1)
    assert (out.double() - ref).abs().max() < 2e-5
    assert (lse.double() - torch.logsumexp(s, -1).transpose(0, 1)).abs().max() < 1e-5
    # the next call without it returns the output alone, and leaves that lse be
    fb.mha_return_lse = False
    was = lse.clone()
    out2 = eng.backend.forward_extend(q, k, v, eng.layers[0], fb, save_kv_cache=False)
    assert torch.equal(out2, out) and torch.equal(lse, was)
    # DeepSeek's chunked-prefix form is named, not served paged
    fb.mha_return_lse = True
    fb.attn_attend_prefix_cache = True
    with pytest.raises(NotImplementedError, match=r"mha_return_lse.*attn_attend_prefix_cache"):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb)


def test_mha_return_lse_refused_by_a_stack_without_lse(rec_host):
    eng, fb, q, k, v = _one_layer(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host))
    fb.mha_return_lse = True
    with pytest.raises(NotImplementedError, match=r"mha_return_lse.*does not declare lse \(SGL_ATTN_FEAT_LSE\)"):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb)


def test_sinks_served_by_cpu_ref():
    eng, fb, q, k, v = _one_layer()
    sinks = torch.tensor([0.5, -1.0, 2.0, 0.0])
    out = eng.backend.forward_extend(q, k, v, eng.layers[0], fb, sinks=sinks)
    # reference: the sink joins each head's softmax denominator
    Q, K, V = q.double().view(5, 4, 64), k.double().repeat_interleave(2, 1), v.double().repeat_interleave(2, 1)
    s = torch.einsum("qhd,khd->hqk", Q, K) / 8.0
    s.masked_fill_(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), -math.inf)
    m = s.amax(-1, keepdim=True)
    p = (s - m).exp()
    den = p.sum(-1, keepdim=True) + (sinks.double().view(4, 1, 1) - m).exp()
    ref = torch.einsum("hqk,khd->qhd", p / den, V).reshape(5, -1)
    assert (out.double() - ref).abs().max() < 2e-5


def test_sinks_refused_by_a_stack_without_them(rec_host):
    eng, fb, q, k, v = _one_layer(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host))
    with pytest.raises(NotImplementedError, match="sinks: the stack recorder does not serve attention sinks"):
        eng.backend.forward_extend(q, k, v, eng.layers[0], fb, sinks=torch.zeros(4))


def test_layers_it_cannot_serve():
    eng, fb, q, k, v = _one_layer()
    cross = RadixAttention(4, 64, 0.125, 2, 7, is_cross_attention=True)
    with pytest.raises(NotImplementedError, match="layer 7 is a cross-attention layer"):
        eng.backend.forward_extend(q, k, v, cross, fb)
    capped = RadixAttention(4, 64, 0.125, 2, 0, logit_cap=30.0, logit_capping_method="sigmoid")
    eng2, fb2, q2, k2, v2 = _one_layer()
    with pytest.raises(NotImplementedError, match="only tanh soft-capping"):
        eng2.backend.forward_extend(q2, k2, v2, capped, fb2)


def test_hybrid_model_linear_layers_are_refused_full_layers_served():
    cfg = {"model_type": "qwen3_next", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 256, "head_dim": 64, "full_attention_interval": 2, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
           "linear_conv_kernel_dim": 4, "torch_dtype": "float32"}
    eng = Engine(cpu_ref, layers=4, hq=4, hkv=2, d=64, dtype=torch.float32, hf_config=cfg)
    assert eng.backend.full_layers == [1, 3] and eng.backend.stack == ["cpu_ref"]
    a = eng.add()
    fb = eng.extend_batch([(a, 5)])
    eng.metadata(fb)
    q, k, v = eng.qkv(5)
    with forward_context(ForwardContext(eng.backend)):
        out = eng.layers[1].forward(q, k, v, fb)
        assert out.shape == (5, 256)
        with pytest.raises(NotImplementedError, match=r"layer 0 is a linear-attention layer of qwen3_next; .*"
                                                      r"full-attention layers \[1, 3\]"):
            eng.layers[0].forward(q, k, v, fb)


def test_encoder_decoder_model_gets_the_cross_attention_path():
    """An encoder-decoder model is served (test_sglang_enc_dec.py runs it):
    its forwards are the instance's cross-attention ones."""
    cfg = dict(llama_config(1, 4, 2, 64, "float32"), is_encoder_decoder=True)
    eng = Engine(cpu_ref, layers=1, hq=4, hkv=2, d=64, dtype=torch.float32, hf_config=cfg)
    assert eng.backend.enc_dec and "encoder_loc" in eng.backend.backend.features
    assert eng.backend.forwards == eng.backend._forward_enc_dec


# ------------------------------------------------------------------ graphs
def _events(path):
    lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | ctypes.RTLD_LOCAL)
    lib.fake_events.restype = ctypes.c_char_p
    ev = lib.fake_events().decode().rstrip(";").split(";")
    lib.fake_events_clear()
    return ev


@pytest.mark.parametrize("legacy", [False, True])
def test_graph_call_order_as_sglang_runs_it(rec_host, test_plugins, legacy):
    rec = os.path.join(test_plugins, "recorder.so")
    gc.collect()  # earlier tests' recorder instances log their destroy when collected
    eng = Engine(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host), layers=2, hq=4, hkv=2, d=64,
                 dtype=torch.float32, page_size=16)
    assert eng.backend.stack == ["recorder"]
    _events(rec)
    gr = GraphRunner(eng, capture_bs=(1, 2), legacy=legacy)
    ev = _events(rec)
    per_bs = lambda bs, b: [f"capture 2 {bs} {bs} b{b}"] + [f"decode L{l} T{bs} b{b} save1 ocl1"
                                                             for _ in range(3) for l in (0, 1)]
    assert ev == ["state 2 2", "fill"] + per_bs(2, 0) + per_bs(1, 1)
    # eager batches in between replays use their own batch struct
    a, b = eng.add(), eng.add()
    eng.step(eng.extend_batch([(a, 7), (b, 3)]))
    fb = eng.decode_batch([a, b])
    gr.replay(fb, [eng.qkv(2) for _ in eng.layers])
    fb1 = eng.decode_batch([a])
    gr.replay(fb1, [eng.qkv(1) for _ in eng.layers])
    ev = _events(rec)
    assert ev == ["meta 1 2 10 b2", "extend L0 T10 b2 save1 ocl1", "extend L1 T10 b2 save1 ocl1",
                  "replay 2 2 2 b0", "replay 2 1 1 b1"]
    eng.step(eng.decode_batch([a, b]))
    assert _events(rec) == ["meta 2 2 2 b2", "decode L0 T2 b2 save1 ocl1", "decode L1 T2 b2 save1 ocl1"]


def test_verify_replay_keeps_the_mask_at_the_captured_addresses(rec_host):
    """A verify graph's batch keeps custom_mask / mask_indptr where the capture
    put them (docs/abi.md): sglang replays with the live batch's mask, which
    the adapter copies into the captured buffer; mask_indptr is one buffer.
    The recorder claims no graph_verify, so sglang is told not to capture."""
    eng = Engine(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host), layers=1, hq=4, hkv=2, d=64,
                 dtype=torch.float32, draft_tokens=3)
    be = eng.backend
    assert be.supports_target_verify_cuda_graph is False
    be.backend.features.append("tree_mask")  # the adapter's fill only; no plugin call below
    a, b = eng.add(), eng.add()
    eng.step(eng.extend_batch([(a, 5), (b, 2)]))

    def tree_batch(fill):
        fb = eng.verify_batch([a, b], 3)
        fb.spec_info.topk = 2
        n = int(((fb.seq_lens + 3) * 3).sum())
        fb.spec_info.custom_mask = torch.full((n,), fill, dtype=torch.bool)
        return fb, n

    batch = sglattn.Batch("idle")
    fb, n = tree_batch(True)
    room = torch.zeros(4 * n, dtype=torch.bool)  # the runner's static buffer, larger than one batch
    fb.spec_info.custom_mask = room
    be._fill(batch, fb, "verify")
    assert batch.tensor("custom_mask") is room
    indptr = batch.tensor("mask_indptr")
    assert indptr.tolist() == [0, (5 + 3) * 3, (5 + 3) * 3 + (2 + 3) * 3]
    fb2, n2 = tree_batch(True)
    be._fill(batch, fb2, "verify", replay=True)
    assert batch.tensor("custom_mask") is room and bool(room[:n2].all()) and not bool(room[n2:].any())
    assert batch.tensor("mask_indptr").data_ptr() == indptr.data_ptr()
    fb3, n3 = tree_batch(True)
    fb3.spec_info.custom_mask = torch.ones(4 * n + 1, dtype=torch.bool)
    with pytest.raises(sglattn.Error, match="more than the"):
        be._fill(batch, fb3, "verify", replay=True)


def test_replay_of_a_shape_never_captured(rec_host):
    eng = Engine(lambda r: ss.SglAttnBackend(r, backend="recorder", host_=rec_host), layers=1, hq=4, hkv=2, d=64,
                 dtype=torch.float32)
    gr = GraphRunner(eng, capture_bs=(2,))
    a = eng.add()
    eng.step(eng.extend_batch([(a, 3)]))
    fb = eng.decode_batch([a])
    fb.batch_size = 1
    with pytest.raises(sglattn.Error, match="replay of batch size 1 .* never captured"):
        eng.backend.init_forward_metadata_out_graph(fb)


def test_a_stack_without_graphs_says_disable_cuda_graph():
    eng = Engine(cpu_ref, layers=1, hq=4, hkv=2, d=64, dtype=torch.float32)
    with pytest.raises(NotImplementedError, match="cpu_ref cannot be captured in CUDA graphs; start sglang with "
                                                  "--disable-cuda-graph"):
        GraphRunner(eng)
