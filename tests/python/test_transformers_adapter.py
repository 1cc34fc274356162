"""sglattn.transformers: transformers' paged-cache indices translated into an
sgl_attn_batch, and the attention function run on a cache laid out as
transformers 5.x keeps it ([pages, kv_heads, head_dim] per layer), against
float64.  transformers is not installed here: the cache and the modules are
small stand-ins with the attributes the function reads; the real run is
bench/gpu/python_e2e.sh on the H200."""
from __future__ import annotations

import math
import sys
import types

import pytest
import torch

import sglattn
from sglattn.transformers import NAME, PagedAttention, register, translate

HQ, HKV, D, B = 4, 2, 32, 4  # heads, kv heads, head dim, block size


class Cache:
    """The PagedAttentionCache attributes the function reads."""

    def __init__(self, layers=2, blocks=64, dtype=torch.float32):
        self.block_size = B
        self.key_cache = [torch.zeros(blocks * B, HKV, D, dtype=dtype) for _ in range(layers)]
        self.value_cache = [torch.zeros(blocks * B, HKV, D, dtype=dtype) for _ in range(layers)]
        self.layer_index_to_group_indices = {i: (0, i) for i in range(layers)}
        self.free = list(range(1, blocks))[::-1]
        self.blocks = {}  # request -> its blocks

    def slots(self, r, start, n):
        bl = self.blocks.setdefault(r, [])
        out = []
        for p in range(start, start + n):
            if p // B >= len(bl):
                bl.append(self.free.pop())
            out.append(bl[p // B] * B + p % B)
        return out


class Module:
    def __init__(self, layer_idx):
        self.layer_idx = layer_idx
        self.scaling = D ** -0.5
        self.num_key_value_groups = HQ // HKV
        self.config = types.SimpleNamespace(to_dict=lambda: {
            "model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": HQ, "num_key_value_heads": HKV,
            "hidden_size": HQ * D, "head_dim": D, "torch_dtype": "float32"})


class Scenario:
    """Requests over steps, with the indices transformers would pass and a
    float64 shadow of every request's K/V per layer."""

    def __init__(self, dtype=torch.float32, seed=0):
        self.cache = Cache(dtype=dtype)
        self.len = {}
        self.shadow = {}  # (request, layer) -> (K, V) float64
        self.g = torch.Generator().manual_seed(seed)
        self.dtype = dtype

    def step(self, new, use_block_table=False):
        """new = {request: tokens}; returns kwargs for the attention function."""
        reqs = list(new)
        q_lens = [new[r] for r in reqs]
        k_lens = [self.len.get(r, 0) + new[r] for r in reqs]
        cu = lambda xs: torch.tensor([0] + [sum(xs[:i + 1]) for i in range(len(xs))], dtype=torch.int32)  # noqa
        write = [s for r in reqs for s in self.cache.slots(r, self.len.get(r, 0), new[r])]
        fresh = all(self.len.get(r, 0) == 0 for r in reqs)
        read = [] if fresh else [s for r in reqs for s in self.cache.slots(r, 0, self.len.get(r, 0) + new[r])]
        kw = dict(cache=self.cache, cu_seq_lens_q=cu(q_lens), cu_seq_lens_k=cu(k_lens),
                  max_seqlen_q=max(q_lens), max_seqlen_k=max(k_lens), scaling=D ** -0.5)
        if use_block_table:
            nb = max(len(self.cache.blocks[r]) for r in reqs)
            bt = torch.full((1, len(reqs), nb), -1, dtype=torch.int32)
            for i, r in enumerate(reqs):
                bt[0, i, :len(self.cache.blocks[r])] = torch.tensor(self.cache.blocks[r])
            kw.update(block_table=bt, read_index=None, write_index=None)
        else:
            kw.update(block_table=None, read_index=[torch.tensor(read, dtype=torch.int64)],
                      write_index=[torch.tensor(write, dtype=torch.int64)])
        for r in reqs:
            self.len[r] = self.len.get(r, 0) + new[r]
        self.reqs, self.q_lens, self.write = reqs, q_lens, write
        return kw

    def qkv(self):
        T = sum(self.q_lens)
        r = lambda h: torch.randn(1, T, h, D, generator=self.g).to(self.dtype).transpose(1, 2)  # noqa: E731
        return r(HQ), r(HKV), r(HKV)  # [1, heads, T, D] as a model's attention passes them

    def reference(self, layer, q, k, v):
        q64, k64, v64 = (x[0].transpose(0, 1).double() for x in (q, k, v))
        out, o = torch.empty(q64.shape, dtype=torch.float64), 0
        for r, n in zip(self.reqs, self.q_lens):
            K0, V0 = self.shadow.get((r, layer), (torch.zeros(0, HKV, D, dtype=torch.float64),) * 2)
            K, V = torch.cat([K0, k64[o:o + n]]), torch.cat([V0, v64[o:o + n]])
            self.shadow[(r, layer)] = (K, V)
            L = K.shape[0]
            s = torch.einsum("qhd,khd->hqk", q64[o:o + n], K.repeat_interleave(HQ // HKV, 1)) * D ** -0.5
            s.masked_fill_(torch.arange(L).view(1, -1) > torch.arange(L - n, L).view(-1, 1), -math.inf)
            out[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), V.repeat_interleave(HQ // HKV, 1))
            o += n
        return out


def test_translate_mixed_step():
    sc = Scenario()
    sc.step({"a": 6, "b": 3})
    kw = sc.step({"a": 1, "b": 4, "c": 5})
    tr = translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], kw["read_index"][0], kw["write_index"][0])
    assert tr.mode == "extend" and tr.num_tokens == 10
    assert tr.seq_lens_cpu == [7, 7, 5] and tr.extend_prefix_lens_cpu == [6, 3, 0]
    assert tr.extend_seq_lens_cpu == [1, 4, 5]
    for i, r in enumerate("abc"):
        want = sc.cache.slots(r, 0, tr.seq_lens_cpu[i])
        assert tr.req_to_token[i, :len(want)].tolist() == want
        assert not tr.req_to_token[i, len(want):].any()
    assert tr.out_cache_loc.tolist() == sc.write
    assert tr.positions.tolist() == [6, 3, 4, 5, 6, 0, 1, 2, 3, 4]
    assert tr.req_to_token.dtype == torch.int32 and tr.out_cache_loc.dtype == torch.int64


def test_translate_fresh_prefill_and_block_table_decode():
    sc = Scenario()
    kw = sc.step({"a": 6, "b": 3})
    assert kw["read_index"][0].numel() == 0
    tr = translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], kw["read_index"][0], kw["write_index"][0])
    assert tr.req_to_token[0, :6].tolist() == sc.write[:6] and tr.req_to_token[1, :3].tolist() == sc.write[6:]
    kw = sc.step({"a": 1, "b": 1}, use_block_table=True)
    tr = translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], block_table=kw["block_table"][0], block_size=B)
    assert tr.mode == "decode" and tr.seq_lens_cpu == [7, 4]
    assert tr.out_cache_loc.tolist() == sc.write
    assert tr.req_to_token[0, :7].tolist() == sc.cache.slots("a", 0, 7)
    with pytest.raises(ValueError, match="read_index is empty but some request has cached tokens"):
        translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], torch.zeros(0, dtype=torch.int64),
                  torch.tensor(sc.write))


