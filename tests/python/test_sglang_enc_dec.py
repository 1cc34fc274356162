"""sglattn.sglang serving an encoder-decoder model (sglang's
is_encoder_decoder: mllama, whisper shaped) on cpu_ref, driven as sglang
drives one: an encoder pass through an encoder-only and a bidirectional
layer (ragged lengths, one request in two chunks), then decoder steps whose
self-attention layer is causal over the decoder tokens (req_to_token
columns after the encoder's) and whose cross layer saves the encoder's K/V
at forward_batch.encoder_out_cache_loc and reads them back: prefill with
every encoder new, decode with every encoder cached (k and v None), a mixed
extend in which only one request's encoder is new (sglang's
encoder_out_cache_loc then covers that request only), and decode again.
Every output against float64 attention over what the test gave (not read
from the pool); the pool's encoder slots against the K/V given."""
from __future__ import annotations

import math

import pytest
import torch

import sglattn
import sglattn.backend as sb
import sglattn.sglang as ss
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.layers.radix_attention import AttentionType, RadixAttention
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.server_args import ServerArgs

HQ, HKV, D = 4, 2, 32
LAYERS, MAX_REQS, CTX, TOKENS = 4, 12, 128, 1024
ENC_ONLY, BIDIR, SELF, CROSS = 0, 1, 2, 3
CFG = {"model_type": "llama", "num_hidden_layers": LAYERS, "num_attention_heads": HQ, "num_key_value_heads": HKV,
       "hidden_size": HQ * D, "head_dim": D, "torch_dtype": "float32", "is_encoder_decoder": True}


def attention(q, K, V, causal_from=None):
    """float64 attention of q [n, HQ, D] over K, V [m, HKV, D]; causal_from:
    the key position of q's first row (None: every row sees every key)."""
    q, K, V = q.double(), K.double().repeat_interleave(HQ // HKV, 1), V.double().repeat_interleave(HQ // HKV, 1)
    n, m = q.shape[0], K.shape[0]
    if m == 0:
        return torch.zeros(n, HQ, D, dtype=torch.float64)
    s = torch.einsum("qhd,khd->hqk", q, K) * D ** -0.5
    if causal_from is not None:
        s.masked_fill_(torch.arange(m).view(1, -1) > (causal_from + torch.arange(n)).view(-1, 1), -math.inf)
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), V)


