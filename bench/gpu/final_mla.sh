#!/usr/bin/env bash
# bench/gpu/final_mla.sh - cuda_mla's part of the record run (bench/gpu/final.sh):
# <= ~90 s on the H200 from the repo root, prebuilt build/ (make cuda_mla
# cuda_mla_tests attnctl), OUT=dir.  Every step is capped; a step that fails
# or times out is reported and the script goes on.
#   1. test_mla_gpu (MLA_GPU_QUICK=1): the defaults and every kept kernel
#      configuration (auto simple mma mma+ring mma+base wide, docs/cuda_mla.md)
#      against float64 in one process (every variant runs on every case; a
#      variant that hangs is dropped and the rest re-run); graph replay
#   2. attnctl check --plugin cuda_mla: defaults on the full matrix; the mma
#      fallback (SM 8.0's base configuration) on the quick one
#   3. attnctl bench, defaults as shipped, issue 7's 10 shapes (the record)
#   4. the PyTorch matmul path on the same shapes, same run
#   5. mla_gpu_bench: the default again on 4 of the shapes (this timer checked
#      against step 3 in the same run), beside MLA_FINAL_MEM / MLA_FINAL_CMP
#      variants when given, while the time budget lasts
#   6. the tables, ratio table last (bench/cuda/mla_final_summary.py), with
#      "x last" against the last record (bench/cuda/vs_last.py; MLA_FINAL_LAST:
#      another record's bench_default.json), and vs_last.py's table
# SGL_ATTN_MLA_STRICT=1 throughout: a kernel this device cannot run fails at
# create instead of running another under its name.  SGL_ATTN_MLA_LOG=1 on the
# bench steps: the kernel every plan ran is in the logs and in the tables.
. "$(dirname "$0")/common.sh"
BUDGET=${MLA_FINAL_BUDGET:-88} # seconds after which no optional step starts
export SGL_ATTN_MLA_STRICT=1
T=${MLA_FINAL_TESTS:-$T} # (override: a dry run of this script)
venv() { # variant -> environment assignments (as mg_variant_env)
  local k=${1%%+*} e
  e="SGL_ATTN_MLA_KERNEL=$k"
  case $1 in *+*) e="$e SGL_ATTN_MLA_MMA=${1#*+}";; esac
  echo "$e"
}
mla_case() { # mode b l q hq -> attnctl case
  if [ "$1" = verify ]; then echo "verify:b=$2,l=$3,q=$4,hq=$5,mla=1,dtype=bf16,page=64"
  else echo "decode:b=$2,l=$3,hq=$5,mla=1,dtype=bf16,page=64"; fi
}
bench_name() { echo "$1:b=$2,l=$3,q=$4,hq=$5,page=64"; } # -> mla_gpu_bench / torch case
# issue 7's shapes, smallest pool first (a timeout loses the largest last)
SHAPES="decode,64,4096,1,16 decode,128,4096,1,16 decode,128,4096,1,128 verify,128,4096,2,64 decode,64,16384,1,16
decode,128,16384,1,16 decode,128,8192,1,128 verify,128,8192,2,64 decode,64,32768,1,16 decode,128,32768,1,16"
VSHAPES="decode,128,4096,1,16 decode,64,16384,1,16 decode,128,4096,1,128 verify,128,4096,2,64"
# every kept kernel configuration (tested, not timed); MLA_FINAL_MEM / _CMP:
# variants to time beside the default (empty: the default alone)
KEPT="auto simple mma mma+ring mma+base wide"
MEM_VARIANTS=${MLA_FINAL_MEM-}
CMP_VARIANTS=${MLA_FINAL_CMP-}
TESTED=$(echo $KEPT $MEM_VARIANTS $CMP_VARIANTS | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')
LAST=${MLA_FINAL_LAST-$(python3 bench/cuda/vs_last.py path mla | head -1)}

step "0. device, build"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv,noheader 2>&1
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
for f in "$A" "$T/test_mla_gpu" "$T/mla_gpu_bench" build/lib/sglattn/plugins/cuda_mla.so; do
  [ -e "$f" ] || echo "MISSING $f"; done

step "1. test_mla_gpu (quick) vs float64: defaults + every kept configuration"
list=$(echo $TESTED | tr ' ' ',')
: > "$OUT/test_variants.err"
for attempt in 1 2 3; do
  MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=$list MLA_GPU_VARIANT_TIMEOUT=6 timeout -k 3 30 $T/test_mla_gpu \
    > "$OUT/test_mla_gpu_$attempt.log" 2> "$OUT/test_mla_gpu_$attempt.err"
  rc=$?
  cat "$OUT/test_mla_gpu_$attempt.err" >> "$OUT/test_variants.err"
  echo "attempt $attempt: rc=$rc, $(grep -v FAILED "$OUT/test_mla_gpu_$attempt.log" | grep -c ' nmse ') (case, variant) passed," \
       "$(grep -c '^VARIANT_FAIL' "$OUT/test_mla_gpu_$attempt.err") failed"
  hung=$(grep -oE '^VARIANT_(HANG|FAULT) [^ ]+' "$OUT/test_mla_gpu_$attempt.err" | awk '{print $2}' | head -1)
  if [ -z "$hung" ] && { [ $rc = 124 ] || [ $rc = 137 ]; }; then
    hung=$(grep -E '^running ' "$OUT/test_mla_gpu_$attempt.err" | tail -1 | awk '{print $NF}')
  fi
  [ -n "$hung" ] || break
  echo "  $hung hung or faulted: dropped, the others again"
  echo "VARIANT_FAIL $hung (hang or device fault)" >> "$OUT/test_variants.err"
  list=$(echo "$list" | tr ',' '\n' | grep -vxF "$hung" | paste -sd, -)
  [ -n "$list" ] || break
done
FAILED=$(grep -oE '^VARIANT_FAIL [^ ]+' "$OUT/test_variants.err" | awk '{print $2}' | sort -u | tr '\n' ' ')
PASSED=""; for v in $TESTED; do
  case " $FAILED " in *" $v "*) ;; *) grep -hF " $v " "$OUT"/test_mla_gpu_[0-9].log | grep -v FAILED | grep -q ' nmse ' &&
    PASSED="$PASSED $v";; esac; done
