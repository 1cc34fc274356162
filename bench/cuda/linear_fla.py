"""flash-linear-attention (FLA) as issue 22's same-call anchor: its Triton chunked GDN
(`chunk_gated_delta_rule`) and KDA (`chunk_kda`) on the prefill shapes of bench_lin BENCH_SET=prefill,
in the call that times ours (bench/gpu/linear_prefill.sh).

FLA is never part of this tree: its source comes to the GPU machine as an untracked archive,
`.carry/fla-src.tgz` (bench/gpu/pack_build.sh with FLA_SRC and EINOPS_SRC set), unpacked by
linear_prefill.sh into a scratch folder named by FLA_PATH, which this script puts first on sys.path.
The archive's COMMIT file names the FLA and einops commits; they go into the JSON.

What is timed is what sglang's GDN prefill calls per layer after its causal conv: one call over the
batch as one varlen sequence (cu_seqlens), bf16 q / k / v, fp32 gates and beta, l2norm of q and k in the
kernel, an fp32 initial state per request and the final state out.  Ours also runs the conv, SiLU and
gates inside the timed forward, so the ratio leans in FLA's favour by that much.
FLOPs: 4 T HV K V (FlashInfer's count, as bench_lin).
Before timing, each kernel runs a small varlen case against a float64 token-by-token recurrence
written here; the NMSE goes into the JSON and a miss fails the script.
Triton autotunes every new shape (about a minute each on the H100), so the part needs ~8 minutes for all
seven shapes; FLA_SHAPES=i,j,... picks some (indices into SHAPES), and the JSON is written after each.
usage: FLA_PATH=dir [FLA_SHAPES=...] linear_fla.py OUT.json"""
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.environ.get("FLA_PATH", ""))
from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: E402  (FLA_PATH first)
from fla.ops.kda import chunk_kda  # noqa: E402

from linear_torch import run_start, timed_ms  # noqa: E402

DEV = "cuda"
K = V = 128
NMSE_LIMIT = 1e-3
# (kind, hk, hv, requests, tokens per request): bench_lin BENCH_SET=prefill's shapes (its JSON's T is
# the batch's tokens, B x T here, and so is this script's)
SHAPES = (("gdn", 2, 8, 1, 65536), ("gdn", 2, 8, 1, 32768), ("gdn", 2, 8, 16, 8192),
          ("gdn", 16, 32, 1, 32768), ("gdn", 16, 32, 8, 4096),
          ("kda", 8, 8, 1, 65536), ("kda", 8, 8, 16, 8192))


def inputs(kind, hk, hv, B, T, gen):
    """One varlen batch of B requests of T tokens: q, k [1, BT, hk, K], v [1, BT, hv, V] bf16; g fp32
    [1, BT, hv] (gdn) or [1, BT, hv, K] (kda), log decays; beta fp32 [1, BT, hv]; h0 fp32 [B, hv, K, V]."""
    n = B * T
    q = torch.randn(1, n, hk, K, device=DEV, generator=gen).bfloat16()
    k = torch.randn(1, n, hk, K, device=DEV, generator=gen).bfloat16()
    v = torch.randn(1, n, hv, V, device=DEV, generator=gen).bfloat16()
    gshape = (1, n, hv) if kind == "gdn" else (1, n, hv, K)
    g = -F.softplus(torch.randn(*gshape, device=DEV, generator=gen) - 3.0)
    beta = torch.sigmoid(torch.randn(1, n, hv, device=DEV, generator=gen))
    h0 = torch.randn(B, hv, K, V, device=DEV, generator=gen) * 0.1
    return q, k, v, g, beta, h0, lens_cu((T,) * B)


def lens_cu(lens):
    """cu_seqlens on the device and its host copy (FLA then plans its chunks without a device sync, as an
    engine that knows its batch does)"""
    cpu = torch.tensor([0, *lens], dtype=torch.long).cumsum(0)
    return cpu.to(DEV), cpu


def run(kind, q, k, v, g, beta, h0, cu):
    fn = chunk_gated_delta_rule if kind == "gdn" else chunk_kda
    return fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, use_qk_l2norm_in_kernel=True,
              cu_seqlens=cu[0], cu_seqlens_cpu=cu[1])


