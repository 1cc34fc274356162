#!/usr/bin/env bash
# bench/gpu/lever_cstate5.sh - SGL_ATTN_LIN_CSTATE=v5 (lk_cstate5.cu): P = -W^T KD
# made first by a parallel kernel, so the serial state pass does one product
# per chunk (S P on the chain, U^T KD off it) with one barrier, and the
# output kernel makes Unew = U - W Hs^T.  Checked, sanitised and timed beside
# the default (v2) and v4 on the same binary.
# Prebuilt build/, repo root, OUT=dir; every step capped.
#   1. test_lin_gpu LT_QUICK=18 (v5: tiles 16 and 32, both state dtypes, gdn,
#      kda, mamba2 (v2 under the switch), long ragged requests with state
#      carried in and padding, one 16k-token request beside the default pass)
#   2. compute-sanitizer memcheck and racecheck (LT_QUICK=19)
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8): default, v4, v5 at tile 16; v5 at tile 32
#   4. ncu per-kernel durations of the first 16 launches (two forwards), v5, tile 16
#   then the table: TFLOP/s (4 T HV K V), us and x default, ms per kernel.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_CSCAN_M SGL_ATTN_LIN_CSCAN_VT
sel() { case $1 in default) echo "SGL_ATTN_LIN_CSTATE=auto";; v4) echo "SGL_ATTN_LIN_CSTATE=v4";; v5) echo "SGL_ATTN_LIN_CSTATE=v5";; esac; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: the v5 set (LT_QUICK=18)"
LT_QUICK=18 timeout 40 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_cs5.log" 2>&1
echo "cs5 set rc=$? $(tail -1 "$OUT/test_lin_gpu_cs5.log")"
grep -E "^(ok|FAIL) +[a-z]|SKIP" "$OUT/test_lin_gpu_cs5.log" | head -12

step "2. compute-sanitizer memcheck / racecheck (LT_QUICK=19), v5"
for tool in memcheck racecheck; do
  LT_QUICK=19 timeout $([ $tool = memcheck ] && echo 12 || echo 20) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_cs5_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_cs5_$tool.log" | tail -1) $(tail -1 "$OUT/lin_cs5_$tool.log")"
done

step "3. bench_lin prefill T=65536: tile 16 default, v4, v5; tile 32 v5"
for t in 16 32; do
  for v in default v4 v5; do
    [ $t = 32 ] && [ $v != v5 ] && continue
    env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=$t timeout 12 \
      $T/bench_lin "$OUT/bench_pre_${v}_t$t.json" $P > "$OUT/bench_pre_${v}_t$t.log" 2>&1
    echo "$v t$t rc=$?"; grep prefill "$OUT/bench_pre_${v}_t$t.log"
  done
done

step "4. ncu kernel durations (first 16 launches): v5, tile 16"
env $(sel v5) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 10 \
  ncu --clock-control none --metrics gpu__time_duration.sum -c 16 $T/bench_lin /dev/null $P > "$OUT/ncu_v5.txt" 2>&1
echo "v5 rc=$?"

step "5. attnctl check, v5: gdn and kda stacked on cuda_attn (whole matrix)"
for k in gdn kda; do
  SGL_ATTN_LIN_CSTATE=v5 timeout 40 build/bin/attnctl check --plugin ${k}_cuda/cuda_attn > "$OUT/check_v5_$k.log" 2>&1
  echo "check v5 ${k}_cuda/cuda_attn rc=$? $(tail -1 "$OUT/check_v5_$k.log")"
done

python3 bench/gpu/lever_table.py "$OUT" default,v4,v5 16,32 ncu_v5.txt \
  "default: v2, two __syncthreads per chunk; v4: named-barrier hand-offs; v5: P first, one product per chunk" \
  "ms per kernel, v5 tile 16 (ncu, mean of the launches profiled; v2's state pass 1.22 ms, v4's 1.160 (run 15), output 0.208):"
echo "lever_cstate5: done [$SECONDS s]"
