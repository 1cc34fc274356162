#!/usr/bin/env bash
# bench/gpu/lever_mla128.sh - the reordered seesaw kernel (SGL_ATTN_MLA_KERNEL=wgmma2,
# opt-in; plugins/cuda/mla/mla_wgmma2.cu) against the default at >= 64 rows (wgmma0)
# on issue 7's compute-bound shapes.  <= ~90 s on the H200 from the repo root,
# prebuilt build/ (make cuda_mla build/tests/test_mla_gpu build/tests/mla_gpu_bench),
# OUT=dir.  Every step is capped; a step that fails or times out is reported and
# the script goes on.
#   1. test_mla_gpu vs float64, the quick set (MLA_GPU_QUICK=1: 128 heads page
#      16, 64 heads x 2 page 64 ragged, an extend at 16 heads page 32 ragged,
#      40 requests page 16 ragged; the last block of an item partial), variants
#      wgmma0 (control) and wgmma2 (explicit wgmma2 runs at any row count where
#      the page fits); the plan log (SGL_ATTN_MLA_LOG=1) must show "runs wgmma2"
#   2. compute-sanitizer memcheck (MLA_GPU_QUICK=2: decode 16 heads, verify
#      64 x 2 ragged) on wgmma2
#   3. mla_gpu_bench: decode b128 4k/8k 128 heads, verify b128 4k/8k 64 x 2,
#      page 64, wgmma0 and wgmma2, until BENCH_END; JSON in $OUT
#   4. test_mla_gpu, the full case set, wgmma2 alone (adds the extend at 128
#      heads, 16-head split, long items; p1 / p8 / f16 / fp8 fall back by design)
#   5. racecheck (MLA_GPU_QUICK=2, wgmma2; informational: the tool reports
#      hazards on wgmma0's hand-offs too, docs/cuda_mla.md), until BUDGET
#   6. TFLOP/s and wgmma2 / wgmma0 per shape, geomean ($OUT/lever_mla128_summary.json)
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
BUDGET=${LEVER_MLA128_BUDGET:-86}        # the racecheck step ends by then
BENCH_END=${LEVER_MLA128_BENCH_END:-52}  # no bench variant starts after this
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export SGL_ATTN_MLA_STRICT=1
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN SGL_ATTN_MLA_LOG
T=build/tests
step() { echo; echo "### $* [$SECONDS s]"; }

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done

step "1. test_mla_gpu vs float64 (MLA_GPU_QUICK=1): wgmma0, wgmma2"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=wgmma0,wgmma2 MLA_GPU_VARIANT_TIMEOUT=8 timeout -k 3 30 \
  $T/test_mla_gpu > "$OUT/test_q1.log" 2> "$OUT/test_q1.err"
echo "rc=$? $(grep -v FAILED "$OUT/test_q1.log" | grep -c ' nmse ') (case, variant) passed," \
     "$(grep -c '^VARIANT_' "$OUT/test_q1.err") failed; plans asked wgmma2 ->"
grep -o 'asked wgmma2, runs [a-z0-9]*' "$OUT/test_q1.err" | sort | uniq -c
grep -hE '^VARIANT_' "$OUT/test_q1.err" | head -8
grep -hE 'nmse|FAILED' "$OUT/test_q1.log" | head -16

step "2. compute-sanitizer memcheck (MLA_GPU_QUICK=2), wgmma2"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=wgmma2 timeout -k 3 20 \
  compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/memcheck.log" 2>&1
echo "memcheck wgmma2: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ' | tr -s ' ')" \
     "wgmma2 plans: $(grep -c 'runs wgmma2' "$OUT/memcheck.log")"

