"""bench/cuda/dsa_indexer_torch.py - DSA's indexer (indexer_topk: the new
index key saved, the scores of every cached token, the top-k as pool slots)
through the Python package beside plain PyTorch in the same process
(bench/gpu/dsa_indexer.sh runs it on the H200).

For each shape: a DeepSeek-V3.2-shaped model (64 index heads of 128 dims,
index_topk 2048), `bs` requests of `ctx` cached tokens (pages of 64 shuffled
over the pool), one new token each (decode), an fp8 e4m3 index-key cache of
random codes with per-slot fp32 scales, bf16 index queries, fp32 head
weights.  The plugin's selection is checked on sampled tokens against
float64 scores of the same cache (the harness's rule: the right count, and no
selected score below the k-th best by more than 2e-3 of the row's largest
sum of |terms|), then timed with CUDA events over many calls.  The anchor is
the plain torch path of the same scoring: gather the request's keys by
req_to_token, dequantise (fp8 -> bf16), einsum over the dims for every head,
ReLU, times the head weights, sum over heads, times the slot's scale,
torch.topk, gather the slots.

FLOPs: 2 * tokens * ctx * index_heads * index_head_dim (the scores' matmul);
bytes: tokens * ctx * (index_head_dim + 4) (the keys and scales read once).

  python3 bench/cuda/dsa_indexer_torch.py OUT.json [--plugin cuda_mla] [--small] [--device cpu]
"""
from __future__ import annotations

import ctypes as C
import sys

import torch

import sglattn
from sglattn._tensor import describe

from dsa_torch import bench_args, run_shapes  # this folder: the command line, the shape loop
from torch_timing import timed

IH, ID, TOPK = 64, 128, 2048
FP8_CODE = 10  # DLPack kDLFloat8_e4m3fn


class IndexerArgs(C.Structure):
    """sgl_attn_indexer_args (abi/sgl_attn_abi.h, ABI 1.2 DSA block)."""
    _fields_ = [("struct_size", C.c_uint32), ("layer_id", C.c_int32), ("topk", C.c_int32),
                ("save_index_k", C.c_int32), ("scale_pow2", C.c_int32), ("reserved_", C.c_int32),
                ("batch", C.c_void_p), ("q", C.c_void_p), ("weights", C.c_void_p), ("k", C.c_void_p),
                ("index_k_cache", C.c_void_p), ("index_k_scale", C.c_void_p), ("topk_indices", C.c_void_p)]


def ds32(topk: int) -> dict:
    return {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "num_hidden_layers": 1,
            "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": topk, "index_n_heads": IH,
            "index_head_dim": ID, "torch_dtype": "bfloat16", "hidden_size": 7168}


def e4m3_table() -> torch.Tensor:
    """The 256 e4m3 ("fn") values by code, from the format (0x7f / 0xff NaN)."""
    v = []
    for c in range(256):
        e, m = (c >> 3) & 15, c & 7
        x = float("nan") if (c & 0x7f) == 0x7f else (m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7))
        v.append(-x if c & 0x80 else x)
    return torch.tensor(v, dtype=torch.float64)


def dequant(k8: torch.Tensor, lut: torch.Tensor) -> torch.Tensor:
    """uint8 e4m3 codes -> bf16 (exact)."""
    f8 = getattr(torch, "float8_e4m3fn", None)
    if f8 is not None and k8.is_cuda:
        return k8.view(f8).to(torch.bfloat16)
    return lut.to(k8.device, torch.bfloat16)[k8.long()]


def torch_indexer(q, w, kc, ks, slots, topk, lut):
    """Plain torch, decode (every token sees its request's whole row): the
    selected pool slots [T, min(topk, n)]."""
    kf = dequant(kc[slots], lut)                                   # [T, n, D]
    s = torch.einsum("thd,tnd->thn", q, kf).float()                # [T, H, n]
    s = (s.relu() * w[:, :, None]).sum(1) * ks[slots, 0]           # [T, n]
    top = s.topk(min(topk, slots.shape[1]), dim=-1).indices
    return torch.gather(slots, 1, top)


