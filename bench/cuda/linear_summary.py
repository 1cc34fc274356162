"""The linear wrappers' ratio table (bench/gpu/final_linear.sh): bench_lin's GDN decode and
chunked prefill (bench_default.json) against the plain PyTorch GDN of the same run
(torch_linear.json, bench/cuda/linear_torch.py), with the targets of issue 9.
usage: linear_summary.py OUT_DIR"""
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
tpre = {r["T"]: r for r in torch.get("prefill", [])}
for c in ours["cases"]:
    if c["mode"] != "prefill":
        continue
    t = tpre.get(c["T"], {})
    ratio = t["us"] / c["us"] if t.get("us") else nan
    print(f"{'T=%d %s vt=%s' % (c['T'], c['variant'], c['vt']):<40} {c['us']:9.1f} {c['tflops_std']:8.1f} "
          f"{c['tflops_chunked']:10.1f} {t.get('us', nan):9.1f} {ratio:9.1f}x")
print("target >= 60 TFLOP/s at T=65536 (goal 90); anchor: FlashInfer SM90 86.1 on an H100")
print(f"torch self-check NMSE (its chunked vs its recurrent form): {torch.get('self_check_nmse')}")
