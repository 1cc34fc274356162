# bench/cuda/mla_summary.py - the tables bench/gpu/mla.sh prints last: every
# cuda_mla variant on issue 7's shapes against the PyTorch matmul path and the
# issue's targets, the winner of each class of shape, and a JSON summary.
#   python3 bench/cuda/mla_summary.py mla_bench.json mla_torch.json [summary.json] [gpu.txt]
import json
import math
import sys


def load(p):
    try:
        with open(p) as f:
            text = f.read()
    except OSError as e:
        print(f"(cannot read {p}: {e})")
        return {"cases": []}
    for tail in ("", "\n]}\n"):  # a bench killed by its timeout leaves the list open
        try:
            return json.loads(text + tail)
        except ValueError:
            pass
    print(f"(cannot parse {p})")
    return {"cases": []}


def gmean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


ours, torch = load(sys.argv[1]), load(sys.argv[2])
tor = {c["case"]: c for c in torch.get("cases", []) if "tflops" in c}
rows = {}
for c in ours.get("cases", []):
    rows.setdefault(c["case"], {})[c["kernel"]] = c

MEM_T, MEM_G, CMP_T, CMP_G, RATIO_T = 3.2, 3.8, 450.0, 540.0, 2.8
summary = {"gpu": ours.get("device", torch.get("gpu", "?")), "date": ours.get("date", "?"),
           "commit": ours.get("commit", "?"), "cases": [], "winners": {}}

print("== every variant (us / TB/s / TFLOP/s)")
for case, ks in rows.items():
    print(case)
    for k, v in sorted(ks.items(), key=lambda kv: kv[1]["median_us"]):
        print(f"    {k:16s} {v['median_us']:9.1f} us {v['tbps']:6.3f} TB/s {v['tflops']:7.1f} TF/s")

print()
print("== class winners (geometric mean over the class's shapes; a variant must have run every shape)")
for cls, key, unit in (("memory-bound", "tbps", "TB/s"), ("compute-bound", "tflops", "TF/s")):
    cases = [c for c, ks in rows.items() if any(v.get("memory_bound") == (cls == "memory-bound") for v in ks.values())]
    if not cases:
        continue
    variants = set.intersection(*(set(rows[c]) for c in cases))
    ranked = sorted(((gmean([rows[c][v][key] for c in cases]), v) for v in variants), reverse=True)
    for g, v in ranked:
        print(f"  {cls:14s} {v:16s} {g:8.3f} {unit}")
    if ranked:
        summary["winners"][cls] = {"variant": ranked[0][1], unit: round(ranked[0][0], 4),
                                   "auto": round(gmean([rows[c]["auto"][key] for c in cases]), 4) if "auto" in variants else None}

print()
print("== against the targets (best variant per shape; the torch ratio is TFLOP/s over TFLOP/s)")
print(f"{'case':44s} {'best':16s} {'us':>9s} {'TB/s':>6s} {'TF/s':>6s} {'torch TF':>8s} {'x torch':>7s}  target")
for case, ks in rows.items():
    best = min(ks.values(), key=lambda c: c["median_us"])
    mem = best.get("memory_bound", False)
    t = tor.get(case)
    ratio = best["tflops"] / t["tflops"] if t else 0.0
    if case.startswith("extend"):
        tgt = "-"
    elif mem:
        tgt = (f"TB/s >= {MEM_T} (goal {MEM_G}): "
               f"{'GOAL' if best['tbps'] >= MEM_G else 'MET' if best['tbps'] >= MEM_T else 'missed'}")
    else:
        tgt = (f"TF >= {CMP_T:.0f} (goal {CMP_G:.0f}), x{RATIO_T} torch: "
               f"{'GOAL' if best['tflops'] >= CMP_G else 'MET' if best['tflops'] >= CMP_T else 'missed'}"
               f"{'' if not t else ' / ratio ' + ('MET' if ratio >= RATIO_T else 'missed')}")
    print(f"{case:44s} {best['kernel']:16s} {best['median_us']:9.1f} {best['tbps']:6.2f} {best['tflops']:6.0f} "
          f"{(t['tflops'] if t else 0):8.0f} {(f'{ratio:.2f}' if t else '-'):>7s}  {tgt}")
    summary["cases"].append({"case": case, "best": best["kernel"], "median_us": best["median_us"],
                             "tbps": best["tbps"], "tflops": best["tflops"],
                             "torch_tflops": t["tflops"] if t else None, "x_torch": round(ratio, 3) if t else None,
                             "auto_tbps": ks["auto"]["tbps"] if "auto" in ks else None,
                             "auto_tflops": ks["auto"]["tflops"] if "auto" in ks else None})

if len(sys.argv) > 3:
    if len(sys.argv) > 4:
        try:
            with open(sys.argv[4]) as f:
                summary["gpu_txt"] = f.read().strip().splitlines()
        except OSError:
            pass
    with open(sys.argv[3], "w") as f:
        json.dump(summary, f, indent=1)
