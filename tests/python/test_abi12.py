"""ABI 1.2 through the package, on cpu_ref and on validate/cpu_ref (the
validation layer passes every 1.2 field on): the LSE output of the paged
forwards and of forward_ragged, a page table in place of req_to_token, a
layer's slot map and attention type, MLA's q_rope / k_rope, draft extend;
each against float64 torch math, and a bad field named by the layer."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import sglattn  # noqa: E402
from test_package import Case  # noqa: E402

STACKS = [["cpu_ref"], ["validate", "cpu_ref"]]


def scores(c, attend_all=False):
    """Per request: the scaled float64 scores [h, q, k] over its keys (the
    pool with this call's saves), the causal mask applied, and its values."""
    kp, vp = c.kp.double().clone(), c.vp.double().clone()
    kp[c.ocl], vp[c.ocl] = c.k.double(), c.v.double()
    o, r = 0, c.hq // c.hkv
    for i, (p, n) in enumerate(zip(c.prefix, c.lens)):
        idx = c.r2t[i, :p + n].long()
        K, V = kp[idx].repeat_interleave(r, 1), vp[idx].repeat_interleave(r, 1)
        s = torch.einsum("qhd,khd->hqk", c.q[o:o + n].double(), K) / math.sqrt(c.d)
        if not attend_all:
            s.masked_fill_(torch.arange(p + n).view(1, -1) > torch.arange(p, p + n).view(-1, 1), -math.inf)
        yield o, n, s, V
        o += n


def reference(c, attend_all=False):
    out = torch.empty(c.q.shape, dtype=torch.float64)
    lse = torch.empty(c.q.shape[0], c.hq, dtype=torch.float64)
    for o, n, s, V in scores(c, attend_all):
        out[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), V)
        lse[o:o + n] = torch.logsumexp(s, -1).transpose(0, 1)
    return out, lse


def stack(host, names, c):
    return host.create_stack(names, c.model, max_reqs=4, max_tokens=64, max_context=64)


@pytest.mark.parametrize("names", STACKS, ids="/".join)
def test_lse_of_the_paged_forward_matches_float64(host, names):
    c = Case(host, lens=(6, 9), prefix=(0, 7))
    ref, ref_lse = reference(c)
    be = stack(host, names, c)
    assert "lse" in be.features
    be.init_forward_metadata(c.batch())
    layer = be.layer(0, c.kp, c.vp)
    out = torch.full_like(c.q, float("nan"))
    lse = torch.full((c.q.shape[0], c.hq), float("nan"))
    be.forward_extend(layer, c.q, c.k, c.v, out, lse=lse)
    assert (out.double() - ref).abs().max() < 1e-5
    assert (lse.double() - ref_lse).abs().max() < 1e-5
    # the next call without lse= passes NULL: the tensor is left as it is
    was = lse.clone()
    out2 = torch.zeros_like(out)
    be.forward_extend(layer, c.q, c.k, c.v, out2, save_kv_cache=False)
    assert torch.equal(lse, was) and torch.equal(out2, out)
    # a reshaped lse is described again, never passed stale
    with pytest.raises(sglattn.InvalidArgumentError, match="lse"):
        be.forward_extend(layer, c.q, c.k, c.v, out2, save_kv_cache=False, lse=lse[:, :2])


def test_validate_names_a_bad_lse(host):
    c = Case(host)
    be = stack(host, ["validate", "cpu_ref"], c)
    be.init_forward_metadata(c.batch())
    layer = be.layer(0, c.kp, c.vp)
    out = torch.zeros_like(c.q)
    with pytest.raises(sglattn.InvalidArgumentError, match=r"forward_extend: args->lse has dtype float16; expected float32"):
        be.forward_extend(layer, c.q, c.k, c.v, out, lse=torch.zeros(c.q.shape[0], c.hq, dtype=torch.float16))
    with pytest.raises(sglattn.InvalidArgumentError, match=r"args->lse shares memory with out"):
        be.forward_extend(layer, c.q, c.k, c.v, out, lse=out[:, :, 0])


