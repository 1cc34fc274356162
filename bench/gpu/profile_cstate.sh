#!/usr/bin/env bash
# bench/gpu/profile_cstate.sh - where the linear prefill's state pass spends its
# time: Nsight Compute (clocks left alone) on one launch of the state pass at
# 64k tokens (Qwen3.5 TP8), for the default (v2), v5 and v6: speed of light,
# memory workload, scheduler and the per-reason warp stall averages (cycles a
# warp spends in each reason between two issued instructions).
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
unset SGL_ATTN_LIN_CSTATE
for v in auto v5 v6; do
  SGL_ATTN_LIN_CSTATE=$v BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 60 \
    ncu --clock-control none -k regex:lin_cstate -c 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__cycles_elapsed.max \
    $T/bench_lin /dev/null $P > "$OUT/ncu_cstate_$v.txt" 2>&1
  echo "== $v rc=$?"
  grep -E "lin_cstate|Duration|Throughput|Issued Ipc|Warp Cycles Per Issued|Eligible Warps|Active Warps Per|inst_executed.sum|cycles_elapsed.max" "$OUT/ncu_cstate_$v.txt" | head -16
  grep -E "issue_stalled_.*ratio" "$OUT/ncu_cstate_$v.txt" | awk '$NF+0 >= 0.05' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -nr | head -10
done
echo "profile_cstate: done [$SECONDS s]"