def reference(kind, q, k, v, g, beta, h0, cu):
    """Token by token in float64: S [hv, K, V]; S = diag(e^g) S (gdn: one scalar); u = beta (v - k^T S);
    S += k u^T; o = q^T S / sqrt(K), q and k l2-normalised, grouped value heads sharing a qk head."""
    hv, hk = v.shape[2], q.shape[2]
    rep = hv // hk
    d = torch.float64
    qn = F.normalize(q[0].to(d), dim=-1).repeat_interleave(rep, 1)
    kn = F.normalize(k[0].to(d), dim=-1).repeat_interleave(rep, 1)
    vv, gg, bb = v[0].to(d), g[0].to(d), beta[0].to(d)
    out = torch.empty_like(vv)
    hts = []
    cu = cu[1].tolist()
    for r in range(len(cu) - 1):
        S = h0[r].to(d).clone()
        for t in range(cu[r], cu[r + 1]):
            decay = torch.exp(gg[t])
            S = S * (decay[:, None, None] if kind == "gdn" else decay[:, :, None])
            u = bb[t][:, None] * (vv[t] - torch.einsum("hk,hkv->hv", kn[t], S))
            S = S + kn[t][:, :, None] * u[:, None, :]
            out[t] = torch.einsum("hk,hkv->hv", qn[t], S) / math.sqrt(K)
        hts.append(S)
    return out, torch.stack(hts)


def nmse(a, b):
    a, b = a.double(), b.double()
    return float(((a - b) ** 2).sum() / (b ** 2).sum().clamp_min(1e-300))


def self_check(kind, gen):
    """FLA against the float64 recurrence on 3 requests of 200, 64 and 131 tokens (chunk edges inside)."""
    hk, hv = (2, 4) if kind == "gdn" else (4, 4)
    lens = (200, 64, 131)
    q, k, v, g, beta, h0, _ = inputs(kind, hk, hv, 1, sum(lens), gen)
    h0 = h0.new_zeros(len(lens), hv, K, V).normal_(generator=gen) * 0.1
    cu = lens_cu(lens)
    o, ht = run(kind, q, k, v, g, beta, h0, cu)
    ro, rht = reference(kind, q, k, v, g, beta, h0, cu)
    return max(nmse(o[0], ro), nmse(ht, rht))


def main(out):
    gen, res = run_start("bench/cuda/linear_fla.py")
    try:
        with open(os.path.join(os.environ.get("FLA_PATH", ""), "COMMIT")) as f:
            fla_commit = f.read().strip()
    except OSError:
        fla_commit = "unknown"
    import triton
    res.update({"triton": triton.__version__, "fla": fla_commit, "prefill": []})
    bad = 0
    for kind in ("gdn", "kda"):
        e = self_check(kind, gen)
        res["self_check_nmse_" + kind] = e
        ok = e < NMSE_LIMIT
        bad += not ok
        print("self-check fla %s: NMSE %.3g against float64 (limit %g) %s" % (kind, e, NMSE_LIMIT,
              "ok" if ok else "FAIL"), flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    pick = os.environ.get("FLA_SHAPES")  # indices into SHAPES, comma separated (a part cut short goes on)
    for i, (kind, hk, hv, B, T) in enumerate(SHAPES):
        if pick and str(i) not in pick.split(","):
            continue
        t0 = time.time()
        args = inputs(kind, hk, hv, B, T, gen)
        ms = timed_ms(lambda: run(kind, *args), budget_ms=300.0)
        flops = 4.0 * B * T * hv * K * V
        row = {"kind": kind, "B": B, "T": B * T, "hv": hv, "hk": hk, "K": K, "V": V, "us": round(ms * 1e3, 2),
               "tflops_std": round(flops / (ms * 1e-3) / 1e12, 3)}
        res["prefill"].append(row)
        print("fla prefill", row, "[%.0f s with its autotuning]" % (time.time() - t0), flush=True)
        del args
        torch.cuda.empty_cache()
        with open(out, "w") as f:  # after every shape: a timeout keeps what was timed
            json.dump(res, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "fla_prefill.json"))