def test_translate_block_table_as_page_table():
    """A stack that declares page_table gets transformers' block table as
    the batch's page table: no per-token expansion, the new tokens' slots
    computed from it."""
    sc = Scenario()
    sc.step({"a": 6, "b": 3})
    kw = sc.step({"a": 1, "b": 5}, use_block_table=True)
    bt = kw["block_table"][0]
    tr = translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], block_table=bt, block_size=B, page_table=True)
    assert tr.req_to_token is None and tr.req_pool_indices is None
    assert tr.page_table is bt and tr.page_size == B
    assert tr.mode == "extend" and tr.seq_lens_cpu == [7, 8] and tr.extend_prefix_lens_cpu == [6, 3]
    assert tr.out_cache_loc.tolist() == sc.write and tr.out_cache_loc.dtype == torch.int64
    assert tr.positions.tolist() == [6, 3, 4, 5, 6, 7]
    # the expansion of the same table names the same slots
    ex = translate(kw["cu_seq_lens_q"], kw["cu_seq_lens_k"], block_table=bt, block_size=B)
    assert ex.page_table is None and ex.page_size == 1
    assert torch.equal(ex.out_cache_loc, tr.out_cache_loc)
    for i, r in enumerate("ab"):
        assert ex.req_to_token[i, :tr.seq_lens_cpu[i]].tolist() == sc.cache.slots(r, 0, tr.seq_lens_cpu[i])


def _without_page_table(self, what="features"):
    return [f for f in _stack_features(self, what) if f != "page_table"]


