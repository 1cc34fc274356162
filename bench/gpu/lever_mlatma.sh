#!/usr/bin/env bash
# bench/gpu/lever_mlatma.sh - the mma kernel with bulk-copy (TMA) loads
# (SGL_ATTN_MLA_MMA=tma / tmadeep, opt-in, SM 9.0, 16-row tiles; mla_mma.cu
# "Bulk-copy loads"), second version: global -> shared bulk copies only (the
# first one's shared -> shared zero-row copy into its own CTA was the illegal
# instruction of run 8).  Against the shipped default (mma ring, L2 prefetch 2)
# at 16 heads.  <= 90 s on the H200 from the repo root, prebuilt build/
# (cuda_mla.so, build/tests/test_mla_gpu, build/tests/mla_gpu_bench), OUT=dir.
# Every step has its own timeout: a fault or hang ends that step only.
#   1. at once (the float64 reference is host-bound; each variant its own
#      process, so a fault in one leaves the others' answers):
#      a. test_mla_gpu strict, MLA_GPU_QUICK=6 (every 16-row decode case: pages
#         1/16/64, ragged, many items a CTA, long items, a split) for mma+tma,
#         mma+tmadeep, mma+tma+bal; MLA_GPU_QUICK=1 (the quick set: 32/64-row
#         tiles fall back to ring) for mma+tma,mma+tmadeep;
#      b. compute-sanitizer memcheck and racecheck, MLA_GPU_QUICK=5 (short and
#         long items), mma+tma and mma+tmadeep each;
#      the plan log must show "mma tma" / "mma tmadeep" plans.
#   2. mla_gpu_bench alone on issue 7's 6 memory-bound shapes (16 heads x 1,
#      B 64 / 128, s_k 4k / 16k / 32k, page 64): auto (the default), mma+tma,
#      mma+tmadeep; JSON in $OUT.
#   3. the table: TB/s and x default per shape, geomean ($OUT/lever_mlatma_summary.json).
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
BUDGET=${LEVER_MLATMA_BUDGET:-88}
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN
T=build/tests
step() { echo; echo "### $* [$SECONDS s]"; }
plans() { echo "tma $(grep -c 'mma tma,' "$1"), tmadeep $(grep -c 'mma tmadeep,' "$1"), ring $(grep -c 'mma ring,' "$1")"; }

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)

step "1. test_mla_gpu (strict) and the sanitizers, at once (cap 40 s)"
pids=""
tst() { # name quick variants
  MLA_GPU_QUICK=$2 MLA_GPU_VARIANTS=$3 MLA_GPU_VARIANT_TIMEOUT=10 timeout -k 3 36 \
    $T/test_mla_gpu > "$OUT/test_$1.log" 2> "$OUT/test_$1.err"
  echo $? > "$OUT/test_$1.rc"
}
san() { # tool variant
  if [ -z "$SAN" ]; then echo "no compute-sanitizer" > "$OUT/$1_$2.log"; echo 127 > "$OUT/$1_$2.rc"; return; fi
  MLA_GPU_QUICK=5 MLA_GPU_VARIANTS=$2 timeout -k 3 38 \
    "$SAN" --tool "$1" --error-exitcode 9 $T/test_mla_gpu > "$OUT/$1_$2.log" 2>&1
  echo $? > "$OUT/$1_$2.rc"
}
for v in mma+tma mma+tmadeep mma+tma+bal; do tst "q6_$v" 6 "$v" & pids="$pids $!"; done
tst q1_tma 1 mma+tma,mma+tmadeep & pids="$pids $!"
for v in mma+tma mma+tmadeep; do
  san memcheck "$v" & pids="$pids $!"
  san racecheck "$v" & pids="$pids $!"
done
wait $pids
for n in q6_mma+tma q6_mma+tmadeep q6_mma+tma+bal q1_tma; do
  f="$OUT/test_$n"
  echo "test $n: rc=$(cat "$f.rc" 2>/dev/null || echo none)," \
       "$(grep -v FAILED "$f.log" 2>/dev/null | grep -c ' nmse ') (case, variant) passed," \
       "$(grep -cE '^VARIANT_(FAIL|HANG)' "$f.err" 2>/dev/null) failed; plans $(plans "$f.err")"
  grep -hE '^VARIANT_' "$f.err" 2>/dev/null | head -4
