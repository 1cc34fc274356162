#!/usr/bin/env bash
# bench/gpu/lin_check.sh - the CUDA linear wrappers' checks on the GPU, no
# timing (every step capped; ~2 minutes):
#   1. test_lin_gpu, every config (every kind and kernel, both state-pass tiles
#      and state dtypes, f16 / f32 activations, kernel=simple, the odd shapes),
#      graph capture / replay, bad inputs, against the float64 reference;
#      test_lin_e2e (a hybrid model, gdn_cuda/cuda_attn against gdn/cpu_ref)
#   2. attnctl check of the five wrappers against cpu_ref's float64 reference,
#      the whole matrix: stacked on cuda_attn by name (<kind>_cuda/cuda_attn),
#      and named alone (the stack the host's selection builds)
#   3. compute-sanitizer memcheck of the gdn stack's matrix
# The stacks' f32 / f64 cases are refused by cuda_attn (it serves f16 / bf16):
# "not supported", not failures.
# Passing: rc=0 and "0 failures" for the tests, every check "0 failed, ... 0
# errors", memcheck "ERROR SUMMARY: 0 errors".
. "$(dirname "$0")/common.sh"
need "$A" "$T/test_lin_gpu" "$T/test_lin_e2e" "$P/gdn_cuda.so"
step "1. test_lin_gpu (every config), test_lin_e2e"
timeout 150 "$T/test_lin_gpu" "$P" > "$OUT/test_lin_gpu.log" 2>&1
echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log") [$SECONDS s]"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu.log" | head -12
timeout 30 "$T/test_lin_e2e" "$P" > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
step "2. attnctl check, whole matrix: <kind>_cuda/cuda_attn, <kind>_cuda"
for k in gdn mamba2 kda lightning short_conv; do
  for s in ${k}_cuda/cuda_attn ${k}_cuda; do
    f=${s//\//_}
    timeout 40 "$A" check --plugin "$s" --json > "$OUT/check_$f.json" 2> "$OUT/check_$f.log"
    echo "check $s rc=$? $(tail -1 "$OUT/check_$f.log")"
    grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_$f.log" | sed 's/^/    /' | head -6
  done
done
step "3. memcheck, the gdn stack's matrix"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin gdn_cuda/cuda_attn \
  > "$OUT/memcheck_gdn.log" 2>&1
echo "memcheck gdn_cuda/cuda_attn rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_gdn.log" | tail -1)"
echo "lin_check: done [$SECONDS s]"
