#!/usr/bin/env bash
# bench/gpu/lever_mlatma.sh - the mma kernel with bulk-copy (TMA) loads
# (SGL_ATTN_MLA_MMA=tma / tmadeep, opt-in, SM 9.0, 16-row tiles; mla_mma.cu
# "Bulk-copy loads") against the shipped default (mma ring, L2 prefetch 2) at
# 16 heads.  <= ~90 s on the H200 from the repo root, prebuilt build/ (make
# cuda_mla build/tests/test_mla_gpu build/tests/mla_gpu_bench), OUT=dir.
# Every step is capped; a step that fails or times out is reported and the
# script goes on.
#   1. test_mla_gpu vs float64, strict: the quick set (MLA_GPU_QUICK=1) and the
#      16-head set (=4: short, many and long items; the long ones cross the
#      stage ring's phases and the page-table ring), auto + the tma variants;
#      the plan log (SGL_ATTN_MLA_LOG=1) must show "mma tma" / "mma tmadeep"
#   2. compute-sanitizer memcheck (MLA_GPU_QUICK=5, mma+tma and mma+tmadeep)
#   3. mla_gpu_bench on issue 7's 6 memory-bound shapes (16 heads x 1, B 64 /
#      128, 4k / 16k / 32k): auto and mma+tma, mma+tmadeep, mma+tma+pf2,
#      mma+tmadeep+pf6 (L2 prefetch on top), until BENCH_END; JSON in $OUT
#   4. racecheck (MLA_GPU_QUICK=5, mma+tma: a stage is reloaded right after the
#      barrier that ends its reads; then mma+tmadeep if time is left)
#   5. TB/s and variant / auto per shape, geomean ($OUT/lever_mlatma_summary.json)
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
BUDGET=${LEVER_MLATMA_BUDGET:-86}       # the racecheck step ends by then
BENCH_END=${LEVER_MLATMA_BENCH_END:-58} # no bench variant starts after this
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export SGL_ATTN_MLA_STRICT=1
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN SGL_ATTN_MLA_LOG
T=build/tests
TMA="mma+tma mma+tmadeep mma+tma+bal mma+tmadeep+pf6"
step() { echo; echo "### $* [$SECONDS s]"; }
plans() { echo "mma tma: $(grep -c 'mma tma,' "$1"), mma tmadeep: $(grep -c 'mma tmadeep' "$1"), mma ring: $(grep -c 'mma ring' "$1")"; }

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done

step "1. test_mla_gpu vs float64 (strict): auto, $TMA"
list="auto,$(echo $TMA | tr ' ' ',')"
for q in 1 4; do
  SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=$q MLA_GPU_VARIANTS=$list MLA_GPU_VARIANT_TIMEOUT=6 timeout -k 3 25 \
    $T/test_mla_gpu > "$OUT/test_q$q.log" 2> "$OUT/test_q$q.err"
  echo "quick=$q: rc=$? $(grep -v FAILED "$OUT/test_q$q.log" | grep -c ' nmse ') (case, variant) passed," \
       "$(grep -c '^VARIANT_' "$OUT/test_q$q.err") failed; plans run as $(plans "$OUT/test_q$q.err")"
  grep -hE '^VARIANT_' "$OUT/test_q$q.err" | head -8
  grep -hE 'tma' "$OUT/test_q$q.log" | head -12
done

step "2. compute-sanitizer memcheck (MLA_GPU_QUICK=5: short and long items), mma+tma, mma+tmadeep"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=5 MLA_GPU_VARIANTS=mma+tma,mma+tmadeep timeout -k 3 22 \
  compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ' | tr -s ' ')" \
     "plans: $(plans "$OUT/memcheck.log")"

step "3. mla_gpu_bench, 16 heads x 1 (memory-bound), default vs tma, until ${BENCH_END} s"
only="decode:b=128,l=16384,q=1,hq=16,page=64;decode:b=64,l=4096,q=1,hq=16,page=64"
only="$only;decode:b=128,l=4096,q=1,hq=16,page=64;decode:b=64,l=16384,q=1,hq=16,page=64"
only="$only;decode:b=64,l=32768,q=1,hq=16,page=64;decode:b=128,l=32768,q=1,hq=16,page=64"
mem="auto,mma+tma,mma+tmadeep,mma+tma+pf2,mma+tmadeep+pf6"
left=$(( BENCH_END - SECONDS ))
if [ $left -gt 5 ]; then
  SGL_ATTN_MLA_LOG=1 MLA_BENCH_ONLY=$only MLA_BENCH_DEADLINE_S=$left timeout -k 3 $(( left + 8 )) \
    $T/mla_gpu_bench "$OUT/lever_mlatma_bench.json" "$mem" "auto" > "$OUT/lever_mlatma_bench.log" 2> "$OUT/lever_mlatma_bench.err"
  echo "rc=$?; plans run as $(plans "$OUT/lever_mlatma_bench.err")"
  grep -vE '^ *$' "$OUT/lever_mlatma_bench.log"
else
  echo "skipped: the time budget is spent"
fi

step "4. compute-sanitizer racecheck (MLA_GPU_QUICK=5), mma+tma then mma+tmadeep, until ${BUDGET} s"
for v in mma+tma mma+tmadeep; do
  left=$(( BUDGET - SECONDS )); [ $left -gt 25 ] && left=25
  if [ $left -gt 4 ]; then
    SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=5 MLA_GPU_VARIANTS=$v timeout -k 2 $left \
      compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/racecheck_$v.log" 2>&1
    echo "racecheck $v: rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/racecheck_$v.log" | tr '\n' ' ' | tr -s ' ')" \
         "plans: $(plans "$OUT/racecheck_$v.log")"
    grep -E "^========= (Error|Warning)" "$OUT/racecheck_$v.log" | sort | uniq -c | head -6
  else
    echo "racecheck $v: skipped, the time budget is spent"
  fi
done

step "5. tma / default"
python3 - "$OUT" <<'PY'
import json, math, sys, os
out = sys.argv[1]
p = os.path.join(out, "lever_mlatma_bench.json")
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
tb = {v: [] for v in variants}
for case, r in rows.items():
    a = r.get("auto")
    line = "%-42s %8s" % (case, "%.3f" % a if a else "-")
    for v in variants:
        t = r.get(v)
        if t:
            tb[v].append(t)
        if t and a:
            ratios[v].append(t / a)
            line += " %20s" % ("%.3f x%.3f" % (t, t / a))
        else:
            line += " %20s" % ("%.3f" % t if t else "-")
    print(line)
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
summ = {"device": d.get("device"), "commit": d.get("commit"), "date": d.get("date"), "tbps": rows,
        "geomean_ratio": {}, "geomean_tbps": {}}
a = [r["auto"] for r in rows.values() if r.get("auto")]
if a:
    summ["geomean_tbps"]["auto"] = gm(a)
    print("auto geomean %.3f TB/s over %d shapes (/3.2 target: %.2f)" % (gm(a), len(a), gm(a) / 3.2))
for v in variants:
    if tb[v]:
        summ["geomean_tbps"][v] = gm(tb[v])
    if ratios[v]:
        summ["geomean_ratio"][v] = gm(ratios[v])
        print("%-18s geomean %.3f TB/s (/3.2: %.2f), / auto over %d shapes: x%.3f"
              % (v, gm(tb[v]), gm(tb[v]) / 3.2, len(ratios[v]), gm(ratios[v])))
json.dump(summ, open(os.path.join(out, "lever_mlatma_summary.json"), "w"), indent=1)
PY
echo "lever_mlatma: done [$SECONDS s]"
