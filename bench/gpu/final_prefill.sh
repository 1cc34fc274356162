#!/usr/bin/env bash
# bench/gpu/final_prefill.sh - cuda_attn's prefill part of the record run on the
# H200 (~45 s, capped at PREFILL_BUDGET_S, default 88).  Prebuilt build/, run from
# the repo root, OUT=dir.  Builds nothing.
#   1. attnctl check --filter extend of the defaults (the wgmma extend on SM 9.0
#      at head dim 128: TMA producer at pages of a multiple of 16, cp.async at
#      page 1; the mma extend at head dims 64 / 256);
#   2. attnctl bench on the issue-6 prefill shapes (bench/cuda/shapes.py: causal,
#      d128, 16 heads, 16k tokens, bf16, page 16; --min-time 0.2): the defaults
#      (+ page 1 at 4k), then the defaults without the save-KV launch at 1k and
#      16k (save=0: how much of the time that launch is);
#   3. the table: S -> TFLOP/s, ratio to torch flash and to cuDNN
#      (bench/results/anchors_torch_h200_2026-12-02.json, the same shapes; the
#      same-call anchors are bench/gpu/torch_prefill.sh), and summary.json.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BUDGET=${PREFILL_BUDGET_S:-88}
T0=$SECONDS
el() { echo $(( SECONDS - T0 )); }
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo; echo "### $* [$(el) s]"; }
for f in "$A" "$SO"; do [ -e "$f" ] || echo "MISSING $f (build here first and carry build/)"; done

shapes() { python3 - "$1" <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import PREFILL, prefill_case
w = sys.argv[1]
if w == "default": c = [prefill_case(b, s) for b, s in PREFILL] + [prefill_case(4, 4096, 1)]
else: c = [prefill_case(16, 1024) + ",save=0", prefill_case(1, 16384) + ",save=0"]
print(" ".join("--case " + x for x in c))
PY
}

step "1. check --filter extend, the defaults"
timeout 60 "$A" check --plugin cuda_attn --filter extend --json > "$OUT/check_default.json" 2> "$OUT/check_default.log"
echo "check default: rc=$? $(tail -1 "$OUT/check_default.log")"
grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_default.log" | head -8

step "2. bench"
bench() { # name which timeout
  timeout "$3" "$A" bench --plugin cuda_attn $(shapes "$2") --min-time 0.2 --json \
    > "$OUT/bench_$1.json" 2> "$OUT/bench_$1.log"
  echo "bench $1: rc=$? [$(el) s]"
}
bench default default 30
if [ "$(left)" -ge 7 ]; then bench default_save0 save0 20; else echo "skip default_save0: $(left) s left"; fi

step "3. table"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
def key(case):
    _, _, kv = case.partition(":")
    d = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
    return (int(d.get("l", 0)), int(d.get("page", 16)))
order = ["default", "default_save0"]
res = {}
for p in glob.glob(os.path.join(out, "bench_*.json")):
    v = os.path.basename(p)[6:-5]
    for c in (load(p) or {}).get("cases", []):
        if c.get("tflops"):
            res.setdefault(v, {})[key(c["case"])] = c
anch = load("bench/results/anchors_torch_h200_2026-12-02.json") or {}
tor = {r["s"]: r for r in anch.get("prefill_TFLOPs", []) if r.get("d") == 128 and r.get("causal") and r.get("b", 0) * r.get("s", 0) == 16384}
vs = [v for v in order if v in res] + sorted(v for v in res if v not in order)
S = [1024, 2048, 4096, 8192, 16384]
print("prefill TFLOP/s: causal, d128, 16 heads, b x s = 16k tokens, bf16, page 16 (page 1 on its own line)")
print("anchors: torch SDPA flash / cuDNN on this H200, contiguous, no save-KV (ours include the save-KV launch unless save0)")
W = max([12] + [len(v) for v in vs])
hdr = f"{'S':>6} | " + " ".join(f"{v:>{W}}" for v in vs) + " | flash  cudnn"
print(hdr); print("-" * len(hdr))
summary = {"variants": {}, "anchors": {s: {"flash": tor.get(s, {}).get("flash"), "cudnn": tor.get(s, {}).get("cudnn")} for s in S}}
for s in S:
    row = [res[v].get((s, 16), {}).get("tflops") for v in vs]
    t = tor.get(s, {})
    print(f"{s:>6} | " + " ".join(f"{x:{W}.1f}" if x else f"{'-':>{W}}" for x in row) +
          f" | {t.get('flash', 0):5.0f} {t.get('cudnn', 0):6.0f}")
for label, a in (("x flash", "flash"), ("x cuDNN", "cudnn")):
    print(f"{label}:")
    for s in S:
        t = tor.get(s, {}).get(a)
        row = [res[v].get((s, 16), {}).get("tflops") for v in vs]
        print(f"{s:>6} | " + " ".join(f"{x / t:{W - 1}.2f}x" if x and t else f"{'-':>{W}}" for x in row))
p1 = res.get("default", {}).get((4096, 1), {}).get("tflops"); p16 = res.get("default", {}).get((4096, 16), {}).get("tflops")
if p1 and p16:
    print(f"page 1 at 4k (default): {p1:.1f} TFLOP/s, {p16 / p1:.3f}x the page-16 time (target <= 1.10)")
for s in S:
    x = res.get("default", {}).get((s, 16), {}).get("tflops")
    t = tor.get(s, {})
    if x and t:
        print(f"default at {s:>5}: {x:6.1f}  {x / t['flash']:.2f}x flash  {x / t['cudnn']:.2f}x cuDNN")
d, z = res.get("default", {}), res.get("default_save0", {})
for s in (1024, 16384):
    a, b = d.get((s, 16), {}).get("median_us"), z.get((s, 16), {}).get("median_us")
    if a and b:
        print(f"save-KV launch at {s}: {a - b:.0f} us of {a:.0f} us ({(a - b) / a:.0%}); without it {z[(s, 16)]['tflops']:.1f} TFLOP/s")
print("targets: >= 1.0x flash at every S; >= 0.9x cuDNN at S >= 4096")
for v in vs:
    summary["variants"][v] = {f"{s}" + ("" if pg == 16 else f"_page{pg}"): {"tflops": c.get("tflops"), "median_us": c.get("median_us")}
                              for (s, pg), c in sorted(res[v].items())}
for p in glob.glob(os.path.join(out, "check_*.log")):
    v = os.path.basename(p)[6:-4]
    lines = open(p).read().strip().splitlines()
    summary.setdefault("checks", {})[v] = lines[-1] if lines else ""
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "final_prefill: done [$(el) s]"