echo "passed:$PASSED"; echo "failed: ${FAILED:-none}"
grep -hE '^VARIANT_FAIL' "$OUT/test_variants.err" | sort -u | head -12
ok() { case " $PASSED " in *" $1 "*) return 0;; esac; return 1; }
g=""; for v in auto mma mma+ring mma+base wide; do ok "$v" && g="$g,$v"; done
if [ -n "$g" ]; then
  MLA_GPU_QUICK=3 MLA_GPU_VARIANTS=${g#,} timeout -k 3 20 $T/test_mla_gpu > "$OUT/test_mla_gpu_graphs.log" 2>&1
  echo "graph replay (${g#,}): rc=$? $(grep -E 'graph replay|PASSED|FAILED' "$OUT/test_mla_gpu_graphs.log" | tr '\n' ' ' | tr -s ' ')"
fi

step "2. attnctl check: defaults (full matrix), the mma fallback (quick)"
timeout -k 3 40 "$A" check --plugin cuda_mla --json > "$OUT/check_auto.json" 2> "$OUT/check_auto.log"
echo "check auto: rc=$? $(tail -1 "$OUT/check_auto.log")"
for v in mma+base; do
  ok "$v" || { echo "check $v: skipped (failed step 1)"; continue; }
  f=${v%%+*} # check_mma.*
  env $(venv "$v") timeout -k 3 20 "$A" check --plugin cuda_mla --quick --json > "$OUT/check_$f.json" 2> "$OUT/check_$f.log"
  echo "check $v: rc=$? $(tail -1 "$OUT/check_$f.log")"
done

step "3. attnctl bench, defaults as shipped, issue 7's shapes (min time 0.2 s)"
cases=""; for sh in $SHAPES; do IFS=, read -r m b l q h <<< "$sh"; cases="$cases --case $(mla_case "$m" "$b" "$l" "$q" "$h")"; done
SGL_ATTN_MLA_LOG=1 timeout -k 3 55 "$A" bench --plugin cuda_mla $cases --min-time 0.2 --json \
  > "$OUT/bench_default.json" 2> "$OUT/bench_default.log"
echo "rc=$?"; grep -E '^  (decode|verify)' "$OUT/bench_default.log"

step "4. PyTorch matmul path, same shapes"
timeout -k 3 30 python3 bench/cuda/mla_torch.py "$OUT/mla_torch.json" > "$OUT/mla_torch.log" 2>&1
echo "torch rc=$?"

step "5. mla_gpu_bench: the default (and MLA_FINAL_MEM / _CMP), 4 shapes, until ${BUDGET} s"
mem="auto"; for v in $MEM_VARIANTS; do ok "$v" && mem="$mem,$v"; done
cmp="auto"; for v in $CMP_VARIANTS; do ok "$v" && cmp="$cmp,$v"; done
only=""; for sh in $VSHAPES; do IFS=, read -r m b l q h <<< "$sh"; only="$only;$(bench_name "$m" "$b" "$l" "$q" "$h")"; done
left=$(( BUDGET - SECONDS ))
if [ $left -gt 5 ]; then
  echo "memory-bound: $mem; compute-bound: $cmp"
  SGL_ATTN_MLA_LOG=1 MLA_BENCH_ONLY=${only#;} MLA_BENCH_DEADLINE_S=$left timeout -k 3 $(( left + 12 )) \
    $T/mla_gpu_bench "$OUT/mla_bench.json" "$mem" "$cmp" > "$OUT/mla_bench.log" 2> "$OUT/mla_bench.err"
  echo "rc=$?"; grep -vE '^ *$' "$OUT/mla_bench.log"
else
  echo "skipped: the time budget is spent"
fi

step "6. summary"
python3 bench/cuda/mla_final_summary.py "$OUT" ${LAST:+"$LAST"} | tee "$OUT/summary.txt"
step "beside the last record"
python3 bench/cuda/vs_last.py mla "$OUT"
echo "final_mla: done [$SECONDS s]"