class EncDecEngine:
    """sglang's pools and runner for an encoder-decoder model, our backend
    on cpu_ref, and the requests: each decoder request's req_to_token row
    holds its encoder tokens first, then its decoder tokens."""

    def __init__(self, seed=0):
        self.g = torch.Generator().manual_seed(seed)
        self.req_pool = ReqToTokenPool(MAX_REQS, CTX, "cpu")
        self.req_pool.alloc(1)  # row 0: padding
        self.kv_pool = MHATokenToKVPool(TOKENS, 1, torch.float32, HKV, D, LAYERS, "cpu")
        sa = ServerArgs(page_size=1, max_running_requests=MAX_REQS, max_prefill_tokens=TOKENS,
                        disable_cuda_graph=True)
        self.runner = ModelRunner(ModelConfig(CFG, context_len=CTX), sa, self.kv_pool, self.req_pool, "cpu",
                                  torch.float32)
        self.backend = ss.SglAttnBackend(self.runner, backend="cpu_ref", host_=sglattn.Host())
        self.layers = [RadixAttention(HQ, D, D ** -0.5, HKV, ENC_ONLY, attn_type=AttentionType.ENCODER_ONLY),
                       RadixAttention(HQ, D, D ** -0.5, HKV, BIDIR, attn_type=AttentionType.DECODER_BIDIRECTIONAL),
                       RadixAttention(HQ, D, D ** -0.5, HKV, SELF),
                       RadixAttention(HQ, D, D ** -0.5, HKV, CROSS, is_cross_attention=True)]
        self.next_slot = 1
        self.reqs = {}  # rid -> dict(row, enc, length, k/v shadows per layer, enc_k/enc_v)

    def slots(self, n):
        out = list(range(self.next_slot, self.next_slot + n))
        self.next_slot += n
        return out

    def add(self, rid, enc=0):
        row = self.req_pool.alloc(1)[0]
        enc_slots = self.slots(enc)
        self.req_pool.req_to_token[row, :enc] = torch.tensor(enc_slots, dtype=torch.int32)
        self.reqs[rid] = dict(row=row, enc=enc, enc_slots=enc_slots, length=0, cached=False, enc_kv=None,
                              k={l: torch.zeros(0, HKV, D, dtype=torch.float64) for l in range(LAYERS)},
                              v={l: torch.zeros(0, HKV, D, dtype=torch.float64) for l in range(LAYERS)})

    def batch(self, items, mode, enc_dec=True):
        """items [(rid, new decoder tokens)]: an sglang ForwardBatch; the
        encoder fields as sglang's prepare_encoder_info_extend makes them
        (encoder_out_cache_loc over the requests whose encoder is new)."""
        rows, prefix, seq, locs, pos, enc_lens, enc_locs, cached = [], [], [], [], [], [], [], []
        for rid, n in items:
            r = self.reqs[rid]
            new = self.slots(n)
            e = r["enc"] if enc_dec else 0
            self.req_pool.req_to_token[r["row"], e + r["length"]:e + r["length"] + n] = torch.tensor(
                new, dtype=torch.int32)
            rows.append(r["row"])
            prefix.append(r["length"])
            seq.append(r["length"] + n)
            locs += new
            pos += list(range(r["length"], r["length"] + n))
            r["length"] += n
            enc_lens.append(r["enc"])
            cached.append(r["cached"])
            if not r["cached"]:
                enc_locs += r["enc_slots"]
        ext = [n for _, n in items]
        i32 = lambda x: torch.tensor(x, dtype=torch.int32)  # noqa: E731
        i64 = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
        kw = {}
        if mode != ForwardMode.DECODE:
            kw = dict(extend_num_tokens=sum(ext), extend_seq_lens=i32(ext), extend_prefix_lens=i32(prefix),
                      extend_start_loc=i32([sum(ext[:i]) for i in range(len(ext))]), extend_prefix_lens_cpu=prefix,
                      extend_seq_lens_cpu=ext)
        if enc_dec:
            kw.update(encoder_lens=i64(enc_lens), encoder_lens_cpu=enc_lens, encoder_cached=cached,
                      encoder_out_cache_loc=i64(enc_locs) if enc_locs else None)
        fb = ForwardBatch(forward_mode=mode, batch_size=len(items), input_ids=torch.zeros(sum(ext), dtype=torch.int64),
                          req_pool_indices=i64(rows), seq_lens=i32(seq), out_cache_loc=i64(locs),
                          seq_lens_sum=sum(seq), seq_lens_cpu=i32(seq), positions=i64(pos), **kw)
        fb._items = list(items)
        return fb

    def rand(self, *shape):
        return torch.randn(*shape, generator=self.g)


def check(out, want):
    want = want.reshape(out.shape[0], -1)
    err = (out.double() - want).abs().max().item()
    assert err < 2e-5 * max(1.0, want.abs().max().item()), err


def encoder_pass(eng, items):
    """The encoder-only and bidirectional layers over one extend batch;
    returns each request's layer-1 output rows (its 'encoder states')."""
    fb = eng.batch(items, ForwardMode.EXTEND, enc_dec=False)
    T = sum(n for _, n in items)
    eng.backend.init_forward_metadata(fb)
    states = {}
    with forward_context(ForwardContext(eng.backend)):
        for lid in (ENC_ONLY, BIDIR):
            q, k, v = eng.rand(T, HQ * D), eng.rand(T, HKV * D), eng.rand(T, HKV * D)
            out = eng.layers[lid].forward(q, k, v, fb)
            o = 0
            for rid, n in items:
                r = eng.reqs[rid]
                kn, vn = k[o:o + n].view(n, HKV, D).double(), v[o:o + n].view(n, HKV, D).double()
                r["k"][lid] = torch.cat([r["k"][lid], kn])
                r["v"][lid] = torch.cat([r["v"][lid], vn])
                if lid == ENC_ONLY:  # the request's new tokens only, from the call's k / v
                    want = attention(q[o:o + n].view(n, HQ, D), kn, vn)
                else:  # every key of the request, the prefix's from the pool
                    want = attention(q[o:o + n].view(n, HQ, D), r["k"][lid], r["v"][lid])
                    states[rid] = out[o:o + n]
                check(out[o:o + n], want)
                o += n
    return states


