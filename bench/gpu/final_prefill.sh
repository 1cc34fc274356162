#!/usr/bin/env bash
# bench/gpu/final_prefill.sh - cuda_attn's prefill part of the record run
# (~30 s; ~50 s when it times PyTorch itself):
#   1. attnctl check --filter extend of the defaults (the wgmma extend on SM 9.0
#      at head dim 128: TMA producer at pages of a multiple of 16, cp.async at
#      page 1; the mma extend at head dims 64 / 256);
#   2. attnctl bench on the issue-6 prefill shapes (bench/cuda/shapes.py: causal,
#      d128, 16 heads, 16k tokens, bf16, page 16; --min-time 0.2): the defaults
#      (+ page 1 at 4k), then the defaults without the save-KV launch at 1k and
#      16k (case key save=0: how much of the time that launch is);
#   3. the same-call anchors: PyTorch SDPA flash / cuDNN on the same shapes, from
#      final_decode's torch.json when it ran in this call (final.sh), else timed
#      here (bench/cuda/torch_side_by_side.py, TORCH_PARTS=prefill);
#   4. the table (S -> TFLOP/s, x flash, x cuDNN; summary.json), then the
#      figures beside the last record's (bench/cuda/vs_last.py).
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"

shapes() { python3 - "$1" <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import PREFILL, prefill_case
if sys.argv[1] == "default": c = [prefill_case(b, s) for b, s in PREFILL] + [prefill_case(4, 4096, 1)]
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
  echo "bench $1: rc=$? [$SECONDS s]"
}
bench default default 30
bench default_save0 save0 20

step "3. same-call anchors"
if grep -q '"flash_TFLOPs"' "$OUT/../final_decode/torch.json" 2> /dev/null; then
  cp "$OUT/../final_decode/torch.json" "$OUT/torch.json"; echo "from final_decode/torch.json"
else
  TORCH_PARTS=prefill timeout 70 python3 bench/cuda/torch_side_by_side.py "$OUT/torch.json" > "$OUT/torch.log" 2>&1
  echo "torch prefill rc=$?"
fi

step "4. table"
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
res = {}
for v in ("default", "default_save0"):
    for c in (load(os.path.join(out, f"bench_{v}.json")) or {}).get("cases", []):
        if c.get("tflops"):
            res.setdefault(v, {})[key(c["case"])] = c
torch = load(os.path.join(out, "torch.json")) or {}
tor = {r["s"]: {"flash": r.get("flash_TFLOPs"), "cudnn": r.get("cudnn_TFLOPs")} for r in torch.get("prefill", [])}
print(f"anchors: torch SDPA flash / cuDNN, {torch.get('gpu', '?')}, {torch.get('date', '?')} (contiguous, no save-KV; "
      "ours include the save-KV launch unless save0)" if tor else "anchors: none (torch.json missing)")
d, z = res.get("default", {}), res.get("default_save0", {})
S = [1024, 2048, 4096, 8192, 16384]
print("prefill TFLOP/s: causal, d128, 16 heads, b x s = 16k tokens, bf16, page 16")
print(f"{'S':>6} {'ours':>7} {'save0':>7} {'flash':>7} {'cuDNN':>7} {'x flash':>8} {'x cuDNN':>8}")
for s in S:
    o, o0 = d.get((s, 16), {}).get("tflops"), z.get((s, 16), {}).get("tflops")
    f, c = tor.get(s, {}).get("flash"), tor.get(s, {}).get("cudnn")
    cell = lambda x, w=7, p=1: f"{x:{w}.{p}f}" if x else f"{'-':>{w}}"
    print(f"{s:>6} {cell(o)} {cell(o0)} {cell(f)} {cell(c)} {cell(o / f if o and f else None, 8, 2)} "
          f"{cell(o / c if o and c else None, 8, 2)}")
p1, p16 = d.get((4096, 1), {}).get("median_us"), d.get((4096, 16), {}).get("median_us")
if p1 and p16:
    print(f"page 1 at 4k: {d[(4096, 1)]['tflops']:.1f} TFLOP/s, {p1 / p16:.3f}x the page-16 time (target <= 1.10)")
for s in (1024, 16384):
    a, b = d.get((s, 16), {}).get("median_us"), z.get((s, 16), {}).get("median_us")
    if a and b:
        print(f"save-KV launch at {s}: {a - b:.0f} us of {a:.0f} us ({(a - b) / a:.0%})")
print("targets: >= 1.0x flash at every S; >= 0.9x cuDNN at S >= 4096")
summary = {"anchors": {str(s): tor.get(s) for s in S}, "variants": {}, "checks": {}}
for v, cases in res.items():
    summary["variants"][v] = {f"{s}" + ("" if pg == 16 else f"_page{pg}"): {"tflops": c.get("tflops"), "median_us": c.get("median_us")}
                              for (s, pg), c in sorted(cases.items())}
for p in glob.glob(os.path.join(out, "check_*.log")):
    lines = open(p).read().strip().splitlines()
    summary["checks"][os.path.basename(p)[6:-4]] = lines[-1] if lines else ""
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
step "beside the last record"
python3 bench/cuda/vs_last.py prefill "$OUT"
echo "final_prefill: done [$SECONDS s]"
