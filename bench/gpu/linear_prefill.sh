#!/usr/bin/env bash
# bench/gpu/linear_prefill.sh - issue 22's linear-attention prefill figures, ours and plain PyTorch in
# one call: ~1-2 min on the H100 / H200 (an estimate, not yet run: the gdn half of step 1 took 50 s in
# run 9 with the host filling every input row, now 4,096 rows; the plain PyTorch GDN 1x64k ~0.19 s a
# call, each torch shape about 7 calls; cap 240).
#   1. bench_lin BENCH_SET=prefill: gdn_cuda at Qwen3.5 TP8 1x64k, 1x32k, 16x8k (and 1x64k with a bf16
#      state) and Qwen3-Next 1x32k, 8x4k; kda_cuda at Kimi-Linear-48B-A3B TP4 (8 heads, K = V = 128)
#      1x64k, 16x8k; mamba2_cuda at Nemotron-H-8B (128 heads, P 64, 8 groups, N 128) 1x64k, 16x8k
#   2. bench/cuda/linear_torch.py TORCH_LIN_SET=prefill: plain PyTorch GDN (every gdn shape), KDA and Mamba2
#      SSD at the shapes above, each after its chunked-vs-recurrent self-check
#   3. flash-linear-attention's Triton GDN and KDA on the gdn and kda shapes (bench/cuda/linear_fla.py),
#      when the call carries .carry/fla-src.tgz (bench/gpu/pack_build.sh with FLA_SRC / EINOPS_SRC); its
#      Triton autotuning takes ~1 min a shape (FLA_TIMEOUT, default 480 s; FLA_SHAPES picks shapes)
#   4. the table (bench/cuda/linear_summary.py OUT prefill): us, TFLOP/s (4 T HV K V), the chunked
#      matmuls' TFLOP/s, ours / torch, FLA / ours, issue 22's targets
# LIN_PREFILL_DRY=1 (here, no GPU): bench_lin_emu BENCH_SMOKE=1 (the tiny gdn, kda and mamba2 cases on the
# CPU emulator of CUDA), the torch self-checks on the CPU, the table over the smoke JSON.
. "$(dirname "$0")/common.sh"
if [ "${LIN_PREFILL_DRY:-0}" = 1 ]; then
  need "$T/bench_lin_emu"
  step "1. bench_lin_emu BENCH_SMOKE=1 (dry run)"
  BENCH_SMOKE=1 BENCH_QUICK=1 timeout 300 "$T/bench_lin_emu" "$OUT/bench_prefill.json" > "$OUT/bench_prefill.log" 2>&1
  echo "rc=$?"; grep -E "prefill|fail" "$OUT/bench_prefill.log"
  step "2. torch self-checks (CPU)"
  timeout 120 python3 bench/cuda/linear_torch.py --self-check 2>&1 | tee "$OUT/torch_prefill.log"
  echo "rc=${PIPESTATUS[0]}"
else
  need "$T/bench_lin" "$P/gdn_cuda.so" "$P/kda_cuda.so" "$P/mamba2_cuda.so"
  step "1. bench_lin BENCH_SET=prefill"
  BENCH_SET=prefill timeout 120 "$T/bench_lin" "$OUT/bench_prefill.json" "$P" > "$OUT/bench_prefill.log" 2>&1
  echo "rc=$?"; grep -E "prefill|fail" "$OUT/bench_prefill.log"
  step "2. plain PyTorch GDN, KDA, Mamba2 SSD"
  TORCH_LIN_SET=prefill timeout 150 python3 bench/cuda/linear_torch.py "$OUT/torch_prefill.json" \
    > "$OUT/torch_prefill.log" 2>&1
  echo "rc=$?"; tail -10 "$OUT/torch_prefill.log"
  step "3. flash-linear-attention (same-call anchor)"
  if [ -f .carry/fla-src.tgz ]; then
    FLA_PATH=$(mktemp -d) && tar xzf .carry/fla-src.tgz -C "$FLA_PATH" && cat "$FLA_PATH/COMMIT"
    FLA_PATH=$FLA_PATH FLA_SHAPES=${FLA_SHAPES:-} timeout "${FLA_TIMEOUT:-480}" python3 bench/cuda/linear_fla.py "$OUT/fla_prefill.json" > "$OUT/fla_prefill.log" 2>&1
    echo "rc=$?"; grep -E "self-check|fla prefill|Error" "$OUT/fla_prefill.log" | tail -12
    rm -rf "$FLA_PATH"
  else
    echo "no .carry/fla-src.tgz: no FLA rows"
  fi
fi
step "4. summary"
python3 bench/cuda/linear_summary.py "$OUT" prefill | tee "$OUT/summary_prefill.txt"
echo "linear_prefill: done [$SECONDS s]"