done
grep -hE ' nmse ' "$OUT"/test_q6_mma+tma.log 2>/dev/null | head -5
for t in memcheck racecheck; do for v in mma+tma mma+tmadeep; do
  f="$OUT/${t}_$v"
  echo "$t $v: rc=$(cat "$f.rc" 2>/dev/null || echo none)" \
       "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$f.log" 2>/dev/null | tr '\n' ' ' | tr -s ' ')" \
       "plans $(plans "$f.log")"
  grep -E '^========= (Invalid|Illegal|Error|Warning)' "$f.log" 2>/dev/null | sort | uniq -c | head -3
  # where (racecheck may not model mbarrier complete_tx: hazards at the bulk copy vs ldmatrix are suspect)
  grep -A1 -E '^========= (Invalid|Illegal)' "$f.log" 2>/dev/null | grep -E '^=========  +at ' | sed -E 's/\+0x[0-9a-f]+//' | sort | uniq -c | head -3
  grep -A1 -E 'Race reported between' "$f.log" 2>/dev/null | grep -vE '^--' | sed -E 's/\+0x[0-9a-f]+//; s/ *\[[0-9]+ hazards\]//' | paste - - \
    | sed -E 's/ ?=========  +/ /g' | sort | uniq -c | sort -rn | head -4
done; done

step "2. mla_gpu_bench alone, 16 heads x 1: auto (default) vs mma+tma vs mma+tmadeep"
only="decode:b=64,l=4096,q=1,hq=16,page=64;decode:b=64,l=16384,q=1,hq=16,page=64"
only="$only;decode:b=64,l=32768,q=1,hq=16,page=64;decode:b=128,l=4096,q=1,hq=16,page=64"
only="$only;decode:b=128,l=16384,q=1,hq=16,page=64;decode:b=128,l=32768,q=1,hq=16,page=64"
left=$(( BUDGET - 4 - SECONDS ))
if [ $left -gt 8 ]; then
  MLA_BENCH_ONLY=$only MLA_BENCH_DEADLINE_S=$(( left - 4 )) timeout -k 2 $left \
    $T/mla_gpu_bench "$OUT/lever_mlatma_bench.json" "auto,mma+tma,mma+tmadeep" "auto" \
    > "$OUT/lever_mlatma_bench.log" 2> "$OUT/lever_mlatma_bench.err"
  echo "rc=$?; plans $(plans "$OUT/lever_mlatma_bench.err")"
  grep -vE '^ *$' "$OUT/lever_mlatma_bench.log" | grep -v staged
else
  echo "skipped: $left s left"
fi

step "3. TB/s, x default"
timeout 10 python3 - "$OUT" <<'PY'
import json, math, sys, os
out = sys.argv[1]
try:
    txt = open(os.path.join(out, "lever_mlatma_bench.json")).read()
except OSError:
    print("no bench JSON"); sys.exit(0)
try:
    d = json.loads(txt)
except ValueError:  # killed mid-run: close the list
    d = json.loads(txt.rstrip().rstrip(",") + "\n]}")
rows = {}
for c in d.get("cases", []):
    rows.setdefault(c["case"], {})[c["kernel"]] = c["tbps"]
vs = ["mma+tma", "mma+tmadeep"]
print("%-40s %8s %16s %16s" % ("case (TB/s, x default)", "default", *vs))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
tb = {v: [] for v in ["auto"] + vs}
rat = {v: [] for v in vs}
for case, r in rows.items():
    a = r.get("auto")
    line = "%-40s %8s" % (case, "%.3f" % a if a else "-")
    if a:
        tb["auto"].append(a)
    for v in vs:
        t = r.get(v)
        if t:
            tb[v].append(t)
        if t and a:
            rat[v].append(t / a)
        line += " %16s" % (("%.3f x%.3f" % (t, t / a)) if t and a else ("%.3f" % t if t else "-"))
    print(line)
summ = {"device": d.get("device"), "commit": d.get("commit"), "date": d.get("date"), "tbps": rows,
        "geomean_tbps": {v: gm(x) for v, x in tb.items() if x}, "geomean_x_default": {v: gm(x) for v, x in rat.items() if x}}
for v, x in tb.items():
    if x:
        print("%-12s geomean %.3f TB/s (%.2f of 3.2) over %d shapes%s" % (v, gm(x), gm(x) / 3.2, len(x),
              ", x%.3f default" % gm(rat[v]) if v in rat and rat[v] else ""))
json.dump(summ, open(os.path.join(out, "lever_mlatma_summary.json"), "w"), indent=1)
PY
echo "lever_mlatma: done [$SECONDS s]"
