#!/usr/bin/env bash
# bench/gpu/final_linear.sh - the CUDA linear-attention wrappers' part of the
# record run (bench/gpu/final.sh): <= ~90 s on the H200, prebuilt build/, OUT=dir.
#   1. test_lin_gpu LT_QUICK=1: every kind's default kernels, the tiles, the
#      opt-in split kernels (SGL_ATTN_LIN_DECODE / CHUNK1 / CHUNK2 = split),
#      graph capture / replay, bad inputs, against the float64 reference
#   2. test_lin_e2e: a hybrid model, gdn_cuda over cuda_attn vs gdn over cpu_ref
#   3. attnctl check --plugin gdn_cuda/cuda_attn, defaults
#   4. compute-sanitizer memcheck on the split kernels only (LT_QUICK=3)
#   5. bench_lin: defaults, then every split kernel on (BENCH_QUICK)
#   6. the plain PyTorch GDN on the same shapes, same run
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
step "1. test_lin_gpu (quick: defaults, tiles, split kernels, graphs, bad inputs)"
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "rc=$?"
grep -E "^(FAIL)|failure|passed|SKIP" "$OUT/test_lin_gpu.log" | tail -12
step "2. test_lin_e2e"
timeout 25 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
step "3. attnctl check gdn_cuda/cuda_attn (defaults)"
timeout 30 "$A" check --plugin gdn_cuda/cuda_attn --quick --json > "$OUT/check_gdn.json" 2> "$OUT/check_gdn.log"
echo "rc=$? $(tail -1 "$OUT/check_gdn.log")"
step "4. memcheck, split kernels"
LT_QUICK=3 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_lin_gpu $P \
  > "$OUT/sanitizer_memcheck_split.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck_split.log" | tail -1)"
step "5. bench_lin: defaults, then split"
BENCH_QUICK=1 timeout 30 $T/bench_lin "$OUT/bench_default.json" $P > "$OUT/bench_default.log" 2>&1; echo "rc=$?"
grep -E "decode|prefill" "$OUT/bench_default.log" | head -12
SGL_ATTN_LIN_DECODE=split SGL_ATTN_LIN_CHUNK1=split SGL_ATTN_LIN_CHUNK2=split BENCH_QUICK=1 timeout 30 \
  $T/bench_lin "$OUT/bench_split.json" $P > "$OUT/bench_split.log" 2>&1; echo "rc=$?"
grep -E "decode|prefill" "$OUT/bench_split.log" | head -12
step "6. plain PyTorch GDN"
timeout 40 python3 bench/cuda/linear_torch.py "$OUT/torch_linear.json" > "$OUT/torch_linear.log" 2>&1
echo "rc=$?"; tail -9 "$OUT/torch_linear.log"
echo "final_linear: done [$SECONDS s]"