_stack_features = sglattn.Backend._stack_features


def test_block_table_as_page_table_and_expanded_agree(monkeypatch):
    """The same steps, block tables throughout, through a stack that takes
    them as page tables (cpu_ref declares page_table) and through the same
    stack with page_table hidden (expanded per step): both against float64,
    and the two outputs and caches equal."""
    runs = []
    for hide in (False, True):
        if hide:
            monkeypatch.setattr(sglattn.Backend, "_stack_features", _without_page_table)
        sc = Scenario(seed=5)
        fn = PagedAttention(backend="cpu_ref", host=sglattn.Host())
        outs = []
        for new in ({"a": 6, "b": 3}, {"a": 1, "b": 4, "c": 9}, {"a": 1, "b": 1, "c": 1}, {"b": 7, "c": 1}):
            kw = sc.step(new, use_block_table=True)
            for m in (Module(0), Module(1)):
                q, k, v = sc.qkv()
                out, _ = fn(m, q, k, v, None, **kw)
                ref = sc.reference(m.layer_idx, q, k, v)
                assert (out.double() - ref).abs().max() < 2e-5 * max(1.0, ref.abs().max().item())
                outs.append(out)
            st = next(iter(fn._states.values()))
            batch = st.batches[0][1]
            if hide:
                assert "page_table" not in st.backend.features
                assert batch.tensor("page_table") is None and batch.tensor("req_to_token") is not None
            else:
                assert "page_table" in st.backend.features
                assert batch.tensor("req_to_token") is None
                pt = batch.tensor("page_table")  # transformers' own table, not a copy
                assert pt.data_ptr() == kw["block_table"][0].data_ptr() and batch.struct.page_size == B
        runs.append((outs, sc.cache))
    (a, ca), (b, cb) = runs
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert all(torch.equal(x, y) for x, y in zip(ca.key_cache + ca.value_cache, cb.key_cache + cb.value_cache))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_function_on_the_paged_cache(dtype):
    sc = Scenario(dtype=dtype, seed=3)
    fn = PagedAttention(backend="cpu_ref", host=sglattn.Host())
    mods = [Module(0), Module(1)]
    tol = 2e-5 if dtype == torch.float32 else 3e-2
    for new, bt in (({"a": 6, "b": 3}, False), ({"a": 1, "b": 4, "c": 5}, False), ({"a": 1, "b": 1, "c": 1}, True),
                    ({"a": 1, "b": 1, "c": 1}, False), ({"c": 9}, False)):
        kw = sc.step(new, use_block_table=bt)
        for m in mods:
            q, k, v = sc.qkv()
            out, weights = fn(m, q, k, v, None, **kw)
            assert weights is None and out.shape == (q.shape[2], HQ, D)
            ref = sc.reference(m.layer_idx, q, k, v)
            assert (out.double() - ref).abs().max() < tol * max(1.0, ref.abs().max().item())
            # the new K/V are in transformers' own cache, at write_index: no copy anywhere
            kc = sc.cache.key_cache[m.layer_idx]
            assert torch.equal(kc[torch.tensor(sc.write)], k[0].transpose(0, 1))
    st = next(iter(fn._states.values()))
    assert st.backend.stack == ["cpu_ref"]


def test_refusals():
    sc = Scenario()
    fn = PagedAttention(backend="cpu_ref", host=sglattn.Host())
    kw = sc.step({"a": 3})
    q, k, v = sc.qkv()
    with pytest.raises(NotImplementedError, match="without a paged cache"):
        fn(Module(0), q, k, v, None)
    m = Module(0)
    m.sliding_window = 128
    with pytest.raises(NotImplementedError, match="sliding window"):
        fn(m, q, k, v, None, **kw)
    sc.cache.key_cache[0] = torch.zeros(HKV, 4, B, D)
    with pytest.raises(NotImplementedError, match=r"shape \(2, 4, 4, 32\); expected \[pages, kv_heads, head_dim\]"):
        fn(Module(0), q, k, v, None, **kw)


def test_register_adds_paged_sglattn(monkeypatch):
    class AttentionInterface:
        _global_mapping = {}

        @classmethod
        def register(cls, key, value):
            cls._global_mapping[key] = value

    monkeypatch.setitem(sys.modules, "transformers", types.SimpleNamespace(AttentionInterface=AttentionInterface))
    assert register() == NAME == "paged|sglattn"
    assert isinstance(AttentionInterface._global_mapping[NAME], PagedAttention)