def decoder_step(eng, items, mode, enc_kv):
    """The decoder's self and cross layers over one batch.  enc_kv: the
    cross layer's K/V of each request whose encoder is new this step."""
    fb = eng.batch(items, mode)
    T = sum(n for _, n in items)
    new_enc = [rid for rid, _ in items if not eng.reqs[rid]["cached"]]
    eng.backend.init_forward_metadata(fb)
    with forward_context(ForwardContext(eng.backend)):
        q, k, v = eng.rand(T, HQ * D), eng.rand(T, HKV * D), eng.rand(T, HKV * D)
        out = eng.layers[SELF].forward(q, k, v, fb)
        o = 0
        for rid, n in items:
            r = eng.reqs[rid]
            r["k"][SELF] = torch.cat([r["k"][SELF], k[o:o + n].view(n, HKV, D).double()])
            r["v"][SELF] = torch.cat([r["v"][SELF], v[o:o + n].view(n, HKV, D).double()])
            check(out[o:o + n], attention(q[o:o + n].view(n, HQ, D), r["k"][SELF], r["v"][SELF],
                                          causal_from=r["length"] - n))
            o += n
        q = eng.rand(T, HQ * D)
        if new_enc:  # the encoder's K/V of the requests whose encoder is new, request order
            ck = torch.cat([enc_kv[rid][0] for rid in new_enc]).float()
            cv = torch.cat([enc_kv[rid][1] for rid in new_enc]).float()
            out = eng.layers[CROSS].forward(q, ck.reshape(-1, HKV * D), cv.reshape(-1, HKV * D), fb)
            for rid in new_enc:
                eng.reqs[rid]["enc_kv"] = enc_kv[rid]
                eng.reqs[rid]["cached"] = True
        else:
            out = eng.layers[CROSS].forward(q, None, None, fb)
        o = 0
        for rid, n in items:
            r = eng.reqs[rid]
            ek, ev = r["enc_kv"] if r["enc"] else (torch.zeros(0, HKV, D), torch.zeros(0, HKV, D))
            check(out[o:o + n], attention(q[o:o + n].view(n, HQ, D), ek, ev))
            o += n
    # the cross layer's pool holds each request's encoder K/V at its encoder slots
    kp, vp = eng.kv_pool.get_key_buffer(CROSS), eng.kv_pool.get_value_buffer(CROSS)
    for rid, _ in items:
        r = eng.reqs[rid]
        if r["enc"]:
            idx = torch.tensor(r["enc_slots"])
            assert torch.equal(kp[idx], r["enc_kv"][0].float()) and torch.equal(vp[idx], r["enc_kv"][1].float())
    return fb


