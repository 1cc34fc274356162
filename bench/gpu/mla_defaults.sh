#!/usr/bin/env bash
# bench/gpu/mla_defaults.sh - cuda_mla's checks on the GPU, no timing (every step capped):
# every kept kernel configuration against float64 (strict, plan log: which
# kernel each plan ran), the whole test set with the defaults, graph replay,
# compute-sanitizer memcheck on every configuration and racecheck on the
# defaults, attnctl check on the full matrix (alone and under the validation
# layer).  ~3 minutes.  Variants (docs/cuda_mla.md):
# auto = the defaults, mma = the mma kernel at every tile size, mma+ring = what
# SM 10.x runs, mma+base = what SM 8.0 runs, wide, simple.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_mla.so" "$T/test_mla_gpu"
ALL=auto,simple,mma,mma+ring,mma+base,wide
plans() {
  echo "plans: tma $(grep -c 'mma tma' "$1"), ring $(grep -c 'mma ring' "$1"), two $(grep -c 'mma two' "$1")," \
       "base $(grep -c 'mma base' "$1"), wide $(grep -c 'runs wide' "$1"), simple $(grep -c 'runs simple' "$1")"
}
step "1. test_mla_gpu: quick set (every configuration), full set (defaults), graph replay"
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=$ALL timeout 60 $T/test_mla_gpu > "$OUT/test_mla_gpu.log" 2>&1
echo "quick rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu.log" | tr '\n' ' ') $(plans "$OUT/test_mla_gpu.log")"
grep -E '^VARIANT_(FAIL|HANG|FAULT)' "$OUT/test_mla_gpu.log" | head -12
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_VARIANTS=auto timeout 40 $T/test_mla_gpu > "$OUT/test_mla_gpu_full.log" 2>&1
echo "full rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu_full.log" | tr '\n' ' ') $(plans "$OUT/test_mla_gpu_full.log")"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=3 MLA_GPU_VARIANTS=$ALL timeout 30 $T/test_mla_gpu > "$OUT/graphs.log" 2>&1
echo "graphs rc=$? $(grep -E 'graph replay|PASSED|FAILED' "$OUT/graphs.log" | tr '\n' ' ' | tr -s ' ') $(plans "$OUT/graphs.log")"
step "2. compute-sanitizer: memcheck of every configuration (16 / 32 / 128 rows), racecheck of the defaults"
SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=$ALL timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
  $T/test_mla_gpu > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ')"
SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=auto timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 \
  $T/test_mla_gpu > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/racecheck.log" | tr '\n' ' ')"
grep -oE 'Race reported between [A-Za-z]+ access at [^(]+' "$OUT/racecheck.log" | sort | uniq -c | sort -rn | head -6
step "3. attnctl check --plugin cuda_mla and validate/cuda_mla (full matrix, defaults), memcheck on --quick"
timeout 40 $A check --plugin cuda_mla --json > "$OUT/check.json" 2> "$OUT/check.log"; echo "check rc=$? $(tail -1 "$OUT/check.log")"
timeout 40 $A check --plugin validate/cuda_mla --json > "$OUT/check_validate.json" 2> "$OUT/check_validate.log"
echo "check validate/cuda_mla rc=$? $(tail -1 "$OUT/check_validate.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $A check --plugin cuda_mla --quick > "$OUT/check_memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/check_memcheck.log" | tail -1)"
echo "mla_defaults: done [$SECONDS s]"
