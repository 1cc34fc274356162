"""bench/cuda/dsa_torch.py - DSA sparse MLA through the Python package beside
plain PyTorch in the same process (bench/gpu/dsa.sh runs it on the H200).

For each shape: a DeepSeek-V3.2-shaped model (absorbed MLA 576 / 512, one
latent head) with `hq` heads, a bf16 pool of `ctx` tokens per request (pages
of 64 shuffled over the pool), and topk_indices rows of `topk` distinct slots
of the token's request (the row's own token always in it; `neg` adds -1
entries).  The plugin's forward (layer.set_topk, forward_decode /
forward_extend, no KV save) is checked against float64 on sampled rows, then
timed with CUDA events over many calls; the anchor is the plain torch path of
the same math: gather the rows by index, einsum Q K^T, mask -1, softmax in
fp32, einsum P V (in chunks of tokens where the gather would not fit).

FLOPs are FlashMLA's count: 2 * tokens * topk * hq * (576 + 512), the full
width of the index rows (-1 entries included); softmax not counted.

Shapes named *_rec run over FlashMLA's fp8 record pool instead (uint8
[slots, 1, 656]: 512 e4m3, 4 fp32 scales one per 128, 64 bf16 RoPE values;
SGL_ATTN_DSA_KV_FP8_RECORD), the bf16 pool quantised per block of 128
(amax floored at 1e-4, scale = amax / 448, the same rule the plugin's save
uses); float64 is taken over the dequantised record, and torch's side
gathers the records and dequantises them (e4m3 x scale to bf16) before the
same einsums.  A plugin that does not declare the record reports the shape
as "not supported" (rc stays 0).

  python3 bench/cuda/dsa_torch.py OUT.json [--plugin cuda_mla] [--small] [--device cpu]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch

import sglattn
from torch_timing import timed  # this folder

D_QK, D_V = 576, 512


def ds32(hq: int, topk: int) -> dict:
    return {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "num_hidden_layers": 1,
            "num_attention_heads": hq, "num_key_value_heads": hq, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": topk, "index_n_heads": 64,
            "index_head_dim": 128, "torch_dtype": "bfloat16", "hidden_size": 7168}


def stage(bs: int, ctx: int, q_per_req: int, topk: int, neg: float, dev: str, g: torch.Generator):
    """Pool slots, req_to_token, and one topk row per query token (the last
    q_per_req positions of each request)."""
    page = 64
    pages = (ctx + page - 1) // page
    slots = bs * pages * page + page
    perm = torch.randperm(bs * pages, generator=g) + 1  # page 0 unused
    r2t = torch.zeros(bs, pages * page, dtype=torch.int32)
    for b in range(bs):
        pg = perm[b * pages:(b + 1) * pages]
        r2t[b] = (pg[:, None] * page + torch.arange(page)[None, :]).reshape(-1).int()
    rows = torch.empty(bs * q_per_req, topk, dtype=torch.int32)
    for b in range(bs):
        for i in range(q_per_req):
            pos = ctx - q_per_req + i
            n = min(topk, pos + 1)
            sel = torch.randperm(pos, generator=g)[:n - 1]
            sel = torch.cat([sel, torch.tensor([pos])])
            row = torch.full((topk,), -1, dtype=torch.int32)
            row[:n] = r2t[b, sel]
            if neg > 0:
                drop = torch.rand(topk, generator=g) < neg
                row[drop] = -1
            rows[b * q_per_req + i] = row[torch.randperm(topk, generator=g)]
    return slots, r2t.to(dev), rows.to(dev)


REC = 656  # FlashMLA's fp8 record: 512 e4m3 + 4 fp32 scales + 64 bf16


def _e4m3_values(device):
    """The 256 e4m3fn codes' values (0x7f / 0xff NaN), for a torch without float8."""
    c = torch.arange(128)
    e, m = c >> 3, (c & 7).double()
    v = torch.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * torch.pow(2.0, (e - 7).double()))
    v[127] = float("nan")
    return torch.cat([v, -v]).float().to(device)


