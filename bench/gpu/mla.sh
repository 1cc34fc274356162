#!/usr/bin/env bash
# bench/gpu/mla.sh - the cuda_mla GPU sweep in one call (about 4 minutes; every
# step is capped and the script goes on after a failure).  It validates and
# times every tuning variant so one run picks the winners (docs/cuda_mla.md,
# "First GPU run and tuning"):
#   0. device, commit, SASS summary of the plugin (if cuobjdump is there)
#   1. test_mla_gpu (MLA_GPU_QUICK=1) per kernel family, every variant against
#      a float64 reference; a failing family is re-run one variant at a time
#      (not after a timeout: a hang is the family's), and only variants that
#      passed are timed; then graph capture / replay (reported, not gating)
#   2. attnctl check --plugin cuda_mla --quick per variant (auto: full matrix)
#   3. mla_gpu_bench: issue 7's shapes x the variants that passed
#   4. PyTorch matmul path on the same shapes, same run
#   5. compute-sanitizer memcheck and racecheck, two small cases, fast kernels
#   6. the tables (every variant, class winners, ratios and targets) printed
#      last, and $OUT/mla_summary.json (GPU name, date, commit, winners)
# A variant is "kernel[+pfN][+base|+deep|+two][+bal]": SGL_ATTN_MLA_KERNEL, _PREFETCH, _MMA, _PLAN.
# The record run's part is bench/gpu/final_mla.sh (this sweep is the long form).
# Run from the repo root with a prebuilt build/ (make cuda_mla cuda_mla_tests
# attnctl; cmocka / cJSON in build/lib):   OUT=/some/dir bash bench/gpu/mla.sh
set -u
OUT=${OUT:-/tmp/mla_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
# the tests and the bench find the plugin beside themselves (../lib/sglattn/plugins)
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_mla.so
T=build/tests
step() { echo; echo "### $*"; }
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s]"; }

# variants: memory-bound shapes (16 heads) and compute-bound ones (128 rows)
# wgmma0 = the wgmma kernel exactly as in the first run (same-run baseline)
MEM_V="auto mma mma+two+pf4 mma+two+pf4+bal wgmma0 narrow+pf0 narrow narrow+pf4 narrow+bal"
CMP_V="auto wgmma0 wgmma wgmma+pf1 wgmma+pf2"
FAMILIES=("simple,mma,mma+deep+pf6,mma+two+pf4,mma+two+pf4+bal" "wgmma0" "wgmma,wgmma+pf1,wgmma+pf2" "narrow+pf0,narrow,narrow+pf4,narrow+bal" "auto")
# a kernel this device cannot run fails at create instead of running mma under
# the variant's name (run 2 timed mma for every TMA variant)
export SGL_ATTN_MLA_STRICT=1

venv() { # variant -> environment assignments
  local k=${1%%+*} e="SGL_ATTN_MLA_KERNEL=${1%%+*}" p
  local rest=${1#"$k"}
  for p in ${rest//+/ }; do
    case $p in pf*) e="$e SGL_ATTN_MLA_PREFETCH=${p#pf}";; base|deep|two) e="$e SGL_ATTN_MLA_MMA=$p";;
      bal) e="$e SGL_ATTN_MLA_PLAN=balanced";; esac
  done
  echo "$e"
}

step "0. device and build"; el
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,memory.total --format=csv
  echo "commit $SGL_ATTN_COMMIT"; date -u +%FT%TZ; } | tee "$OUT/gpu.txt"
if command -v cuobjdump >/dev/null; then
  timeout 40 cuobjdump --dump-sass "$SO" > "$OUT/cuda_mla.sass" 2>&1
  awk '/Function :/{f=$3} /arch = /{a=$3}
       /HMMA/{h[a" "f]++} /HGMMA/{g[a" "f]++} /UTMALDG/{m[a" "f]++} /LDGSTS/{c[a" "f]++}
       /LDL|STL/{x[a" "f]++} /WARPGROUP.DEPBAR/{d[a" "f]++} /Function :/{k[a" "f]=1}
       END{for(i in k) printf "%-80s HMMA %4d HGMMA %4d UTMALDG %3d LDGSTS %4d DEPBAR %3d LDL/STL %d\n",
           i, h[i], g[i], m[i], c[i], d[i], x[i]}' "$OUT/cuda_mla.sass" | sort > "$OUT/sass_summary.txt"
  grep sm_90a "$OUT/sass_summary.txt" | grep -E "wgmma|narrow|mma_kernelILi1"
  gzip -f "$OUT/cuda_mla.sass"
