"""sglattn.sglang serving an MLA model (DeepSeek-V2/V3 shaped) on cpu_ref,
driven the way sglang's DeepSeek attention drives an MLA backend: the
absorbed layer (attn_mqa: one latent head, qk kv_lora_rank + rope, v
kv_lora_rank) with q / q_rope and k / k_rope split or joined, the MHA
prefill layer (attn_mha: K/V per head as tensors, the latent row saved by
the model) of an extend with no prefix, over the stub's MLATokenToKVPool.
The reference is float64 MLA written here over a shadow copy of each
request's latent rows (not read from the pool), so a wrong save shows in a
later step; the pool's rows are checked against that shadow."""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import pytest
import torch

import sglattn
import sglattn.sglang as ss
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.mem_cache.memory_pool import MLATokenToKVPool, ReqToTokenPool
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.server_args import ServerArgs

H, R, P, NOPE, VD = 16, 64, 16, 32, 32   # heads, kv_lora_rank, rope, qk_nope_head_dim, v_head_dim
LAYERS = 2
SCALE = (NOPE + P) ** -0.5               # DeepSeek's softmax scale: qk_head_dim ** -0.5
TOL = {torch.float32: 2e-5, torch.bfloat16: 3e-2}


def ds_config(dtype: str, layers: int = LAYERS) -> Dict[str, object]:
    return {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "num_hidden_layers": layers,
            "num_attention_heads": H, "num_key_value_heads": H, "kv_lora_rank": R, "qk_rope_head_dim": P,
            "qk_nope_head_dim": NOPE, "v_head_dim": VD, "q_lora_rank": None, "hidden_size": 256,
            "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": dtype}


