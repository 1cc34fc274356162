#!/usr/bin/env bash
# bench/gpu/final_linear.sh - the CUDA linear-attention wrappers' part of the
# record run (bench/gpu/final.sh): ~110 s on the H200.
#   1. test_lin_gpu LT_QUICK=1: every kernel at least once (each kind's
#      defaults, both state-pass tiles, both state dtypes, f16 / f32
#      activations, the token-by-token variant, the fused decode's K), graph
#      capture / replay, bad inputs, against the float64 reference
#   2. test_lin_e2e: a hybrid model, gdn_cuda over cuda_attn vs gdn over cpu_ref
#   3. attnctl check --plugin gdn_cuda/cuda_attn (quick)
#   4. bench_lin: the decode and 64k prefill timings
#   5. the plain PyTorch GDN on the same shapes, same run
#   6. the ratio table (bench/cuda/linear_summary.py), then the figures beside
#      the last record's (bench/cuda/vs_last.py)
#   7. compute-sanitizer memcheck on the chunked extend's configs (LT_QUICK=3;
#      last, so a cut loses only it)
. "$(dirname "$0")/common.sh"
need "$A" "$T/test_lin_gpu" "$T/test_lin_e2e" "$T/bench_lin" "$P/gdn_cuda.so"
step "1. test_lin_gpu (quick: every kernel, graphs, bad inputs)"
LT_QUICK=1 timeout 45 "$T/test_lin_gpu" "$P" > "$OUT/test_lin_gpu.log" 2>&1; echo "rc=$?"
grep -E "^(FAIL)|failure|passed|SKIP" "$OUT/test_lin_gpu.log" | tail -12
step "2. test_lin_e2e"
timeout 25 "$T/test_lin_e2e" "$P" > "$OUT/test_lin_e2e.log" 2>&1; echo "rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
step "3. attnctl check gdn_cuda/cuda_attn"
timeout 30 "$A" check --plugin gdn_cuda/cuda_attn --quick --json > "$OUT/check_gdn.json" 2> "$OUT/check_gdn.log"
echo "rc=$? $(tail -1 "$OUT/check_gdn.log")"
step "4. bench_lin"
BENCH_QUICK=1 timeout 30 "$T/bench_lin" "$OUT/bench_default.json" "$P" > "$OUT/bench_default.log" 2>&1; echo "rc=$?"
grep -E "decode|prefill" "$OUT/bench_default.log" | head -12
step "5. plain PyTorch GDN"
timeout 40 python3 bench/cuda/linear_torch.py "$OUT/torch_linear.json" > "$OUT/torch_linear.log" 2>&1
echo "rc=$?"; tail -9 "$OUT/torch_linear.log"
step "6. summary"
python3 bench/cuda/linear_summary.py "$OUT" | tee "$OUT/summary.txt"
python3 bench/cuda/vs_last.py linear "$OUT"
step "7. memcheck, chunked extend"
LT_QUICK=3 timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 "$T/test_lin_gpu" "$P" \
  > "$OUT/sanitizer_memcheck_chunk.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck_chunk.log" | tail -1)"
echo "final_linear: done [$SECONDS s]"
