#!/usr/bin/env bash
# bench/gpu/lever_mla_race.sh - is racecheck's report on cuda_mla's wgmma /
# wgmma0 kernels a race or the tool's model of named barriers?  Run 5 showed
# 29 hazards shipped and 17 with every bar.arrive made a bar.sync
# (MLA_RACECHECK_SYNC_ONLY).  Here the same test under racecheck on a third
# build, MLA_RACECHECK_BAR0 (build/race/cuda_mla.so): every barrier that all
# 256 threads meet issued as __syncthreads() - the same barrier for the
# hardware, so the same ordering as SYNC_ONLY.  If that build is clean, the
# kernels' ordering is race-free under block-wide barriers and the shipped
# build differs only in bar.arrive's release, which PTX defines for this use.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
for b in bar0 shipped; do
  so=$P/cuda_mla.so; [ $b = bar0 ] && so=$PWD/build/race/cuda_mla.so
  [ -e "$so" ] || { echo "MISSING $so"; continue; }
  SGL_ATTN_MLA_PLUGIN=$so SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=auto,wgmma timeout 70 \
    compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/mla_racecheck_$b.log" 2>&1
  echo "racecheck $b rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/mla_racecheck_$b.log" | tr '\n' ' ')"
  grep -E "^========= Error" -A1 "$OUT/mla_racecheck_$b.log" | grep -oE "(Read|Write) access at [a-z0-9_]+.*cu:[0-9]+" |
    sed -E 's/\(mla_fwd_args.*\)\+0x[0-9a-f]+//' | paste - - | sort | uniq -c | head -12
done
echo "lever_mla_race: done [$SECONDS s]"
