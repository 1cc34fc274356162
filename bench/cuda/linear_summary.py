"""The linear wrappers' ratio table (bench/gpu/final_linear.sh): bench_lin's GDN decode and
chunked prefill (bench_default.json) against the plain PyTorch GDN of the same run
(torch_linear.json, bench/cuda/linear_torch.py), with the targets of issue 9.
`prefill` (bench/gpu/linear_prefill.sh): bench_lin BENCH_SET=prefill (bench_prefill.json: gdn, kda,
mamba2) against linear_torch.py TORCH_LIN_SET=prefill (torch_prefill.json), with issue 22's targets.
usage: linear_summary.py OUT_DIR [prefill]"""
import json
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
nan = float("nan")


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None




def prefill_table():
    """Every prefill case of bench_prefill.json beside the same-call torch row of its kind and shape."""
    ours = load("bench_prefill.json") or {"cases": []}
    torch = load("torch_prefill.json") or {"prefill": []}
    fla = load("fla_prefill.json") or {"prefill": []}
    print(f"== linear prefill (issue 22), bf16 activations  GPU {ours.get('gpu')}  commit {ours.get('commit')}")
    print("TFLOP/s = 4 T HV K V / t (FlashInfer's count; mamba2: HV = heads, K = state N, V = head dim P); "
          "chunked mm = the chunked algorithm's matmuls (docs/cuda_linear.md)")
    print(f"{'case':<46} {'ours us':>9} {'TFLOP/s':>8} {'chunked mm':>10} {'torch us':>10} {'ours/torch':>10} "
          f"{'speedup':>8} {'fla us':>9} {'fla/ours':>8}  target")
    tpre = {(r.get("kind", "gdn"), r.get("B", 1), r["T"], r["hv"]): r for r in torch.get("prefill", [])}
    fpre = {(r["kind"], r["B"], r["T"], r["hv"]): r for r in fla.get("prefill", [])}
    for c in ours["cases"]:
        if c["mode"] != "prefill":
            continue
        key = (c.get("kind", "gdn"), c["B"], c["T"], c["hv"])
        tus = tpre.get(key, {}).get("us") or nan
        fus = fpre.get(key, {}).get("us") or nan
        tgt = ok = ""
        if c.get("kind", "gdn") == "gdn" and c["hv"] == 8 and "state" not in c["case"]:
            if c["B"] == 1 and c["T"] == 65536:
                tgt, ok = "<= 450 us (goal 350)", "ok" if c["us"] <= 450 else "MISS"
            elif c["B"] == 16:
                tgt, ok = ">= 150 TFLOP/s", "ok" if c["tflops_std"] >= 150 else "MISS"
        print(f"{c['case']:<46} {c['us']:9.1f} {c['tflops_std']:8.1f} {c['tflops_chunked']:10.1f} {tus:10.1f} "
              f"{c['us'] / tus:10.3f} {tus / c['us']:7.1f}x {fus:9.1f} {fus / c['us']:8.3f}  {tgt} {ok}")
    print("anchors: FlashInfer SM90 0.399 ms at Qwen3.5 TP8 1x64k and 188 TFLOP/s at 16x8k (H100); "
          "FlashQLA 0.320 ms at 1x32k (H200)")
    print("torch rows: every shape (gdn 1 x 64k the single-sequence form, the other gdn shapes the batched one; "
          "the bf16-state case beside the same fp32-state torch row)")
    for k in ("self_check_nmse", "self_check_nmse_gdn_batch", "self_check_nmse_kda", "self_check_nmse_mamba2"):
        print(f"torch {k} (its chunked vs its recurrent form): {torch.get(k)}")
    if fla.get("prefill"):
        print(f"fla rows: flash-linear-attention {fla.get('fla')} (Triton {fla.get('triton')}), the same call; "
              f"fla/ours = its time over ours (above 1: ours is faster); its self-check against float64: "
              f"gdn {fla.get('self_check_nmse_gdn')}, kda {fla.get('self_check_nmse_kda')}")
    else:
        print("fla rows: none (no .carry/fla-src.tgz in this call, or linear_fla.py failed: fla_prefill.log)")


if sys.argv[2:3] == ["prefill"]:
    prefill_table()
    sys.exit(0)
ours = load("bench_default.json") or {"cases": []}
torch = load("torch_linear.json") or {"decode": [], "prefill": []}
print(f"== GDN decode, fp32 state (bytes = state read + written)  GPU {ours.get('gpu')}  commit {ours.get('commit')}")
print(f"{'shape':<34} {'ours us':>9} {'TB/s':>7} {'%peak':>6} {'torch us':>9} {'torch/ours':>10}  target")
tdec = {(r["B"], r["hv"]): r for r in torch.get("decode", [])}
for c in ours["cases"]:
    if c["mode"] != "decode" or c["variant"] != "fast" or c["state"] != "f32":
        continue
    t = tdec.get((c["B"], c["hv"]), {})
    ratio = t["us"] / c["us"] if t.get("us") else nan
    tgt = ">= 75%" if c["B"] >= 256 and c["hv"] == 32 else ""
    ok = "" if not tgt else ("ok" if c["frac_bw"] >= 0.75 else "MISS")
    print(f"{'B=%d hv%d/hk%d' % (c['B'], c['hv'], c['hk']):<34} {c['us']:9.1f} {c['tbps']:7.3f} "
          f"{100 * c['frac_bw']:5.1f}% {t.get('us', nan):9.1f} {ratio:9.1f}x  {tgt} {ok}")
print("anchor: vLLM fused recurrent 420 us at B=1024, TP2 (hv16/hk8) on an H200")
print("\n== GDN chunked prefill, Qwen3.5 TP8 (hv8/hk2, d128), bf16; TFLOP/s = 4 T HV K V / t (FlashInfer's count)")
print(f"{'case':<40} {'ours us':>9} {'TFLOP/s':>8} {'chunked mm':>10} {'torch us':>9} {'torch/ours':>10}")
tpre = {r["T"]: r for r in torch.get("prefill", []) if r.get("kind", "gdn") == "gdn" and r.get("B", 1) == 1}
for c in ours["cases"]:
    if c["mode"] != "prefill" or c.get("kind", "gdn") != "gdn":
        continue
    t = tpre.get(c["T"], {})
    ratio = t["us"] / c["us"] if t.get("us") else nan
    print(f"{'T=%d %s vt=%s' % (c['T'], c['variant'], c['vt']):<40} {c['us']:9.1f} {c['tflops_std']:8.1f} "
          f"{c['tflops_chunked']:10.1f} {t.get('us', nan):9.1f} {ratio:9.1f}x")
print("target >= 60 TFLOP/s at T=65536 (goal 90); anchor: FlashInfer SM90 86.1 on an H100")
print(f"torch self-check NMSE (its chunked vs its recurrent form): {torch.get('self_check_nmse')}")
