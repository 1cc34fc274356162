#!/usr/bin/env bash
# bench/gpu/recheck_srow.sh - after the state passes took the shared pool-dtype
# row helpers (eb60e32): the linear tests on the default set, the split set
# (v2 / v4 default / v5 and the rest) and v6, and the 64k prefill timing.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
unset SGL_ATTN_LIN_CSTATE
for q in 1 3 20; do
  LT_QUICK=$q timeout 60 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_q$q.log" 2>&1
  echo "test_lin_gpu LT_QUICK=$q rc=$? $(tail -1 "$OUT/test_lin_gpu_q$q.log")"
done
timeout 25 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 20 $T/bench_lin "$OUT/bench_pre_default_t16.json" $P \
  > "$OUT/bench_pre_default_t16.log" 2>&1; echo "bench rc=$?"; grep prefill "$OUT/bench_pre_default_t16.log"
echo "recheck_srow: done [$SECONDS s]"