step "3. mla_gpu_bench, 128 rows (compute-bound): wgmma0 vs wgmma2, until ${BENCH_END} s"
only="decode:b=128,l=4096,q=1,hq=128,page=64;verify:b=128,l=4096,q=2,hq=64,page=64"
only="$only;decode:b=128,l=8192,q=1,hq=128,page=64;verify:b=128,l=8192,q=2,hq=64,page=64"
left=$(( BENCH_END - SECONDS ))
if [ $left -gt 5 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_BENCH_ONLY=$only MLA_BENCH_DEADLINE_S=$left timeout -k 3 $(( left + 10 )) \
    $T/mla_gpu_bench "$OUT/lever_mla128_bench.json" "wgmma0" "wgmma0,wgmma2" \
    > "$OUT/lever_mla128_bench.log" 2> "$OUT/lever_mla128_bench.err"
  echo "rc=$?; plans run as wgmma2: $(grep -c 'runs wgmma2' "$OUT/lever_mla128_bench.err"), as wgmma0: $(grep -c 'runs wgmma0' "$OUT/lever_mla128_bench.err")"
  grep -vE '^ *$' "$OUT/lever_mla128_bench.log"
else
  echo "skipped: the time budget is spent"
fi

step "4. test_mla_gpu vs float64, full case set, wgmma2 alone, until $(( BUDGET - 22 )) s"
left=$(( BUDGET - 22 - SECONDS )); [ $left -gt 30 ] && left=30
if [ $left -gt 6 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_GPU_VARIANTS=wgmma2 MLA_GPU_VARIANT_TIMEOUT=8 timeout -k 2 $left \
    $T/test_mla_gpu > "$OUT/test_full.log" 2> "$OUT/test_full.err"
  echo "rc=$? (124: cut by the budget) $(grep -v FAILED "$OUT/test_full.log" | grep -c ' nmse ') cases passed," \
       "$(grep -c '^VARIANT_' "$OUT/test_full.err") failed; plans asked wgmma2 ->"
  grep -o 'asked wgmma2, runs [a-z0-9]*' "$OUT/test_full.err" | sort | uniq -c
  grep -hE '^VARIANT_' "$OUT/test_full.err" | head -8
  grep -hE 'nmse|FAILED' "$OUT/test_full.log" | head -16
else
  echo "skipped: the time budget is spent"
fi

step "5. compute-sanitizer racecheck (MLA_GPU_QUICK=2, wgmma2; informational), until ${BUDGET} s"
left=$(( BUDGET - SECONDS )); [ $left -gt 20 ] && left=20
if [ $left -gt 4 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=wgmma2 timeout -k 2 $left \
    compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/racecheck.log" 2>&1
  echo "racecheck wgmma2: rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/racecheck.log" | tr '\n' ' ' | tr -s ' ')"
  grep -E "^========= (Error|Warning)" "$OUT/racecheck.log" | sort | uniq -c | head -8
else
  echo "skipped: the time budget is spent"
fi

step "6. wgmma2 / wgmma0"
python3 - "$OUT" <<'PY'
import json, math, sys, os
out = sys.argv[1]
p = os.path.join(out, "lever_mla128_bench.json")
try:
    txt = open(p).read()
except OSError:
    print("no bench JSON"); sys.exit(0)
try:
    d = json.loads(txt)
except ValueError:  # killed mid-run: close the list
    d = json.loads(txt.rstrip().rstrip(",") + "\n]}")
rows = {}
for c in d.get("cases", []):
    rows.setdefault(c["case"], {})[c["kernel"]] = (c["tflops"], c["median_us"])
print("%-44s %16s %16s %8s" % ("case", "wgmma0 TF/s (us)", "wgmma2 TF/s (us)", "ratio"))
ratios = []
for case, r in rows.items():
    a, b = r.get("wgmma0"), r.get("wgmma2")
    fa = "%.1f (%.0f)" % a if a else "-"
    fb = "%.1f (%.0f)" % b if b else "-"
    x = b[0] / a[0] if a and b and a[0] > 0 else None
    if x:
        ratios.append(x)
    print("%-44s %16s %16s %8s" % (case, fa, fb, "x%.3f" % x if x else "-"))
g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
if g:
    print("geomean wgmma2 / wgmma0 over %d shapes: x%.3f" % (len(ratios), g))
tf2 = [r["wgmma2"][0] for r in rows.values() if r.get("wgmma2")]
if tf2:
    print("wgmma2 geomean %.1f TFLOP/s (450 target: %.2f)" % (math.exp(sum(map(math.log, tf2)) / len(tf2)),
                                                         math.exp(sum(map(math.log, tf2)) / len(tf2)) / 450))
json.dump({"device": d.get("device"), "commit": d.get("commit"), "date": d.get("date"),
           "tflops_us": rows, "geomean_ratio": g}, open(os.path.join(out, "lever_mla128_summary.json"), "w"), indent=1)
PY
echo "lever_mla128: done [$SECONDS s]"
