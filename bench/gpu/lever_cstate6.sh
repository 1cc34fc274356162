#!/usr/bin/env bash
# bench/gpu/lever_cstate6.sh - SGL_ATTN_LIN_CSTATE=v6 (lk_cstate6.cu): v5's
# state pass (P = -W^T KD made first, S' = S diag(eG) + U^T KD + S P) on
# warpgroup MMA: one warpgroup holds 64 state rows in wgmma accumulators, 12
# wgmma per chunk, no ldmatrix.  Checked, sanitised and timed beside the
# default (v2), v4 and v5 on the same binary.  Prebuilt build/, repo root, OUT=dir.
#   1. test_lin_gpu LT_QUICK=20 (v6: both state dtypes, gdn, kda, V 64 / 128 (96: v5), long
#      ragged requests with state carried in and padding, one 16k-token request beside the default)
#   2. compute-sanitizer memcheck and racecheck (LT_QUICK=21)
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8): default, v4, v5, v6 at tile 16
#   4. ncu per-kernel durations of the first 16 launches (two forwards), v6
#   5. attnctl check with v6: gdn and kda on cuda_attn
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_CSCAN_M SGL_ATTN_LIN_CSCAN_VT
sel() { case $1 in default) echo "SGL_ATTN_LIN_CSTATE=auto";; v4) echo "SGL_ATTN_LIN_CSTATE=v4";; v5) echo "SGL_ATTN_LIN_CSTATE=v5";; v6) echo "SGL_ATTN_LIN_CSTATE=v6";; esac; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: the v6 set (LT_QUICK=20)"
LT_QUICK=20 timeout 40 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_cs6.log" 2>&1
echo "cs6 set rc=$? $(tail -1 "$OUT/test_lin_gpu_cs6.log")"
grep -E "^(ok|FAIL) +[a-z]|SKIP" "$OUT/test_lin_gpu_cs6.log" | head -12

step "2. compute-sanitizer memcheck / racecheck (LT_QUICK=21), v6"
for tool in memcheck racecheck; do
  LT_QUICK=21 timeout $([ $tool = memcheck ] && echo 12 || echo 20) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_cs6_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_cs6_$tool.log" | tail -1) $(tail -1 "$OUT/lin_cs6_$tool.log")"
done

step "3. bench_lin prefill T=65536: tile 16 default, v4, v5, v6"
for t in 16; do
  for v in default v4 v5 v6; do
    env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=$t timeout 12 \
      $T/bench_lin "$OUT/bench_pre_${v}_t$t.json" $P > "$OUT/bench_pre_${v}_t$t.log" 2>&1
    echo "$v t$t rc=$?"; grep prefill "$OUT/bench_pre_${v}_t$t.log"
  done
done

step "4. ncu kernel durations (first 16 launches): v6"
env $(sel v6) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 10 \
  ncu --clock-control none --metrics gpu__time_duration.sum -c 16 $T/bench_lin /dev/null $P > "$OUT/ncu_v6.txt" 2>&1
echo "v6 rc=$?"

step "5. attnctl check, v6: gdn and kda stacked on cuda_attn (whole matrix)"
for k in gdn kda; do
  SGL_ATTN_LIN_CSTATE=v6 timeout 40 build/bin/attnctl check --plugin ${k}_cuda/cuda_attn > "$OUT/check_v6_$k.log" 2>&1
  echo "check v6 ${k}_cuda/cuda_attn rc=$? $(tail -1 "$OUT/check_v6_$k.log")"
done

python3 bench/gpu/lever_table.py "$OUT" default,v4,v5,v6 16 ncu_v6.txt \
  "default: v4 since run 18 (v2 before); v5: P first, one product per chunk; v6: v5 on wgmma" \
  "ms per kernel, v6 (ncu, mean of the launches profiled; state pass v2 1.22 ms, v4 1.160, v5 1.480; P 0.167; output v2 0.208, with Unew 0.288):"
echo "lever_cstate6: done [$SECONDS s]"