def check_rows(out, q, w, kc, ks, slots, topk, lut, ts):
    """The harness's rule on sampled tokens, from float64 scores; returns
    (ok, first problem)."""
    for t in ts:
        sl = slots[t].long()
        kf = lut.to(kc.device)[kc[sl].long()]                       # [n, D] float64
        dots = torch.einsum("hd,nd->hn", q[t].double(), kf) * ks[sl, 0].double()[None, :]
        mags = torch.einsum("hd,nd->hn", q[t].double().abs(), kf.abs()) * ks[sl, 0].double()[None, :]
        wt = w[t].double()[:, None]
        score = (wt * dots.clamp(min=0)).sum(0)
        tol = 2e-3 * float((wt.abs() * mags).sum(0).max())
        n = sl.numel()
        want = min(topk, n)
        kth = float(score.topk(want).values[-1])
        row = out[t]
        valid = row[row >= 0].long()
        if valid.numel() != want or int((row < 0).sum()) != topk - want:
            return False, f"token {t}: {valid.numel()} valid entries; expected {want}"
        pos_of = {int(s): i for i, s in enumerate(sl.tolist())}
        pos = [pos_of.get(int(v), -1) for v in valid.tolist()]
        if min(pos) < 0 or len(set(pos)) != len(pos):
            return False, f"token {t}: an entry is not a distinct slot of its request"
        sel = score[torch.tensor(pos, device=score.device)]
        if float(sel.min()) < kth - tol:
            return False, f"token {t}: keeps a score {float(sel.min()):.6g} below the k-th best {kth:.6g} - {tol:.3g}"
    return True, ""


