#!/usr/bin/env bash
# bench/gpu/lever_mla4.sh - two opt-in successors of wgmma3 (auto's default at
# >= 64 rows) on issue 7's compute-bound shapes, bodies in mla_seesaw.cuh:
#   wgmma4 (SGL_ATTN_MLA_KERNEL=wgmma4, mla_wgmma4.cu): lazy running max,
#     O rescales skipped by warp vote, P packed by cvt.rn.bf16x2, no S zeroing;
#   wgmma5 (=wgmma5, mla_wgmma5.cu): wgmma4 + WG1's next S left in flight
#     across BAR_A (WG1 in its own loop, rotated by half a pair).  <= ~75 s on the H200 from the
# repo root, prebuilt build/ (make cuda_mla build/tests/test_mla_gpu
# build/tests/mla_gpu_bench), OUT=dir.  Every step is capped; a step that fails
# or times out is reported and the script goes on.
#   1. test_mla_gpu vs float64, the quick set (MLA_GPU_QUICK=1: 128 heads page
#      16 split + combine, 64 heads x 2 page 64 ragged, extend 16 heads page 32
#      ragged, 40 requests page 16 ragged, 16 x 2 page 32; last blocks partial),
#      variants wgmma3 (control), wgmma4, wgmma5; plans must say "runs wgmma4" /
#      "runs wgmma5"; the nmse lines are printed (the lazy max must not move them)
#   2. the graph capture / replay test (MLA_GPU_QUICK=3) with wgmma4 and wgmma5
#   3. compute-sanitizer memcheck (MLA_GPU_QUICK=2), wgmma5 then wgmma4
#   4. mla_gpu_bench: decode 128 heads x 1 and verify 64 x 2, B 128, s_k
#      4k / 16k / 32k, page 64: wgmma3, wgmma4, wgmma5, until BENCH_END; JSON in $OUT
#   5. racecheck (MLA_GPU_QUICK=2), wgmma5, wgmma4, wgmma3, one process each
#      (the seesaw's bar.arrive hand-offs are a known report class: compare
#      the hazard counts; wgmma3 had 26 in run 10)
#   6. test_mla_gpu, the full case set, wgmma5 and wgmma4, until BUDGET
#   7. TFLOP/s, x wgmma3, fraction of 450 per shape ($OUT/lever_mla4_summary.json)
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
BUDGET=${LEVER_MLA4_BUDGET:-72}        # the full-set step ends by then
BENCH_END=${LEVER_MLA4_BENCH_END:-50}  # no bench shape starts after this
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export SGL_ATTN_MLA_STRICT=1
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN SGL_ATTN_MLA_LOG
T=build/tests
step() { echo; echo "### $* [$SECONDS s]"; }
tests_report() { # $1 = log base, $2 = variant whose plans are counted
  echo "$(grep -v FAILED "$1.log" | grep -c ' nmse ') (case, variant) passed," \
       "$(grep -c '^VARIANT_' "$1.err") failed; plans asked $2 ->"
  grep -o "asked $2, runs [a-z0-9]*" "$1.err" | sort | uniq -c
  grep -hE '^VARIANT_' "$1.err" | head -8
  grep -hE 'nmse|FAILED' "$1.log" | head -24
}

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done

step "1. test_mla_gpu vs float64 (MLA_GPU_QUICK=1): wgmma3, wgmma4; then wgmma5 alone"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=wgmma3,wgmma4 MLA_GPU_VARIANT_TIMEOUT=8 timeout -k 3 16 \
  $T/test_mla_gpu > "$OUT/test_q1.log" 2> "$OUT/test_q1.err"
echo "rc=$?"; tests_report "$OUT/test_q1" wgmma4
# wgmma5 in a process of its own: a hang or fault there must not cost wgmma4's verdict
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=wgmma5 MLA_GPU_VARIANT_TIMEOUT=8 timeout -k 3 12 \
  $T/test_mla_gpu > "$OUT/test_q1_w5.log" 2> "$OUT/test_q1_w5.err"
echo "wgmma5 rc=$?"; tests_report "$OUT/test_q1_w5" wgmma5
W5_BENCH=,wgmma5 # kept out of the bench if it hung or faulted here
grep -qE '^VARIANT_(HANG|FAULT)' "$OUT/test_q1_w5.err" && { W5_BENCH=""; echo "wgmma5 left out of the bench"; }

step "2. graph capture / replay (MLA_GPU_QUICK=3): wgmma4, wgmma5"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=3 MLA_GPU_VARIANTS=wgmma4,wgmma5 timeout -k 2 10 \
  $T/test_mla_gpu > "$OUT/test_graph.log" 2> "$OUT/test_graph.err"
echo "rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_graph.log" | tr '\n' ' ')" \
     "plans run as wgmma4: $(grep -c 'runs wgmma4' "$OUT/test_graph.err")," \
     "as wgmma5: $(grep -c 'runs wgmma5' "$OUT/test_graph.err")"
grep -hE '^VARIANT_|graph' "$OUT/test_graph.log" "$OUT/test_graph.err" | head -6

step "3. compute-sanitizer memcheck (MLA_GPU_QUICK=2), wgmma5, wgmma4"
for k in wgmma5 wgmma4; do
  SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=$k timeout -k 3 12 \
    compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/memcheck_$k.log" 2>&1
  echo "memcheck $k: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck_$k.log" | tr '\n' ' ' | tr -s ' ')" \
       "$k plans: $(grep -c "runs $k" "$OUT/memcheck_$k.log")"
