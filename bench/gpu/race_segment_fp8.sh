#!/usr/bin/env bash
# bench/gpu/race_segment_fp8.sh - compute-sanitizer racecheck of two shared-
# memory kernels: the linear state pass by segments (chunk_segment.cu,
# test_lin_gpu LT_QUICK=10) and cuda_attn's fp8 e4m3 decode (decode_reg.cu's
# fp8 instantiation, attnctl check --filter fp8_e4m3).  ~1 minute.
# build/race (bench/gpu/build_race.sh: every bar.arrive of chunk_state.cu a
# bar.sync) separates racecheck's view of the arrive hand-offs from real races.
# Passing: the normal build's reports (if any) all gone on the race build, and
# "0 hazards" for the fp8 decode.
. "$(dirname "$0")/common.sh"
need "$T/test_lin_gpu" "$A" "$P/cuda_attn.so"
step "racecheck: the state pass by segments (LT_QUICK=10), normal build and build/race"
for b in normal race; do
  d=$P; [ $b = race ] && d=build/race/plugins
  [ -d "$d" ] || { echo "racecheck $b: $d missing (bench/gpu/build_race.sh)"; continue; }
  LT_QUICK=10 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $d \
    > "$OUT/racecheck_segments_$b.log" 2>&1
  echo "segments $b rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_segments_$b.log" | tail -1) $(tail -1 "$OUT/racecheck_segments_$b.log")"
done
step "racecheck: cuda_attn fp8 e4m3 decode"
SGL_ATTN_NO_UNLOAD=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$A" check --plugin cuda_attn --filter 'fp8_e4m3' > "$OUT/racecheck_fp8.log" 2>&1
echo "fp8 decode rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_fp8.log" | tail -1) $(tail -1 "$OUT/racecheck_fp8.log")"
echo "race_segment_fp8: done [$SECONDS s]"
