#!/usr/bin/env bash
# bench/gpu/lever_mla.sh - the mma kernel's page-table ring (SGL_ATTN_MLA_MMA=ring,
# opt-in; docs/cuda_mla.md "Page-table ring") against the shipped default at
# 16 heads.  <= ~90 s on the H200 from the repo root, prebuilt build/ (make
# cuda_mla attnctl build/tests/test_mla_gpu build/tests/mla_gpu_bench), OUT=dir.
# Every step is capped; a step that fails or times out is reported and the
# script goes on.
#   1. test_mla_gpu vs float64: the quick set (MLA_GPU_QUICK=1) and the ring
#      set (=4: 16-head decode with short, many and long items, the long ones
#      reuse the ring's 16 entries), default + the ring variants; the plan log
#      (SGL_ATTN_MLA_LOG=1) must show "mma ring" plans
#   2. compute-sanitizer memcheck (16-head decode, short and long items,
#      mma+ring+pf4)
#   3. mla_gpu_bench on issue 7's 6 memory-bound shapes (16 heads x 1, B 64 /
#      128, 4k / 16k / 32k): auto (mma two + pf4) and the ring variants (pf4,
#      pf8, pf2), until BENCH_END; JSON in $OUT
#   4. racecheck (same cases, mma+ring+pf15: the ring's shortest reuse distance)
#   5. TB/s and ring / auto per shape, geomean ($OUT/lever_mla_summary.json)
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
BUDGET=${LEVER_MLA_BUDGET:-86}   # the racecheck step ends by then
BENCH_END=${LEVER_MLA_BENCH_END:-60} # no bench variant starts after this (racecheck gets the rest)
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export SGL_ATTN_MLA_STRICT=1
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN SGL_ATTN_MLA_LOG
T=build/tests
RING="mma+ring+pf4 mma+ring+pf0 mma+ring+pf15 mma+ring+pf4+bal"
step() { echo; echo "### $* [$SECONDS s]"; }

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done

step "1. test_mla_gpu vs float64: auto, mma+two+pf4, $RING"
list="auto,mma+two+pf4,$(echo $RING | tr ' ' ',')"
for q in 1 4; do
  SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=$q MLA_GPU_VARIANTS=$list MLA_GPU_VARIANT_TIMEOUT=6 timeout -k 3 30 \
    $T/test_mla_gpu > "$OUT/test_q$q.log" 2> "$OUT/test_q$q.err"
  echo "quick=$q: rc=$? $(grep -v FAILED "$OUT/test_q$q.log" | grep -c ' nmse ') (case, variant) passed," \
       "$(grep -c '^VARIANT_' "$OUT/test_q$q.err") failed; plans run as mma ring: $(grep -c 'mma ring' "$OUT/test_q$q.err")"
  grep -hE '^VARIANT_' "$OUT/test_q$q.err" | head -8
  grep -hE 'ring' "$OUT/test_q$q.log" | head -12
done

step "2. compute-sanitizer memcheck (MLA_GPU_QUICK=5: short and long items)"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=5 MLA_GPU_VARIANTS=mma+ring+pf4 timeout -k 3 25 \
  compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/memcheck.log" 2>&1
echo "memcheck mma+ring+pf4: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ' | tr -s ' ')" \
     "ring plans: $(grep -c 'mma ring' "$OUT/memcheck.log")"

step "3. mla_gpu_bench, 16 heads x 1 (memory-bound), default vs ring, until ${BENCH_END} s"
only="decode:b=128,l=4096,q=1,hq=16,page=64;decode:b=64,l=16384,q=1,hq=16,page=64"
only="$only;decode:b=128,l=16384,q=1,hq=16,page=64;decode:b=64,l=4096,q=1,hq=16,page=64"
only="$only;decode:b=64,l=32768,q=1,hq=16,page=64;decode:b=128,l=32768,q=1,hq=16,page=64"
mem="auto,mma+ring+pf4,mma+ring+pf8,mma+ring+pf2"
left=$(( BENCH_END - SECONDS ))
if [ $left -gt 5 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_BENCH_ONLY=$only MLA_BENCH_DEADLINE_S=$left timeout -k 3 $(( left + 8 )) \
    $T/mla_gpu_bench "$OUT/lever_mla_bench.json" "$mem" "auto" > "$OUT/lever_mla_bench.log" 2> "$OUT/lever_mla_bench.err"
  echo "rc=$?; plans run as mma ring: $(grep -c 'mma ring' "$OUT/lever_mla_bench.err"), as mma two: $(grep -c 'mma two' "$OUT/lever_mla_bench.err")"
  grep -vE '^ *$' "$OUT/lever_mla_bench.log"
else
  echo "skipped: the time budget is spent"
fi

step "4. compute-sanitizer racecheck (MLA_GPU_QUICK=5, mma+ring+pf15: the ring's shortest reuse), until ${BUDGET} s"
left=$(( BUDGET - SECONDS )); [ $left -gt 30 ] && left=30
if [ $left -gt 4 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=5 MLA_GPU_VARIANTS=mma+ring+pf15 timeout -k 2 $left \
    compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/racecheck.log" 2>&1
  echo "racecheck mma+ring+pf15: rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/racecheck.log" | tr '\n' ' ' | tr -s ' ')" \
       "ring plans: $(grep -c 'mma ring' "$OUT/racecheck.log")"
  grep -E "^========= (Error|Warning)" "$OUT/racecheck.log" | sort | uniq -c | head -8
else
  echo "skipped: the time budget is spent"
fi

step "5. ring / default"
python3 - "$OUT" <<'PY'
import json, math, sys, os
out = sys.argv[1]
p = os.path.join(out, "lever_mla_bench.json")
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
    rows.setdefault(c["case"], {})[c["kernel"]] = c["tbps"]
variants = sorted({k for r in rows.values() for k in r if k != "auto"})
print("%-42s %8s" % ("case (TB/s; x = / auto)", "auto") + "".join(" %20s" % v for v in variants))
ratios = {v: [] for v in variants}
for case, r in rows.items():
    a = r.get("auto")
    line = "%-42s %8s" % (case, "%.3f" % a if a else "-")
    for v in variants:
        t = r.get(v)
        if t and a:
            ratios[v].append(t / a)
            line += " %20s" % ("%.3f x%.3f" % (t, t / a))
        else:
            line += " %20s" % ("%.3f" % t if t else "-")
    print(line)
summ = {"device": d.get("device"), "commit": d.get("commit"), "date": d.get("date"), "tbps": rows, "geomean_ratio": {}}
for v, rs in ratios.items():
    if rs:
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        summ["geomean_ratio"][v] = g
        print("geomean %s / auto over %d shapes: x%.3f" % (v, len(rs), g))
a = [r["auto"] for r in rows.values() if r.get("auto")]
if a:
    print("auto geomean %.3f TB/s (/3.2 target: %.2f)" % (math.exp(sum(map(math.log, a)) / len(a)), math.exp(sum(map(math.log, a)) / len(a)) / 3.2))
json.dump(summ, open(os.path.join(out, "lever_mla_summary.json"), "w"), indent=1)
PY
echo "lever_mla: done [$SECONDS s]"
