"""bench/cuda/prefill_torch.py - PyTorch beside issue 23's prefills that the
record run does not time, in the same device call as ours.

  python3 bench/cuda/prefill_torch.py dims OUT.json [--small] [--device cpu]
  python3 bench/cuda/prefill_torch.py mla OUT.json [--small] [--device cpu]

dims (bench/gpu/prefill_dims.sh): SDPA flash and cuDNN on shapes.prefill_dims()
(head dims 64 / 128 / 256 at 2048 / d heads, causal and not, b x s = 16k
tokens, bf16, contiguous q / k / v [b, h, s, d]).

mla (bench/gpu/mla_extend.sh): absorbed MLA extend on shapes.mla_extend() (hq
heads over one latent head: q [b, hq, q, 576], the cached rows [b, 1, l, 576],
values their first 512 dims; the new tokens causal over the cached prefix, the
mask aligned bottom-right).  Three formulations, each timed where it runs:
  sdpa_<backend>   SDPA flash / cuDNN / efficient over the absorbed shapes
                   (one KV head shared by hq, enable_gqa) - most refuse 576;
  matmul           the plain torch path of bench/cuda/mla_torch.py made causal:
                   Q K^T in bf16, the mask, softmax in fp32, P V, over chunks of
                   query rows so the scores fit;
  expanded_cudnn   what an engine runs for MLA prefill instead: the latent
                   rows up-projected to per-head keys (128 no-RoPE dims + the
                   shared 64 RoPE dims: 192) and values (128), then cuDNN SDPA
                   (qk 192 / v 128, hq heads); expanded_cudnn_proj adds the
                   up-projection GEMM and the concatenation to the time.
Its output is the attention of the same model, not the same tensor (128-dim
values per head instead of the 512-dim latent, before W_uv): compare times.

Each row carries its time (us) and TFLOP/s in its own count: 2 * heads *
visible pairs * (dqk + dv), the causal pairs (s (s + 1) / 2 for a prefill)
or every pair; a backend that refuses a shape records its error.  Times: CUDA
events, the median of five batches (torch_timing.py; a slow call is its own batch).  On --device cpu (a dry
run, any torch) the shapes are tiny and SDPA may be missing: its rows record
that.  Writes JSON (GPU, date, commit, torch) to OUT after each shape.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys

import torch

from shapes import mla_extend, prefill_dims, prefill_dims_heads  # this folder
from torch_timing import timed

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
except ImportError:  # torch < 2.3: no backend selection; the SDPA rows say so
    BACKENDS = {}

D_QK, D_V, ROPE, NOPE, VHEAD = 576, 512, 64, 128, 128


def pairs(b: int, l: int, q: int, causal: bool) -> float:
    """Visible (query, key) pairs: new token i of q sees the l - q cached keys and i + 1 new ones."""
    return float(b) * (q * (l - q) + q * (q + 1) / 2 if causal else q * l)


def sdpa(backend: str, q, k, v, prefix: int, causal: bool, scale: float, gqa: bool = False):
    """SDPA pinned to one backend; a causal extend over a prefix uses the bottom-right mask."""
    if backend not in BACKENDS:
        raise RuntimeError("this torch has no torch.nn.attention (SDPA backend selection needs torch >= 2.3)")
    kw = {"enable_gqa": True} if gqa else {}
    if causal and prefix:
        kw["attn_mask"] = causal_lower_right(q.shape[-2], k.shape[-2])
    else:
        kw["is_causal"] = causal
    with sdpa_kernel(BACKENDS[backend]):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, **kw)


def rand(*shape: int, dev: str) -> torch.Tensor:
    """Normal bf16 values made on the device (the seed is torch.manual_seed's)."""
    return torch.randn(*shape, device=dev, dtype=torch.bfloat16)


def sampled(b: int, n: int):
    """The (request, new token) pairs the outputs are checked on: first, last, middle."""
    return sorted({(r, t) for r in {0, b - 1} for t in {0, n // 2, n - 1}})


def ref64(q, k, v, prefix: int, causal: bool, scale: float, at) -> torch.Tensor:
    """float64 attention of the sampled rows: q [b, h, n, dqk], k [b, hk, l, dqk], v [b, hk, l, dv]
    (hk 1 or h); new token t sees keys 0 .. prefix + t (causal) or all of them."""
    out = []
    for r, t in at:
        vis = prefix + t + 1 if causal else k.shape[2]
        kr, vr, qt = k[r, :, :vis].double(), v[r, :, :vis].double(), q[r, :, t].double()
        if kr.shape[0] == 1:  # one KV head shared by all: no copy per head
            out.append(torch.softmax(qt @ kr[0].T * scale, -1) @ vr[0])
        else:
            out.append(torch.einsum("hk,hkd->hd", torch.softmax(torch.einsum("hd,hkd->hk", qt, kr) * scale, -1), vr))
    return torch.stack(out)


def time_row(row: dict, name: str, fn, flops: float, dev: str, ref=None, at=()) -> None:
    """Times fn into row[name_us / name_tflops]; with ref (the float64 rows `at`), the output's
    normalised squared error there in row[name_nmse] first."""
    try:
        o = fn()  # refusals show here, before the timer
        if ref is not None:
            got = torch.stack([o[r, :, t] for r, t in at]).double()
            row[name + "_nmse"] = float(((got - ref) ** 2).sum() / (ref ** 2).sum().clamp_min(1e-30))
        del o
        t = timed(fn, dev, least=1)  # a call longer than 0.3 s (the matmul path at 16k): batches of one
        row[name + "_us"] = round(t * 1e6, 2)
        row[name + "_tflops"] = round(flops / t / 1e12, 3)
    except Exception as e:  # a backend that refuses the shape, or memory
        msg = str(e).strip()
        row[name + "_error"] = msg.splitlines()[0][:200] if msg else type(e).__name__
    if dev != "cpu":
        torch.cuda.empty_cache()


def dims_rows(small: bool, dev: str):
    for d, causal, b, s in prefill_dims(small):
        h = prefill_dims_heads(d, small)
        q, k, v = (rand(b, h, s, d, dev=dev) for _ in range(3))
        flops = 2.0 * h * pairs(b, s, s, bool(causal)) * (d + d)
        row = {"d": d, "causal": causal, "b": b, "s": s, "heads": h, "flops": flops}
        at = sampled(b, s)
        ref = ref64(q, k, v, 0, bool(causal), 1.0 / math.sqrt(d), at)
        for name in ("flash", "cudnn"):
            time_row(row, name, lambda: sdpa(name, q, k, v, 0, bool(causal), 1.0 / math.sqrt(d)), flops, dev, ref, at)
        del q, k, v
        yield row


def matmul_absorbed(q, kv, prefix: int, scale: float, budget: int):
    """q [b, hq, n, 576], kv [b, l, 576]: causal over the prefix, chunks of query rows whose fp32
    scores stay under `budget` bytes."""
    b, hq, n, _ = q.shape
    l = kv.shape[1]
    rows = max(1, budget // (4 * hq * l))
    cols = torch.arange(l, device=q.device)
    outs = []
    for r in range(b):
        kt, vr = kv[r].transpose(0, 1), kv[r, :, :D_V]
        parts = []
        for i in range(0, n, rows):
            qi = q[r, :, i:i + rows]
            s = torch.matmul(qi, kt).float() * scale
            hide = cols[None, :] > (prefix + i + torch.arange(qi.shape[1], device=q.device))[:, None]
            p = torch.softmax(s.masked_fill(hide, float("-inf")), -1).to(q.dtype)
            parts.append(torch.matmul(p, vr))
        outs.append(torch.cat(parts, 1))
    return torch.stack(outs)


def mla_rows(small: bool, dev: str):
    budget = (1 << 16) if small else (1 << 31)
    for hq, b, l, n in mla_extend(small):
        prefix = l - n
        scale = 1.0 / math.sqrt(NOPE + ROPE)
        q = rand(b, hq, n, D_QK, dev=dev)
        kv = rand(b, l, D_QK, dev=dev)
        vis = pairs(b, l, n, True)
        flops = 2.0 * hq * vis * (D_QK + D_V)  # FlashMLA's count, as attnctl bench's
        row = {"hq": hq, "b": b, "l": l, "q": n, "flops": flops}
        k1, v1 = kv[:, None], kv[:, None, :, :D_V]
        at = sampled(b, n)
        ref = ref64(q, k1, v1, prefix, True, scale, at)
        for name in BACKENDS or ("flash", "cudnn", "efficient"):
            time_row(row, "sdpa_" + name, lambda: sdpa(name, q, k1, v1, prefix, True, scale, gqa=True), flops, dev,
                     ref, at)
        time_row(row, "matmul", lambda: matmul_absorbed(q, kv, prefix, scale, budget), flops, dev, ref, at)
        del q, k1, v1
        # expanded: per-head keys (no-RoPE part up-projected from the latent, RoPE part shared) and values
        w_kv = rand(D_V, hq * (NOPE + VHEAD), dev=dev) / math.sqrt(D_V)
        qe = rand(b, hq, n, NOPE + ROPE, dev=dev)

        def expand():
            kvh = torch.matmul(kv[:, :, :D_V], w_kv).view(b, l, hq, NOPE + VHEAD)
            rope = kv[:, :, None, D_V:].expand(b, l, hq, ROPE)
            k = torch.cat([kvh[..., :NOPE], rope], -1).transpose(1, 2)
            v = kvh[..., NOPE:].transpose(1, 2)
            return k, v

        ke, ve = expand()
        e_flops = 2.0 * hq * vis * (NOPE + ROPE + VHEAD)
        proj = 2.0 * b * l * D_V * hq * (NOPE + VHEAD)
        row["expanded_flops"] = e_flops
        row["expanded_proj_flops"] = e_flops + proj
        ref = ref64(qe, ke, ve, prefix, True, scale, at)
        time_row(row, "expanded_cudnn", lambda: sdpa("cudnn", qe, ke, ve, prefix, True, scale), e_flops, dev, ref, at)
        time_row(row, "expanded_cudnn_proj", lambda: sdpa("cudnn", qe, *expand(), prefix, True, scale), e_flops + proj,
                 dev)
        del kv, w_kv, qe, ke, ve
        yield row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("dims", "mla"))
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny shapes (a dry run on the CPU)")
    a = ap.parse_args()
    dev = a.device
    torch.manual_seed(23)
    res = {"tool": "bench/cuda/prefill_torch.py " + a.part,
           "gpu": torch.cuda.get_device_name() if dev != "cpu" else "cpu", "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": os.environ.get("SGL_ATTN_COMMIT", "unknown"), "rows": []}
    for row in (dims_rows if a.part == "dims" else mla_rows)(a.small, dev):
        res["rows"].append(row)
        print(a.part, {k: v for k, v in row.items() if not k.endswith("flops")}, flush=True)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