def test_encoder_pass_then_decoder_steps_with_cross_attention():
    eng = EncDecEngine(seed=3)
    assert eng.backend.enc_dec and eng.backend.stack == ["cpu_ref"]
    # encoder pass: ragged lengths, "eb" in two chunks (the bidirectional layer then sees its prefix too)
    enc_len = {"a": 5, "b": 9, "c": 3}
    for rid in enc_len:
        eng.add("e" + rid)
    states = encoder_pass(eng, [("ea", 5), ("eb", 6)])
    states.update({k: torch.cat([states[k], v]) if k in states else v
                   for k, v in encoder_pass(eng, [("eb", 3), ("ec", 3)]).items()})
    assert {k: v.shape[0] for k, v in states.items()} == {"ea": 5, "eb": 9, "ec": 3}
    # the cross layer's K/V of each decoder request come from its encoder's states
    enc_kv = {rid: (states["e" + rid][:, :HKV * D].reshape(-1, HKV, D).double(),
                    states["e" + rid][:, HKV * D:2 * HKV * D].reshape(-1, HKV, D).double()) for rid in enc_len}
    enc_kv["n"] = (torch.zeros(0, HKV, D, dtype=torch.float64),) * 2
    eng.add("a", 5)
    eng.add("b", 9)
    eng.add("n", 0)  # a request without an encoder input (sglang: encoder_lens 0, cached)
    eng.reqs["n"]["cached"] = True
    # prefill: every encoder new, saved by the stack at encoder_out_cache_loc
    decoder_step(eng, [("a", 4), ("b", 6), ("n", 2)], ForwardMode.EXTEND, enc_kv)
    assert eng.backend._enc_loc_passed
    decoder_step(eng, [("a", 1), ("b", 1), ("n", 1)], ForwardMode.DECODE, enc_kv)
    # a mixed extend: b continues (its encoder cached), c is new; sglang's encoder_out_cache_loc covers c only
    eng.add("c", 3)
    decoder_step(eng, [("b", 2), ("c", 5)], ForwardMode.EXTEND, enc_kv)
    assert not eng.backend._enc_loc_passed
    for _ in range(2):
        decoder_step(eng, [("a", 1), ("b", 1), ("c", 1), ("n", 1)], ForwardMode.DECODE, enc_kv)


def test_enc_dec_and_attn_types_refused_by_name_without_the_features(monkeypatch):
    real = sb.Backend._stack_features

    def without(name):
        def features(self, what="features"):
            return [f for f in real(self, what) if f != name]
        return features

    monkeypatch.setattr(sb.Backend, "_stack_features", without("encoder_loc"))
    with pytest.raises(NotImplementedError, match=r"encoder-decoder model 'llama': the stack cpu_ref does not "
                                                  r"declare encoder_loc \(SGL_ATTN_FEAT_ENCODER_LOC\)"):
        EncDecEngine()
    monkeypatch.setattr(sb.Backend, "_stack_features", without("attn_types"))
    eng = EncDecEngine()
    eng.add("a")
    fb = eng.batch([("a", 3)], ForwardMode.EXTEND, enc_dec=False)
    eng.backend.init_forward_metadata(fb)
    with forward_context(ForwardContext(eng.backend)):
        with pytest.raises(NotImplementedError, match=r"layer 0 has attn_type 'encoder_only' \(encoder_only "
                                                      r"attention\): the stack cpu_ref does not declare attn_types"):
            eng.layers[ENC_ONLY].forward(eng.rand(3, HQ * D), eng.rand(3, HKV * D), eng.rand(3, HKV * D), fb)


def test_cross_layer_of_a_model_that_is_not_encoder_decoder_refused():
    cfg = dict(CFG, is_encoder_decoder=False)
    req_pool = ReqToTokenPool(4, CTX, "cpu")
    kv_pool = MHATokenToKVPool(64, 1, torch.float32, HKV, D, LAYERS, "cpu")
    runner = ModelRunner(ModelConfig(cfg, context_len=CTX), ServerArgs(page_size=1, disable_cuda_graph=True),
                         kv_pool, req_pool, "cpu", torch.float32)
    be = ss.SglAttnBackend(runner, backend="cpu_ref", host_=sglattn.Host())
    assert not be.enc_dec
    req_pool.req_to_token[1, 0] = 1
    fb = ForwardBatch(forward_mode=ForwardMode.DECODE, batch_size=1, input_ids=torch.zeros(1, dtype=torch.int64),
                      req_pool_indices=torch.tensor([1]), seq_lens=torch.tensor([1], dtype=torch.int32),
                      out_cache_loc=torch.tensor([1]), seq_lens_sum=1, seq_lens_cpu=torch.tensor([1]),
                      positions=torch.tensor([0]))
    be.init_forward_metadata(fb)
    with pytest.raises(NotImplementedError, match=r"layer 3 is a cross-attention layer, but the model config is not "
                                                  r"encoder-decoder"):
        be.forward_decode(torch.randn(1, HQ * D), None, None, RadixAttention(HQ, D, D ** -0.5, HKV, 3,
                                                                              is_cross_attention=True), fb)