def _to_e4m3_bytes(y):
    """fp32 values within +-448 -> e4m3 codes (uint8), nearest, ties to the even code."""
    if hasattr(torch, "float8_e4m3fn"):
        return y.to(torch.float8_e4m3fn).view(torch.uint8)
    pos = _e4m3_values(y.device)[:127]  # codes 0..126, increasing
    a = y.abs().contiguous()
    hi = torch.searchsorted(pos, a).clamp(max=126)
    lo = (hi - 1).clamp(min=0)
    dl, dh = a - pos[lo], pos[hi] - a
    code = torch.where(dl < dh, lo, torch.where(dh < dl, hi, torch.where(lo % 2 == 0, lo, hi)))
    code = torch.where(pos[hi] == a, hi, code)
    return (code | torch.where(y < 0, 128, 0)).to(torch.uint8)


def _from_e4m3_bytes(b):
    if hasattr(torch, "float8_e4m3fn"):
        return b.contiguous().view(torch.float8_e4m3fn).float()
    return _e4m3_values(b.device)[b.long()]


def to_record(pool):
    """[slots, 1, 576] bf16 -> the fp8 record pool [slots, 1, 656] uint8."""
    x = pool[:, 0].float()
    lat = x[:, :D_V].reshape(-1, 4, 128)
    sc = lat.abs().amax(-1).clamp(min=1e-4) * (1.0 / 448.0)  # [slots, 4] fp32
    codes = _to_e4m3_bytes((lat / sc[..., None]).clamp(-448.0, 448.0)).reshape(-1, D_V)
    rec = torch.empty(pool.shape[0], REC, dtype=torch.uint8, device=pool.device)
    rec[:, :D_V] = codes
    rec[:, D_V:D_V + 16] = sc.contiguous().view(torch.uint8)
    rec[:, D_V + 16:] = pool[:, 0, D_V:].contiguous().view(torch.uint8)
    return rec[:, None, :]


def from_record(rec, dtype=torch.bfloat16):
    """Records [..., 656] uint8 -> their values [..., 576] in dtype."""
    lat = _from_e4m3_bytes(rec[..., :D_V])
    sc = rec[..., D_V:D_V + 16].contiguous().view(torch.float32)
    lat = (lat.unflatten(-1, (4, 128)) * sc[..., None]).flatten(-2)
    rope = rec[..., D_V + 16:].contiguous().view(torch.bfloat16).float()
    return torch.cat([lat, rope], -1).to(dtype)


def torch_sparse(q, pool, rows, scale, chunk):
    """Gather + einsum + fp32 softmax, in chunks of tokens (a record pool:
    the gathered records dequantised to q's dtype first)."""
    out = torch.empty(q.shape[0], q.shape[1], D_V, dtype=q.dtype, device=q.device)
    p2 = pool[:, 0]
    for t0 in range(0, q.shape[0], chunk):
        r = rows[t0:t0 + chunk]
        kv = p2[r.clamp(min=0).long()]  # [c, topk, 576] (a record pool: [c, topk, 656])
        if kv.dtype == torch.uint8:
            kv = from_record(kv, q.dtype)
        s = torch.einsum("thd,tkd->thk", q[t0:t0 + chunk], kv).float() * scale
        s = s.masked_fill((r < 0)[:, None, :], float("-inf"))
        p = torch.softmax(s, -1).nan_to_num(0.0).to(q.dtype)
        out[t0:t0 + chunk] = torch.einsum("thk,tkd->thd", p, kv[..., :D_V])
    return out


def ref64(q, pool, rows, scale, ts):
    """float64 of sampled tokens: [len(ts), hq, 512]."""
    res = []
    p2 = pool[:, 0].double()
    for t in ts:
        r = rows[t][rows[t] >= 0].long()
        if r.numel() == 0:
            res.append(torch.zeros(q.shape[1], D_V, dtype=torch.float64, device=q.device))
            continue
        kv = p2[r]
        s = torch.einsum("hd,kd->hk", q[t].double(), kv) * scale
        res.append(torch.einsum("hk,kd->hd", s.softmax(-1), kv[:, :D_V]))
    return torch.stack(res)