@pytest.mark.parametrize("names", STACKS, ids="/".join)
def test_page_table_in_place_of_req_to_token(host, names):
    """Page size 1: request i's page table row is its req_to_token row, given
    in batch order; req_to_token and req_pool_indices are NULL."""
    c = Case(host, lens=(4, 11), prefix=(3, 5))
    ref, _ = reference(c)
    be = stack(host, names, c)
    assert "page_table" in be.features
    pt = c.r2t[:2].clone()
    b = c.batch(page_table=pt)
    b.update("extend", None, None, torch.tensor(c.tot, dtype=torch.int32), c.ocl, batch_size=2, page_table=pt,
             positions=c.pos, extend_prefix_lens=torch.tensor(c.prefix, dtype=torch.int32),
             extend_seq_lens=torch.tensor(c.lens, dtype=torch.int32), seq_lens_cpu=c.tot,
             extend_prefix_lens_cpu=c.prefix, extend_seq_lens_cpu=c.lens)
    assert b.struct.req_to_token is None and b.struct.page_table
    be.init_forward_metadata(b)
    out = torch.full_like(c.q, float("nan"))
    be.forward_extend(be.layer(0, c.kp, c.vp), c.q, c.k, c.v, out)
    assert (out.double() - ref).abs().max() < 1e-5
    assert torch.equal(c.kp[c.ocl], c.k)


@pytest.mark.parametrize("names", STACKS, ids="/".join)
def test_slot_map_and_attention_type_on_the_layer(host, names):
    """A layer keeping its own pool: full-pool slot s lives at slot_map[s];
    and a bidirectional layer: every new token sees all its request's keys."""
    c = Case(host, lens=(5, 8), prefix=(0, 6), seed=4)
    ref, _ = reference(c)
    be = stack(host, names, c)
    be.init_forward_metadata(c.batch())
    perm = torch.randperm(c.kp.shape[0], generator=torch.Generator().manual_seed(1))
    kl, vl = torch.empty_like(c.kp), torch.empty_like(c.vp)
    kl[perm], vl[perm] = c.kp, c.vp
    layer = be.layer(0, kl, vl, slot_map=perm.to(torch.int64))
    out = torch.full_like(c.q, float("nan"))
    be.forward_extend(layer, c.q, c.k, c.v, out)
    assert (out.double() - ref).abs().max() < 1e-5
    assert torch.equal(kl[perm[c.ocl]], c.k)  # saved at the mapped slots
    bidir, _ = reference(c, attend_all=True)
    c.kp[c.ocl], c.vp[c.ocl] = c.k, c.v
    layer2 = be.layer(0, c.kp, c.vp, attn_type="bidirectional")
    be.forward_extend(layer2, c.q, c.k, c.v, out, save_kv_cache=False)
    assert (out.double() - bidir).abs().max() < 1e-5
    with pytest.raises(sglattn.InvalidArgumentError, match="attn_type 'sideways'"):
        be.layer(0, c.kp, c.vp, attn_type="sideways")


@pytest.mark.parametrize("names", STACKS, ids="/".join)
@pytest.mark.parametrize("causal", [True, False])
def test_forward_ragged_with_lse_matches_float64(host, names, causal):
    """DeepSeek's MLA prefill shape, qk 192 / v 128, K/V as tensors."""
    g = torch.Generator().manual_seed(5)
    hq, hkv, dqk, dv = 4, 2, 192, 128
    model = sglattn.Model.plain(hq, hkv, dqk, num_layers=1, dtype="f32", head_dim_v=dv)
    be = host.create_stack(names, model, max_reqs=4, max_tokens=64, max_context=64)
    assert "ragged" in be.features and be.supports("forward_ragged")
    lq, lk = [3, 7, 1], [5, 7, 9]
    cq = torch.tensor([0] + list(torch.tensor(lq).cumsum(0)), dtype=torch.int32)
    ck = torch.tensor([0] + list(torch.tensor(lk).cumsum(0)), dtype=torch.int32)
    q = torch.randn(sum(lq), hq, dqk, generator=g)
    k, v = torch.randn(sum(lk), hkv, dqk, generator=g), torch.randn(sum(lk), hkv, dv, generator=g)
    out = torch.full((sum(lq), hq, dv), float("nan"))
    lse = torch.full((sum(lq), hq), float("nan"))
    be.forward_ragged(q, k, v, out, cq, ck, causal=causal, lse=lse, cu_seqlens_q_cpu=cq.tolist())
    for i in range(3):
        Q = q[cq[i]:cq[i + 1]].double()
        K = k[ck[i]:ck[i + 1]].double().repeat_interleave(hq // hkv, 1)
        V = v[ck[i]:ck[i + 1]].double().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("qhd,khd->hqk", Q, K) / math.sqrt(dqk)
        if causal:  # bottom-right: query j sits at position lk - lq + j
            pos = torch.arange(lk[i] - lq[i], lk[i]).view(-1, 1)
            s.masked_fill_(torch.arange(lk[i]).view(1, -1) > pos, -math.inf)
        ref = torch.einsum("hqk,khd->qhd", s.softmax(-1), V)
        assert (out[cq[i]:cq[i + 1]].double() - ref).abs().max() < 1e-5
        assert (lse[cq[i]:cq[i + 1]].double() - torch.logsumexp(s, -1).transpose(0, 1)).abs().max() < 1e-5
    if names[0] == "validate":
        bad = ck.clone()
        bad[2] = bad[1] - 1
        with pytest.raises(sglattn.InvalidArgumentError, match=r"forward_ragged: args->cu_seqlens_k\[2\]"):
            be.forward_ragged(q, k, v, out, cq, bad, causal=causal)


DS3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 1,
       "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
       "qk_nope_head_dim": 128, "v_head_dim": 128, "torch_dtype": "float32", "hidden_size": 512}