class MlaEngine:
    """Pools, requests and an SglAttnBackend over MLATokenToKVPool, with
    sglang's two RadixAttention layers per attention block."""

    def __init__(self, dtype: torch.dtype, page_size: int = 1, max_reqs: int = 8, max_context: int = 256,
                 pool_tokens: int = 1024, seed: int = 0, **cfg_extra: object) -> None:
        self.dtype, self.page_size = dtype, page_size
        sa = ServerArgs(page_size=page_size, max_running_requests=max_reqs, max_prefill_tokens=pool_tokens)
        self.req_pool = ReqToTokenPool(max_reqs, max_context, "cpu")
        self.req_pool.alloc(1)  # row 0: the padding row
        self.pool = MLATokenToKVPool(pool_tokens, page_size, dtype, R, P, LAYERS, "cpu")
        cfg = dict(ds_config(str(dtype).rsplit(".", 1)[-1]), **cfg_extra)
        self.runner = ModelRunner(ModelConfig(cfg, context_len=max_context), sa, self.pool, self.req_pool, "cpu",
                                  dtype)
        self.runner.use_mla_backend = True
        self.free_pages = list(range(1, pool_tokens // page_size + 1))
        self.backend = ss.SglAttnBackend(self.runner, backend="cpu_ref")
        self.mqa = [RadixAttention(H, R + P, SCALE, 1, i, v_head_dim=R) for i in range(LAYERS)]
        self.mha = [RadixAttention(H, NOPE + P, SCALE, H, i, v_head_dim=VD) for i in range(LAYERS)]
        self.gen = torch.Generator().manual_seed(seed)
        self.rows: Dict[int, int] = {}
        self.slots: Dict[int, List[int]] = {}
        # the truth: per request and layer, its latent rows [n, R + P] in float64
        self.lat: Dict[int, List[torch.Tensor]] = {}
        # per layer: the up-projections of the MHA prefill layer (k_nope and v per head)
        self.w_uk = [torch.randn(H, R, NOPE, generator=self.gen, dtype=torch.float64) / math.sqrt(R)
                     for _ in range(LAYERS)]
        self.w_uv = [torch.randn(H, R, VD, generator=self.gen, dtype=torch.float64) / math.sqrt(R)
                     for _ in range(LAYERS)]

    def add(self) -> int:
        rid = len(self.rows)
        rows = self.req_pool.alloc(1)
        assert rows
        self.rows[rid], self.slots[rid] = rows[0], []
        self.lat[rid] = [torch.zeros(0, R + P, dtype=torch.float64) for _ in range(LAYERS)]
        return rid

    def _take(self, rid: int, n: int) -> List[int]:
        out: List[int] = []
        have, ps = self.slots[rid], self.page_size
        for pos in range(len(have), len(have) + n):
            if pos % ps == 0:
                page = self.free_pages.pop(0)
            else:
                page = (out[-1] if out else have[-1]) // ps
            out.append(page * ps + pos % ps)
        start = len(have)
        self.req_pool.req_to_token[self.rows[rid], start:start + n] = torch.tensor(out, dtype=torch.int32)
        have += out
        return out

    def extend(self, items: Sequence[Tuple[int, int]]) -> ForwardBatch:
        prefix = [len(self.slots[r]) for r, _ in items]
        new = [self._take(r, n) for r, n in items]
        ext = [n for _, n in items]
        seq = [len(self.slots[r]) for r, _ in items]
        fb = ForwardBatch(forward_mode=ForwardMode.EXTEND, batch_size=len(items),
                          input_ids=torch.zeros(sum(ext), dtype=torch.int64),
                          req_pool_indices=torch.tensor([self.rows[r] for r, _ in items]),
                          seq_lens=torch.tensor(seq, dtype=torch.int32),
                          out_cache_loc=torch.tensor([s for n_ in new for s in n_]), seq_lens_sum=sum(seq),
                          seq_lens_cpu=torch.tensor(seq, dtype=torch.int32),
                          positions=torch.tensor([p for a, n in zip(prefix, ext) for p in range(a, a + n)]),
                          extend_num_tokens=sum(ext), extend_seq_lens=torch.tensor(ext, dtype=torch.int32),
                          extend_prefix_lens=torch.tensor(prefix, dtype=torch.int32),
                          extend_prefix_lens_cpu=prefix, extend_seq_lens_cpu=ext)
        fb._items = list(items)  # type: ignore[attr-defined]
        return fb

    def decode(self, rids: Sequence[int]) -> ForwardBatch:
        new = [self._take(r, 1)[0] for r in rids]
        seq = [len(self.slots[r]) for r in rids]
        fb = ForwardBatch(forward_mode=ForwardMode.DECODE, batch_size=len(rids),
                          input_ids=torch.zeros(len(rids), dtype=torch.int64),
                          req_pool_indices=torch.tensor([self.rows[r] for r in rids]),
                          seq_lens=torch.tensor(seq, dtype=torch.int32), out_cache_loc=torch.tensor(new),
                          seq_lens_sum=sum(seq), seq_lens_cpu=torch.tensor(seq, dtype=torch.int32),
                          positions=torch.tensor([s - 1 for s in seq]))
        fb._items = [(r, 1) for r in rids]  # type: ignore[attr-defined]
        return fb

    def randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.gen).to(self.dtype)

    # ---------------------------------------------------------- absorbed layer
    def absorbed_inputs(self, T: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """As DeepSeek's forward_absorb_core makes them: q_nope_out from a
        batched matmul over heads, transposed ([T, H, R], not contiguous);
        q_pe the rope tail of q ([T, H, P], a strided slice); k_nope and k_pe
        the two parts of the latent row ([T, 1, R] and [T, 1, P])."""
        q_nope = self.randn(H, T, R).transpose(0, 1)
        q_pe = self.randn(T, H, NOPE + P)[..., NOPE:]
        latent = self.randn(T, 1, R + P)
        return q_nope, q_pe, latent[..., :R].contiguous(), latent[..., R:]

    def run_absorbed(self, fb: ForwardBatch, split: bool, plan: bool = True) -> None:
        if plan:
            self.backend.init_forward_metadata(fb)
        T = int(fb.out_cache_loc.shape[0])
        with forward_context(ForwardContext(self.backend)):
            for i, layer in enumerate(self.mqa):
                qn, qr, kn, kr = self.absorbed_inputs(T)
                if split:
                    out = layer.forward(qn, kn, kn, fb, q_rope=qr, k_rope=kr)
                else:
                    out = layer.forward(torch.cat([qn, qr], -1), torch.cat([kn, kr], -1), kn, fb)
                assert out.shape == (T, H * R) and out.dtype == self.dtype
                ref = self.absorbed_reference(fb, i, qn, qr, kn, kr)
                err = (out.double().view(T, H, R) - ref).abs().max().item()
                assert err < TOL[self.dtype] * max(1.0, ref.abs().max().item()), f"layer {i}: max error {err}"

    def absorbed_reference(self, fb: ForwardBatch, layer: int, qn: torch.Tensor, qr: torch.Tensor,
                           kn: torch.Tensor, kr: torch.Tensor) -> torch.Tensor:
        """float64 absorbed MLA: score = (q_nope . c + q_pe . k_pe) * scale over
        each request's latent rows c | k_pe (causal), output softmax . c."""
        row = torch.cat([kn, kr], -1)[:, 0].to(self.dtype).double()  # what the pool keeps
        qn64, qr64 = qn.double(), qr.double()
        out = torch.empty(qn.shape[0], H, R, dtype=torch.float64)
        o = 0
        for rid, n in fb._items:  # type: ignore[attr-defined]
            self.lat[rid][layer] = torch.cat([self.lat[rid][layer], row[o:o + n]])
            C = self.lat[rid][layer]
            L = C.shape[0]
            s = (torch.einsum("qhr,kr->hqk", qn64[o:o + n], C[:, :R]) +
                 torch.einsum("qhp,kp->hqk", qr64[o:o + n], C[:, R:])) * SCALE
            s.masked_fill_(torch.arange(L).view(1, -1) > torch.arange(L - n, L).view(-1, 1), -math.inf)
            out[o:o + n] = torch.einsum("hqk,kr->qhr", s.softmax(-1), C[:, :R])
            o += n
        return out

    # ------------------------------------------------------- MHA prefill layer
    def run_mha_prefill(self, fb: ForwardBatch) -> None:
        """DeepSeek's forward_normal: the model saves the latent row itself
        (set_kv_buffer with the MHA layer), expands K/V per head, and calls
        the MHA layer with save_kv_cache False."""
        self.backend.init_forward_metadata(fb)
        T = int(fb.out_cache_loc.shape[0])
        with forward_context(ForwardContext(self.backend)):
            for i, layer in enumerate(self.mha):
                latent = self.randn(T, 1, R + P)
                self.pool.set_kv_buffer(layer, fb.out_cache_loc, latent, None)
                c, kr = latent[:, 0, :R].double(), latent[:, 0, R:].double()
                k_nope = torch.einsum("tr,hrd->thd", c, self.w_uk[i])
                v = torch.einsum("tr,hrd->thd", c, self.w_uv[i]).to(self.dtype)
                k = torch.cat([k_nope, kr.unsqueeze(1).expand(T, H, P)], -1).to(self.dtype)
                q = self.randn(T, H, NOPE + P)
                out = layer.forward(q, k, v, fb, save_kv_cache=False)
                assert out.shape == (T, H * VD)
                ref = torch.empty(T, H, VD, dtype=torch.float64)
                o = 0
                for rid, n in fb._items:  # type: ignore[attr-defined]
                    self.lat[rid][i] = torch.cat([self.lat[rid][i], latent[o:o + n, 0].double()])
                    s = torch.einsum("qhd,khd->hqk", q[o:o + n].double(), k[o:o + n].double()) * SCALE
                    s.masked_fill_(torch.arange(n).view(1, -1) > torch.arange(n).view(-1, 1), -math.inf)
                    ref[o:o + n] = torch.einsum("hqk,khd->qhd", s.softmax(-1), v[o:o + n].double())
                    o += n
                err = (out.double().view(T, H, VD) - ref).abs().max().item()
                assert err < TOL[self.dtype] * max(1.0, ref.abs().max().item()), f"layer {i}: max error {err}"

    def check_pool(self) -> None:
        for rid, slots in self.slots.items():
            for i in range(LAYERS):
                kept = self.pool.get_key_buffer(i)[torch.tensor(slots)][:, 0]
                assert torch.equal(kept.double(), self.lat[rid][i]), f"request {rid} layer {i}: pool rows differ"
                assert torch.equal(self.pool.get_value_buffer(i)[torch.tensor(slots)][:, 0].double(),
                                   self.lat[rid][i][:, :R])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("split", [True, False], ids=["split", "joined"])
def test_absorbed_mla_prefill_extend_decode(dtype, page_size, split):
    eng = MlaEngine(dtype, page_size=page_size)
    assert eng.backend.stack == ["cpu_ref"]
    a, b = eng.add(), eng.add()
    eng.run_absorbed(eng.extend([(a, 5), (b, 19)]), split)        # prefill: no prefix
    eng.check_pool()
    c = eng.add()
    eng.run_absorbed(eng.extend([(a, 7), (b, 3), (c, 4)]), split)  # over a prefix (c new)
    eng.check_pool()
    for _ in range(3):
        eng.run_absorbed(eng.decode([a, b, c]), split)
    eng.check_pool()
    # the two forms mixed in one batch's layers, and the other form after this one
    eng.run_absorbed(eng.decode([c, a]), not split)
    eng.check_pool()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("page_size", [1, 16])
def test_mha_prefill_then_absorbed_decode(dtype, page_size):
    """The MHA prefill layer (no prefix) runs as ragged attention over the
    given K/V; the latent rows the model saved serve the absorbed decode."""
    eng = MlaEngine(dtype, page_size=page_size, seed=3)
    a, b = eng.add(), eng.add()
    eng.run_mha_prefill(eng.extend([(a, 9), (b, 17)]))
    eng.check_pool()
    eng.run_absorbed(eng.extend([(a, 4), (b, 2)]), True)
    eng.run_absorbed(eng.decode([a, b]), True)
    eng.check_pool()


def test_the_model_loads_as_mla_and_the_pool_is_the_layer_cache():
    eng = MlaEngine(torch.float32)
    m = eng.backend.model
    assert int(m.is_mla) and (int(m.kv_lora_rank), int(m.qk_rope_head_dim)) == (R, P)
    assert (int(m.num_kv_heads), int(m.head_dim_qk), int(m.head_dim_v)) == (1, R + P, R)
    a = eng.add()
    eng.run_absorbed(eng.extend([(a, 3)]), True)
    L = eng.backend._layers[0]
    assert L.struct.v_cache is None
    assert L.struct.k_cache == L._pools[0].addr and L._pools[0].owner is eng.pool.get_key_buffer(0)


# ------------------------------------------------------------------ DSA
DSA = dict(architectures=["DeepseekV32ForCausalLM"], model_type="deepseek_v32", index_topk=6, index_n_heads=4,
           index_head_dim=128)


def _topk(eng: MlaEngine, fb: ForwardBatch, k: int) -> Tuple[torch.Tensor, List[List[int]]]:
    """Per new token: up to k of its request's positions at or before its own
    (random, the last one always), as pool slots, -1 padded."""
    rows, picks = [], []
    for rid, n in fb._items:  # type: ignore[attr-defined]
        slots = eng.slots[rid]
        for pos in range(len(slots) - n, len(slots)):
            perm = torch.randperm(pos, generator=eng.gen)[:k - 1].tolist() + [pos]
            picks.append(perm)
            rows.append([slots[p] for p in perm] + [-1] * (k - len(perm)))
    return torch.tensor(rows, dtype=torch.int32), picks


@pytest.mark.parametrize("page_size", [1, 16])
def test_dsa_topk_indices_on_the_absorbed_layer(page_size):
    """DeepSeek-V3.2 shaped: topk_indices reach cpu_ref's sparse MLA; each
    token attends over the slots it names only (float64 reference over the
    shadow rows at those positions).  cpu_ref's sparse MLA takes q and k
    joined; the split form is refused by the plugin, naming it."""
    eng = MlaEngine(torch.float32, page_size=page_size, seed=5, **DSA)
    assert int(eng.backend.model.index_topk) == 6 and "sparse_mla" in eng.backend.backend.dsa_ops
    a, b = eng.add(), eng.add()
    eng.run_absorbed(eng.extend([(a, 9), (b, 4)]), False)  # dense: no indices passed
    for make in (lambda: eng.extend([(a, 5), (b, 8)]), lambda: eng.decode([a, b])):
        fb = make()
        eng.backend.init_forward_metadata(fb)
        T = int(fb.out_cache_loc.shape[0])
        idx, picks = _topk(eng, fb, 6)
        with forward_context(ForwardContext(eng.backend)):
            for i, layer in enumerate(eng.mqa):
                qn, qr, kn, kr = eng.absorbed_inputs(T)
                if i == 0:
                    with pytest.raises(sglattn.Error, match=r"q_rope / k_rope"):
                        layer.forward(qn, kn, kn, fb, save_kv_cache=False, q_rope=qr, k_rope=kr, topk_indices=idx)
                out = layer.forward(torch.cat([qn, qr], -1), torch.cat([kn, kr], -1), kn, fb, topk_indices=idx)
                eng.absorbed_reference(fb, i, qn, qr, kn, kr)  # appends the rows to the shadow
                ref = torch.empty(T, H, R, dtype=torch.float64)
                t = 0
                for rid, n in fb._items:  # type: ignore[attr-defined]
                    C = eng.lat[rid][i]
                    for _ in range(n):
                        sel = C[torch.tensor(picks[t])]
                        s = (qn[t].double() @ sel[:, :R].T + qr[t].double() @ sel[:, R:].T) * SCALE
                        ref[t] = s.softmax(-1) @ sel[:, :R]
                        t += 1
                assert (out.double().view(T, H, R) - ref).abs().max() < 2e-5
        eng.check_pool()
    # indices hold for the call that passed them only: the next call is dense again
    eng.run_absorbed(eng.decode([a]), False)


# ---------------------------------------------------------------- refusals
def _engine_with_prefix():
    eng = MlaEngine(torch.float32)
    a = eng.add()
    eng.run_absorbed(eng.extend([(a, 4)]), True)
    fb = eng.extend([(a, 3)])
    eng.backend.init_forward_metadata(fb)
    return eng, fb


def test_mha_prefill_layer_over_a_prefix_is_refused():
    eng, fb = _engine_with_prefix()
    q, k, v = torch.zeros(3, H, NOPE + P), torch.zeros(3, H, NOPE + P), torch.zeros(3, H, VD)
    with pytest.raises(NotImplementedError, match=r"MLA layer 0's MHA prefill call .* cached prefix"):
        eng.backend.forward_extend(q, k, v, eng.mha[0], fb, save_kv_cache=False)


def test_mha_prefill_layer_saving_is_refused():
    eng = MlaEngine(torch.float32)
    fb = eng.extend([(eng.add(), 3)])
    eng.backend.init_forward_metadata(fb)
    q, k, v = torch.zeros(3, H, NOPE + P), torch.zeros(3, H, NOPE + P), torch.zeros(3, H, VD)
    with pytest.raises(NotImplementedError, match=r"with save_kv_cache: the pool holds the latent row"):
        eng.backend.forward_extend(q, k, v, eng.mha[0], fb, save_kv_cache=True)


def test_lse_on_the_absorbed_layer_and_half_a_split_are_refused():
    eng, fb = _engine_with_prefix()
    qn, qr, kn, kr = eng.absorbed_inputs(3)
    with pytest.raises(NotImplementedError, match=r"q_rope without k_rope"):
        eng.backend.forward_extend(qn, kn, kn, eng.mqa[0], fb, q_rope=qr)
    fb.mha_return_lse = True
    with pytest.raises(NotImplementedError, match=r"mha_return_lse .* on MLA's absorbed layer"):
        eng.backend.forward_extend(qn, kn, kn, eng.mqa[0], fb, q_rope=qr, k_rope=kr)


def test_a_layer_of_neither_shape_is_refused():
    eng, fb = _engine_with_prefix()
    odd = RadixAttention(H, R, SCALE, 1, 0, v_head_dim=R)
    with pytest.raises(NotImplementedError, match=r"MLA layer 0: 1 KV head, qk_head_dim 64"):
        eng.backend.forward_extend(torch.zeros(3, H, R), torch.zeros(3, 1, R), torch.zeros(3, 1, R), odd, fb)


def test_use_mla_backend_must_match_the_config():
    eng = MlaEngine(torch.float32)
    eng.runner.use_mla_backend = False
    with pytest.raises(NotImplementedError, match=r"use_mla_backend is False but the model config is MLA"):
        ss.SglAttnBackend(eng.runner, backend="cpu_ref")


def test_rope_parts_on_a_model_that_is_not_mla_are_refused():
    from sgl_driver import Engine
    eng = Engine(lambda r: ss.SglAttnBackend(r, backend="cpu_ref"), layers=1, hq=4, hkv=2, d=64,
                 dtype=torch.float32)
    a = eng.add()
    fb = eng.extend_batch([(a, 2)])
    eng.metadata(fb)
    q, k, v = eng.qkv(2)
    with pytest.raises(NotImplementedError, match=r"sglattn: q_rope \(MLA's split rope part of q, passed to a "
                                                  r"model that is not MLA"):
        eng.backend.forward_extend(q, k.view(2, 2, 64), v.view(2, 2, 64), eng.layers[0], fb,
                                   q_rope=torch.zeros(2, 4, 16))
    assert isinstance(eng.backend, sglattn.sglang.SglAttnBackend)


@pytest.mark.parametrize("split", [True, False], ids=["split", "joined"])
def test_absorbed_layer_without_save_leaves_the_pool(split):
    """save_kv_cache False: the same call again gives the same output over
    the rows the first call saved, and the pool is left as it was."""
    eng = MlaEngine(torch.float32, seed=7)
    a = eng.add()
    fb = eng.extend([(a, 6)])
    eng.backend.init_forward_metadata(fb)
    qn, qr, kn, kr = eng.absorbed_inputs(6)
    layer = eng.mqa[0]
    with forward_context(ForwardContext(eng.backend)):
        if split:
            first = layer.forward(qn, kn, kn, fb, q_rope=qr, k_rope=kr)
            was = eng.pool.get_key_buffer(0).clone()
            again = layer.forward(qn, kn * 2, kn * 2, fb, save_kv_cache=False, q_rope=qr, k_rope=kr * 2)
        else:
            first = layer.forward(torch.cat([qn, qr], -1), torch.cat([kn, kr], -1), kn, fb)
            was = eng.pool.get_key_buffer(0).clone()
            again = layer.forward(torch.cat([qn, qr], -1), torch.cat([kn, kr], -1) * 2, kn * 2, fb,
                                  save_kv_cache=False)
    assert torch.equal(eng.pool.get_key_buffer(0), was)
    assert torch.equal(first, again)