done

step "4. mla_gpu_bench, 128 rows, B 128, 4k/16k/32k: wgmma3, wgmma4, wgmma5, until ${BENCH_END} s"
only=""
for l in 4096 16384 32768; do
  only="$only;decode:b=128,l=$l,q=1,hq=128,page=64;verify:b=128,l=$l,q=2,hq=64,page=64"; done
only=${only#;}
left=$(( BENCH_END - SECONDS ))
if [ $left -gt 5 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_BENCH_ONLY=$only MLA_BENCH_DEADLINE_S=$left timeout -k 3 $(( left + 15 )) \
    $T/mla_gpu_bench "$OUT/lever_mla4_bench.json" "wgmma3" "wgmma3,wgmma4$W5_BENCH" \
    > "$OUT/lever_mla4_bench.log" 2> "$OUT/lever_mla4_bench.err"
  echo "rc=$?; plans run as wgmma5: $(grep -c 'runs wgmma5' "$OUT/lever_mla4_bench.err")," \
       "wgmma4: $(grep -c 'runs wgmma4' "$OUT/lever_mla4_bench.err"), wgmma3: $(grep -c 'runs wgmma3' "$OUT/lever_mla4_bench.err")"
  grep -vE '^ *$' "$OUT/lever_mla4_bench.log"
else
  echo "skipped: the time budget is spent"
fi

step "5. compute-sanitizer racecheck (MLA_GPU_QUICK=2): wgmma5, wgmma4, then wgmma3 (control)"
for k in wgmma5 wgmma4 wgmma3; do
  left=$(( BUDGET - 6 - SECONDS )); [ $left -gt 10 ] && left=10
  if [ $left -gt 4 ]; then
    SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=$k timeout -k 2 $left \
      compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/racecheck_$k.log" 2>&1
    echo "racecheck $k: rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/racecheck_$k.log" | tr '\n' ' ' | tr -s ' ')" \
         "$k plans: $(grep -c "runs $k" "$OUT/racecheck_$k.log")"
    grep -E "^========= (Error|Warning)" "$OUT/racecheck_$k.log" | sed -e 's/+0x[0-9a-f]*//g' | sort | uniq -c | sort -rn | head -6
  else
    echo "racecheck $k skipped: the time budget is spent"
  fi
done

step "6. test_mla_gpu vs float64, full case set, wgmma5 and wgmma4, until ${BUDGET} s"
left=$(( BUDGET - 2 - SECONDS )); [ $left -gt 20 ] && left=20
if [ $left -gt 6 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_GPU_VARIANTS=wgmma5,wgmma4 MLA_GPU_VARIANT_TIMEOUT=8 timeout -k 2 $left \
    $T/test_mla_gpu > "$OUT/test_full.log" 2> "$OUT/test_full.err"
  echo "rc=$? (124: cut by the budget)"; tests_report "$OUT/test_full" wgmma5
else
  echo "skipped: the time budget is spent"
fi

step "7. summary: TFLOP/s, x wgmma3, fraction of 450"
python3 - "$OUT" <<'PY'
import json, math, sys, os
out = sys.argv[1]
p = os.path.join(out, "lever_mla4_bench.json")
try:
    txt = open(p).read()
except OSError:
    print("no bench JSON"); sys.exit(0)
d, cut = None, len(txt)
while d is None and cut > 0:  # killed mid-run: keep the complete entries, close the list
    try:
        d = json.loads(txt if cut == len(txt) else txt[:cut + 1] + "\n]}")
    except ValueError:
        cut = txt.rfind("}", 0, cut)
if d is None:
    print("bench JSON unreadable"); sys.exit(0)
ks = ["wgmma3", "wgmma4", "wgmma5"]
rows = {}
for c in d.get("cases", []):
    rows.setdefault(c["case"], {})[c["kernel"]] = (c["tflops"], c["median_us"])
print("%-40s" % "case" + "".join("%22s" % (k + " TF/s x3 /450") for k in ks))
ratio = {k: [] for k in ks}
for case, r in rows.items():
    base = r.get("wgmma3")
    line = "%-40s" % case
    for k in ks:
        v = r.get(k)
        if not v:
            line += "%22s" % "-"; continue
        x = v[0] / base[0] if base and base[0] > 0 else None
        if x:
            ratio[k].append(x)
        line += "%22s" % ("%.1f %s %.2f" % (v[0], "x%.3f" % x if x else "-", v[0] / 450))
    print(line)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else None
summ = {}
for k in ks:
    tf = [r[k][0] for r in rows.values() if r.get(k)]
    g, gr = gm(tf), gm(ratio[k])
    summ[k] = {"geomean_tflops": g, "geomean_x_wgmma3": gr, "shapes": len(tf)}
    if g:
        print("%-7s geomean %.1f TFLOP/s over %d shapes, x%.3f wgmma3, %.2f of 450" % (k, g, len(tf), gr or 0, g / 450))
json.dump({"device": d.get("device"), "commit": d.get("commit"), "date": d.get("date"),
           "tflops_us": rows, "summary": summ}, open(os.path.join(out, "lever_mla4_summary.json"), "w"), indent=1)
PY
echo "lever_mla4: done [$SECONDS s]"