@pytest.mark.parametrize("names", STACKS, ids="/".join)
def test_mla_rope_split_matches_float64(host, names):
    """q and k as their latent parts with q_rope / k_rope beside them: the
    saved pool row is [k, k_rope], the scores use both parts."""
    g = torch.Generator().manual_seed(6)
    model = sglattn.Model.load(DS3, dtype="f32", kv_dtype="f32")
    be = host.create_stack(names, model, max_reqs=2, max_tokens=16, max_context=32)
    assert "mla_rope_split" in be.features
    hq, R, P, slots = 4, 512, 64, 48
    pool = torch.randn(slots, 1, R + P, generator=g)
    r2t = torch.zeros(2, 32, dtype=torch.int32)
    r2t[0, :7] = torch.arange(1, 8)
    r2t[1, :4] = torch.arange(20, 24)
    seq = [7, 4]
    ocl = torch.tensor([7, 23], dtype=torch.int64)
    b = sglattn.Batch("decode", r2t, torch.arange(2, dtype=torch.int32), torch.tensor(seq, dtype=torch.int32), ocl,
                      seq_lens_cpu=seq)
    be.init_forward_metadata(b)
    scale = 1 / math.sqrt(128 + P)
    layer = be.layer(0, pool, None, sm_scale=scale)
    q, qr = torch.randn(2, hq, R, generator=g), torch.randn(2, hq, P, generator=g)
    k, kr = torch.randn(2, 1, R, generator=g), torch.randn(2, 1, P, generator=g)
    out = torch.full((2, hq, R), float("nan"))
    be.forward_decode(layer, q, k, None, out, q_rope=qr, k_rope=kr)
    assert torch.equal(pool[ocl], torch.cat([k, kr], -1))
    Pd = pool.double()[:, 0]
    for t in range(2):
        idx = r2t[t, :seq[t]].long()
        s = (torch.einsum("hd,kd->hk", q[t].double(), Pd[idx, :R]) +
             torch.einsum("hd,kd->hk", qr[t].double(), Pd[idx, R:])) * scale
        ref = torch.einsum("hk,kd->hd", s.softmax(-1), Pd[idx, :R])
        assert (out[t].double() - ref).abs().max() < 1e-5
    # the same call with the parts joined gives the same bits
    out2 = torch.full_like(out, float("nan"))
    be.forward_decode(layer, torch.cat([q, qr], -1), torch.cat([k, kr], -1), None, out2, save_kv_cache=False)
    assert (out2 - out).abs().max() < 1e-5


@pytest.mark.parametrize("names", STACKS, ids="/".join)
def test_draft_extend_mode(host, names):
    c = Case(host, lens=(2, 3), prefix=(5, 8))
    ref, _ = reference(c)
    be = stack(host, names, c)
    assert "draft_extend" in be.features
    b = c.batch()
    b.update("draft_extend", c.r2t, torch.arange(2, dtype=torch.int32), torch.tensor(c.tot, dtype=torch.int32),
             c.ocl, positions=c.pos, extend_prefix_lens=torch.tensor(c.prefix, dtype=torch.int32),
             extend_seq_lens=torch.tensor(c.lens, dtype=torch.int32), seq_lens_cpu=c.tot,
             extend_prefix_lens_cpu=c.prefix, extend_seq_lens_cpu=c.lens, tokens_per_req=0)
    be.init_forward_metadata(b)
    out = torch.full_like(c.q, float("nan"))
    be.forward_extend(be.layer(0, c.kp, c.vp), c.q, c.k, c.v, out)
    assert (out.double() - ref).abs().max() < 1e-5
