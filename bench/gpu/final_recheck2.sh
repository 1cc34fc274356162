#!/usr/bin/env bash
# bench/gpu/final_recheck2.sh - third call of the 2026-12-02 record run: is
# racecheck's report on the MLA TMA/wgmma kernels (final_recheck.sh: hazards
# only on shared words handed between the two warpgroups by bar.arrive ->
# bar.sync) a race, or racecheck not taking bar.arrive as a release?  The
# same test under racecheck twice: the shipped kernels, then a build where
# every bar.arrive is a bar.sync (MLA_RACECHECK_SYNC_ONLY, cuda_mla.so in
# build/race/).  Then the linear split kernels' racecheck, with more time.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
for b in shipped sync_only; do
  step "racecheck cuda_mla ($b)"
  so=$P/cuda_mla.so; [ $b = sync_only ] && so=$PWD/build/race/cuda_mla.so
  SGL_ATTN_MLA_PLUGIN=$so SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=auto,wgmma timeout 60 \
    compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_mla_gpu > "$OUT/mla_racecheck_$b.log" 2>&1
  echo "rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/mla_racecheck_$b.log" | tr '\n' ' ')"
  grep -E "^========= Error" "$OUT/mla_racecheck_$b.log" | sed -E 's/\(mla_fwd_args.*\)\+0x[0-9a-f]+//' | sort | uniq -c | head -12
done
step "racecheck linear split kernels (LT_QUICK=3)"
LT_QUICK=3 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_racecheck.log" 2>&1
echo "rc=$? $(grep -E 'RACECHECK SUMMARY|failures' "$OUT/lin_racecheck.log" | tr '\n' ' ')"
grep -cE "^ok" "$OUT/lin_racecheck.log"
echo "final_recheck2: done [$SECONDS s]"