fi

step "1. GPU correctness (MLA_GPU_QUICK=1): every variant vs float64; graph replay"; el
PASSED=""
for fam in "${FAMILIES[@]}"; do
  log="$OUT/test_mla_gpu_${fam%%,*}.log"
  MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=$fam timeout 50 $T/test_mla_gpu > "$log" 2>&1
  rc=$?
  echo "family $fam: rc=$rc $(grep -E 'PASSED|FAILED' "$log" | tr '\n' ' ')"
  if [ $rc = 0 ]; then PASSED="$PASSED ${fam//,/ }"; continue; fi
  grep -E "FAIL|ERROR|error|nmse [0-9.e+-]+ >" "$log" | head -8
  [ $rc = 124 ] && { echo "  timed out: the family is not timed"; continue; }
  for v in ${fam//,/ }; do # one at a time, so a fault in one does not hide the others
    MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=$v timeout 30 $T/test_mla_gpu > "$OUT/test_mla_gpu_$v.log" 2>&1
    r=$?; echo "  $v: rc=$r"; [ $r = 0 ] && PASSED="$PASSED $v"
  done
done
MLA_GPU_QUICK=3 timeout 45 $T/test_mla_gpu > "$OUT/test_mla_gpu_graphs.log" 2>&1
echo "graph replay: rc=$? $(grep -E 'graph replay|PASSED|FAILED' "$OUT/test_mla_gpu_graphs.log" | tr '\n' ' ')"
echo "passed:$PASSED"
grep -hE " nmse " "$OUT"/test_mla_gpu_*.log | grep -v "graph replay" | awk '{v=$(NF-2); x=$NF+0; if (!(v in m) || x > m[v]) m[v]=x; n[v]++}
  END{for (v in m) printf "  %-16s %3d case runs, worst nmse %.2e\n", v, n[v], m[v]}' | sort
ok() { case " $PASSED " in *" $1 "*) return 0;; esac; return 1; }
MEM_RUN=""; for v in $MEM_V; do ok "$v" && MEM_RUN="$MEM_RUN,$v"; done
CMP_RUN=""; for v in $CMP_V; do ok "$v" && CMP_RUN="$CMP_RUN,$v"; done
MEM_RUN=${MEM_RUN#,}; CMP_RUN=${CMP_RUN#,}

step "2. attnctl check per variant (quick matrix; auto: full)"; el
if [ -x "$A" ]; then
  for v in $(echo "$MEM_V $CMP_V" | tr ' ' '\n' | awk '!s[$0]++'); do
    q="--quick"; [ "$v" = auto ] && q=""
    env $(venv "$v") timeout 40 "$A" check --plugin cuda_mla $q --json > "$OUT/check_$v.json" 2> "$OUT/check_$v.log"
    echo "check $v: rc=$? $(tail -1 "$OUT/check_$v.log")"
  done
else
  echo "attnctl not built here: skipped (step 1 covers correctness)"
fi

step "3. timing (mla_gpu_bench; memory-bound: $MEM_RUN; compute-bound: $CMP_RUN)"; el
if [ -n "$MEM_RUN$CMP_RUN" ]; then
  SGL_ATTN_MLA_LOG=1 timeout 150 $T/mla_gpu_bench "$OUT/mla_bench.json" "${MEM_RUN:-auto}" "${CMP_RUN:-auto}" \
    2> "$OUT/mla_bench.err" | tee "$OUT/mla_bench.log" | grep -v "^ *$"
  rc=${PIPESTATUS[0]}; echo "bench rc=$rc"
  [ $rc = 124 ] && echo "bench timed out; last started: $(tail -1 "$OUT/mla_bench.err")"
else
  echo "no variant passed step 1: nothing timed"
fi

step "4. PyTorch matmul path, same shapes"; el
timeout 60 python3 bench/cuda/mla_torch.py "$OUT/mla_torch.json" > "$OUT/mla_torch.log" 2>&1
echo "torch rc=$?"

step "5. compute-sanitizer (MLA_GPU_QUICK=2: decode 16 heads, verify 64 heads x 2)"; el
for tool in memcheck racecheck; do
  MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=mma,wgmma,narrow timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 \
    $T/test_mla_gpu > "$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/sanitizer_$tool.log" | tr '\n' ' ')"
done

step "6. summary"; el
python3 bench/cuda/mla_summary.py "$OUT/mla_bench.json" "$OUT/mla_torch.json" "$OUT/mla_summary.json" "$OUT/gpu.txt" \
  | tee "$OUT/summary.txt"
el