def bench_args() -> argparse.Namespace:
    """The command line of the DSA benches (this one and dsa_indexer_torch.py)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--plugin", default="cuda_mla")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny shapes (a dry run on cpu_ref)")
    return ap.parse_args()


def run_shapes(a: argparse.Namespace, shapes, run_one, width: int, **head) -> tuple[int, list]:
    """run_one(shape) on each shape (its name first); a shape that raises is
    reported and the next one runs.  After each shape the JSON (device, date,
    commit, plugin, `head`'s fields, the shapes so far) goes to a.out, so a
    cut run keeps what it timed.  Returns (rc, rows): rc 1 when a shape failed
    its check or raised."""
    res = {"device": torch.cuda.get_device_name(0) if a.device != "cpu" else "cpu",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": os.environ.get("SGL_ATTN_COMMIT", "unknown"), "plugin": a.plugin, **head, "shapes": []}
    rc = 0
    for shape in shapes:
        name = shape[0]
        try:
            r = run_one(shape)
            rc |= 0 if r["ok"] else 1
        except Exception as e:  # report and go on with the next shape
            print(f"{name:{width}s} ERROR {type(e).__name__}: {e}", flush=True)
            r = {"name": name, "error": f"{type(e).__name__}: {e}"}
            rc = 1
        res["shapes"].append(r)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return rc, res["shapes"]


def run_shape(host, plugin, name, mode, bs, q_per_req, ctx, hq, topk, neg, dev, chunk, g, rec=False):
    scale = 1.0 / (192 ** 0.5)
    slots, r2t, rows = stage(bs, ctx, q_per_req, topk, neg, dev, g)
    if neg > 0:
        rows[0] = -1  # a token with no valid slot writes zeros
    T = bs * q_per_req
    pool = (torch.randn(slots, 1, D_QK, generator=g) * 0.5).bfloat16().to(dev)
    q = (torch.randn(T, hq, D_QK, generator=g) * 0.5).bfloat16().to(dev)
    out = torch.empty(T, hq, D_V, dtype=torch.bfloat16, device=dev)
    be = host.create_stack([plugin], ds32(hq, topk), max_reqs=bs, max_tokens=max(T, bs), max_context=ctx)
    ref_pool = pool
    if rec:
        if "kv_fp8_record" not in be.dsa_ops:
            be.close()
            print(f"{name:28s} not supported ({plugin} does not declare kv_fp8_record)", flush=True)
            return {"name": name, "not_supported": True, "ok": True}
        pool = to_record(pool)
        ref_pool = from_record(pool[:, 0], torch.float64)[:, None, :]
    seq = [ctx] * bs
    it = lambda x: torch.tensor(x, dtype=torch.int32, device=dev)  # noqa: E731
    ocl = torch.cat([r2t[b, ctx - q_per_req:ctx] for b in range(bs)])
    if mode in ("decode", "verify"):
        batch = sglattn.Batch(mode, r2t, it(list(range(bs))), it(seq), ocl, page_size=64, seq_lens_cpu=seq,
                              tokens_per_req=q_per_req)
        fwd = be.forward_decode if mode == "decode" else be.forward_extend
    else:
        pre = [ctx - q_per_req] * bs
        new = [q_per_req] * bs
        batch = sglattn.Batch("extend", r2t, it(list(range(bs))), it(seq), ocl, page_size=64, seq_lens_cpu=seq,
                              extend_prefix_lens=it(pre), extend_seq_lens=it(new), extend_prefix_lens_cpu=pre,
                              extend_seq_lens_cpu=new)
        fwd = be.forward_extend
    be.init_forward_metadata(batch)
    layer = be.layer(0, pool, None, sm_scale=scale)
    layer.set_topk(rows)
    call = lambda: fwd(layer, q, None, None, out, save_kv_cache=False)  # noqa: E731
    call()
    if dev != "cpu":
        torch.cuda.synchronize()
    ts = sorted(set(t for t in (0, 1, T // 2, T - 1) if t < T))  # T may be 1 (B 1 decode)
    ref = ref64(q, ref_pool, rows, scale, ts)
    err = (out[ts].double() - ref)
    nmse = float((err ** 2).sum() / max(float((ref ** 2).sum()), 1e-30))
    zero_row_ok = bool(neg <= 0 or float(out[0].abs().max()) == 0.0)
    t_ours = timed(call, dev)
    tout = torch_sparse(q, pool, rows, scale, chunk)
    terr = (tout[ts].double() - ref)
    t_nmse = float((terr ** 2).sum() / max(float((ref ** 2).sum()), 1e-30))
    t_torch = timed(lambda: torch_sparse(q, pool, rows, scale, chunk), dev)
    be.close()
    flops = 2.0 * T * topk * hq * (D_QK + D_V)
    r = {"name": name, "mode": mode, "bs": bs, "tokens": T, "ctx": ctx, "hq": hq, "topk": topk, "neg": neg,
         "pool": "fp8 record (656 B a row)" if rec else "bf16 (1152 B a row)",
         "flops": flops, "ours_s": t_ours, "torch_s": t_torch, "ours_tflops": flops / t_ours / 1e12,
         "torch_tflops": flops / t_torch / 1e12, "speedup_vs_torch": t_torch / t_ours, "nmse": nmse,
         "torch_nmse": t_nmse, "zero_row_ok": zero_row_ok, "ok": nmse < 1e-4 and zero_row_ok}
    print(f"{name:28s} {'ok  ' if r['ok'] else 'FAIL'} nmse {nmse:.2e} (torch {t_nmse:.2e})  "
          f"ours {t_ours * 1e6:9.1f} us {r['ours_tflops']:7.1f} TFLOP/s   torch {t_torch * 1e6:9.1f} us "
          f"{r['torch_tflops']:7.1f} TFLOP/s   x{r['speedup_vs_torch']:.2f}", flush=True)
    return r


def main() -> int:
    a = bench_args()
    dev = a.device
    g = torch.Generator().manual_seed(21)
    host = sglattn.Host()
    if a.small:
        shapes = [("decode_b2_h16_k64", "decode", 2, 1, 300, 16, 64, 0.25, 8),
                  ("extend_b1_q8_h16_k32", "extend", 1, 8, 100, 16, 32, 0.0, 4),
                  ("verify_b2_q3_h16_k64_neg", "verify", 2, 3, 200, 16, 64, 0.2, 4),
                  ("decode_b2_h128_k128_neg", "decode", 2, 1, 300, 128, 128, 0.2, 8),
                  ("decode_b2_h16_k64_rec", "decode", 2, 1, 300, 16, 64, 0.25, 8)]
    else:
        # (name, mode, bs, tokens a request, ctx, hq, topk, neg, torch chunk)
        shapes = [("decode_b64_h128_k2048", "decode", 64, 1, 4096, 128, 2048, 0.0, 64),
                  ("decode_b128_h128_k2048", "decode", 128, 1, 4096, 128, 2048, 0.0, 64),
                  ("decode_b1_h128_k2048", "decode", 1, 1, 4096, 128, 2048, 0.0, 1),
                  ("verify_b32_q4_h128_k2048_neg", "verify", 32, 4, 4096, 128, 2048, 0.1, 64),
                  ("extend_b1_q4096_h128_k2048", "extend", 1, 4096, 8192, 128, 2048, 0.0, 128),
                  # FlashMLA's fp8 record pool (the *_rec shapes)
                  ("decode_b64_h128_k2048_rec", "decode", 64, 1, 4096, 128, 2048, 0.0, 64),
                  ("verify_b32_q4_h128_k2048_neg_rec", "verify", 32, 4, 4096, 128, 2048, 0.1, 64),
                  ("extend_b1_q4096_h128_k2048_rec", "extend", 1, 4096, 8192, 128, 2048, 0.0, 128)]
    def one(s):  # (name, mode, bs, q_per_req, ctx, hq, topk, neg, chunk)
        return run_shape(host, a.plugin, *s[:8], dev, s[8], g, rec=s[0].endswith("_rec"))

    rc, rows = run_shapes(a, shapes, one, 28, flops="2 * tokens * topk * hq * (576 + 512) (FlashMLA's count)")
    for suffix, what in (("_rec", "fp8 record pool"), ("", "bf16 pool")):
        d = [r for r in rows if r.get("name", "") == "decode_b64_h128_k2048" + suffix]
        if d and "ours_tflops" in d[0]:
            print(f"issue 21: sparse decode B 64, 128 heads, topk 2048, {what}: {d[0]['ours_tflops']:.1f} TFLOP/s "
                  f"(target >= 300), torch {d[0]['torch_tflops']:.1f}, ratio x{d[0]['speedup_vs_torch']:.2f}")
    d = [r for r in rows if r.get("name", "") == "extend_b1_q4096_h128_k2048"]
    if d and "ours_tflops" in d[0]:
        print(f"issue 21: sparse prefill 4096 tokens, 128 heads, topk 2048, bf16 pool: {d[0]['ours_tflops']:.1f} "
              f"TFLOP/s (target >= 450), torch {d[0]['torch_tflops']:.1f}, ratio x{d[0]['speedup_vs_torch']:.2f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
