#!/usr/bin/env bash
# bench/gpu/lin_check.sh - attnctl check (the whole matrix, not --quick) of the
# five CUDA linear wrappers stacked on cuda_attn, against cpu_ref's float64
# reference, with the defaults; then memcheck on the gdn stack's matrix.  The
# stack's f32 / f64 cases are refused by cuda_attn (it serves f16 / bf16):
# "not supported", not failures.  ~60 s.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset $(compgen -v SGL_ATTN_LIN_)
A=build/bin/attnctl
for k in gdn mamba2 kda lightning short_conv; do
  timeout 40 $A check --plugin ${k}_cuda/cuda_attn --json > "$OUT/check_$k.json" 2> "$OUT/check_$k.log"
  echo "check ${k}_cuda/cuda_attn rc=$? $(tail -1 "$OUT/check_$k.log")"
  grep -E "^  (pass|FAIL|fail)" "$OUT/check_$k.log" | sed 's/^/    /'
done
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $A check --plugin gdn_cuda/cuda_attn > "$OUT/memcheck_gdn.log" 2>&1
echo "memcheck gdn_cuda/cuda_attn rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_gdn.log" | tail -1)"
echo "lin_check: done [$SECONDS s]"