def run_shape(host, plugin, name, bs, ctx, topk, dev, g, lut):
    page = 64
    pages = (ctx + page - 1) // page
    nslots = bs * pages * page + page
    perm = torch.randperm(bs * pages, generator=g) + 1  # page 0 unused
    r2t = torch.zeros(bs, pages * page, dtype=torch.int32)
    for b in range(bs):
        pg = perm[b * pages:(b + 1) * pages]
        r2t[b] = (pg[:, None] * page + torch.arange(page)[None, :]).reshape(-1).int()
    r2t = r2t.to(dev)
    T = bs
    codes = torch.randint(0, 256, (nslots, ID), generator=g, dtype=torch.uint8)
    codes[(codes & 0x7f) == 0x7f] ^= 1  # no NaN codes
    kc = codes.to(dev)
    ks = (2.0 ** -7 * (0.5 + 1.5 * torch.rand(nslots, 1, generator=g))).float().to(dev)
    q = torch.randn(T, IH, ID, generator=g).bfloat16().to(dev)
    w = (torch.randn(T, IH, generator=g) * IH ** -0.5).float().to(dev)
    k = torch.randn(T, ID, generator=g).bfloat16().to(dev)
    out = torch.full((T, topk), -7, dtype=torch.int32, device=dev)
    be = host.create_stack([plugin], ds32(topk), max_reqs=bs, max_tokens=max(T, bs), max_context=ctx)
    seq = [ctx] * bs
    it = lambda x: torch.tensor(x, dtype=torch.int32, device=dev)  # noqa: E731
    ocl = r2t[:, ctx - 1].contiguous()  # each new token's slot: its own (the last) position
    batch = sglattn.Batch("decode", r2t, it(list(range(bs))), it(seq), ocl, page_size=page, seq_lens_cpu=seq)
    be.init_forward_metadata(batch)
    refs = {nm: describe(t) for nm, t in (("q", q), ("w", w), ("k", k), ("kc", kc), ("ks", ks), ("out", out))}
    refs["kc"].dl.dtype.code, refs["kc"].dl.dtype.bits = FP8_CODE, 8
    a = IndexerArgs(struct_size=C.sizeof(IndexerArgs), layer_id=0, topk=topk, save_index_k=1, scale_pow2=0,
                    batch=batch.addr, q=refs["q"].addr, weights=refs["w"].addr, k=refs["k"].addr,
                    index_k_cache=refs["kc"].addr, index_k_scale=refs["ks"].addr, topk_indices=refs["out"].addr)
    op = be._op("indexer_topk")

    def call():
        rc = op(be._ptr, C.addressof(a))
        if rc:
            raise be._error(rc, "indexer_topk")

    call()
    if dev != "cpu":
        torch.cuda.synchronize()
    slots = r2t[:, :ctx].long()
    ts = sorted(set(t for t in (0, 1, T // 2, T - 1) if t < T))
    ok, why = check_rows(out, q, w, kc, ks, slots, topk, lut, ts)
    t_ours = timed(call, dev)
    tsel = torch_indexer(q, w, kc, ks, slots, topk, lut)
    t_torch = timed(lambda: torch_indexer(q, w, kc, ks, slots, topk, lut), dev)
    agree = []
    for t in ts:
        mine = set(out[t][out[t] >= 0].tolist())
        theirs = set(tsel[t].tolist())
        agree.append(len(mine & theirs) / max(len(theirs), 1))
    be.close()
    flops = 2.0 * T * ctx * IH * ID
    nbytes = float(T) * ctx * (ID + 4)
    r = {"name": name, "bs": bs, "tokens": T, "ctx": ctx, "index_heads": IH, "index_head_dim": ID, "topk": topk,
         "flops": flops, "bytes": nbytes, "ours_s": t_ours, "torch_s": t_torch, "ours_tflops": flops / t_ours / 1e12,
         "torch_tflops": flops / t_torch / 1e12, "ours_gbs": nbytes / t_ours / 1e9,
         "speedup_vs_torch": t_torch / t_ours, "set_agreement_with_torch": min(agree), "ok": ok, "why": why}
    print(f"{name:26s} {'ok  ' if ok else 'FAIL'} ours {t_ours * 1e6:9.1f} us {r['ours_tflops']:6.1f} TFLOP/s "
          f"{r['ours_gbs']:7.0f} GB/s   torch {t_torch * 1e6:9.1f} us {r['torch_tflops']:6.1f} TFLOP/s   "
          f"x{r['speedup_vs_torch']:.2f}  same set as torch {min(agree):.4f} {why}", flush=True)
    return r


def main() -> int:
    a = bench_args()
    dev = a.device
    g = torch.Generator().manual_seed(21)
    lut = e4m3_table()
    host = sglattn.Host()
    if a.small:
        shapes = [("decode_b2_ctx300_k64", 2, 300, 64), ("decode_b3_ctx100_k128", 3, 100, 128)]
    else:
        # (name, bs, ctx, topk): the B 64 at 32k first
        shapes = [("decode_b64_ctx32k_k2048", 64, 32768, TOPK), ("decode_b1_ctx32k_k2048", 1, 32768, TOPK),
                  ("decode_b128_ctx16k_k2048", 128, 16384, TOPK), ("decode_b64_ctx4k_k2048", 64, 4096, TOPK),
                  ("decode_b64_ctx2k_k2048", 64, 2000, TOPK)]
    rc, rows = run_shapes(a, shapes, lambda s: run_shape(host, a.plugin, *s, dev, g, lut), 26,
                          flops="2 * tokens * ctx * index_heads * index_head_dim (the scores' matmul)",
                          torch="gather + fp8->bf16 + einsum + relu + weights + sum + scale + torch.topk, same process")
    d = [r for r in rows if r.get("name", "").startswith("decode_b64_ctx32k")]
    if d and "ours_s" in d[0]:
        print(f"issue 21: indexer + top-k, B 64 at 32k cached tokens (64 heads x 128, topk 2048): "
              f"{d[0]['ours_s'] * 1e6:.1f} us, torch {d[0]['torch_s'] * 1e6:.1f} us, x{d[0]['speedup_vs_torch']:.2f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
