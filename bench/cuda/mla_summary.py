# bench/cuda/mla_summary.py - the ratio table of bench/gpu/mla.sh: cuda_mla's
# kernels against the PyTorch matmul path and issue 7's targets.
#   python3 bench/cuda/mla_summary.py mla_bench.json mla_torch.json
import json, sys

def load(p):
    try:
        return json.load(open(p))
    except Exception as e:  # noqa: BLE001
        print(f"(cannot read {p}: {e})")
        return {"cases": []}

ours, torch = load(sys.argv[1]), load(sys.argv[2])
tor = {c["case"]: c for c in torch.get("cases", []) if "tflops" in c}
rows = {}
for c in ours.get("cases", []):
    rows.setdefault(c["case"], {})[c["kernel"]] = c
print(f"{'case':44s} {'best':6s} {'us':>9s} {'TB/s':>6s} {'TF/s':>6s} {'torch TF':>8s} {'x torch':>7s}  target")
for case, ks in rows.items():
    best = max(ks.values(), key=lambda c: c["tflops"])
    hq = int(case.split("hq=")[1].split(",")[0]); sq = int(case.split(",q=")[1].split(",")[0])
    mem = hq * sq < 64
    t = tor.get(case)
    ratio = f"{best['tflops'] / t['tflops']:.2f}" if t else "-"
    if case.startswith("extend"):
        tgt = "-"
    elif mem:
        tgt = f"TB/s >= 3.2 (goal 3.8): {'MET' if best['tbps'] >= 3.2 else 'missed'}"
    else:
        tgt = f"TF >= 450 (goal 540): {'MET' if best['tflops'] >= 450 else 'missed'}"
    others = " ".join(f"{k}={v['tflops']:.0f}TF/{v['tbps']:.2f}TB" for k, v in sorted(ks.items()))
    print(f"{case:44s} {best['kernel']:6s} {best['median_us']:9.1f} {best['tbps']:6.2f} {best['tflops']:6.0f} "
          f"{(t['tflops'] if t else 0):8.0f} {ratio:>7s}  {tgt}   [{others}]")
