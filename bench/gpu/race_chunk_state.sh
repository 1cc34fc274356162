#!/usr/bin/env bash
# bench/gpu/race_chunk_state.sh - compute-sanitizer racecheck of the chunked
# extend's state pass (chunk_state.cu; LT_QUICK=7: both tiles, both state
# dtypes) on the normal build and on build/race/plugins (every bar.arrive a
# bar.sync: bench/gpu/build_race.sh, run here before packing): reports that
# vanish in the second are racecheck's view of the arrive hand-offs, not
# accesses the barriers leave unordered.  Then the racecheck of gdn's defaults
# (LT_QUICK=2).  ~2 minutes.
# Passing: the normal build's reports (if any) all gone on the race build ("0
# hazards"), and "0 hazards" for the defaults.
. "$(dirname "$0")/common.sh"
need "$T/test_lin_gpu"
for b in normal race; do
  d=$P; [ $b = race ] && d=build/race/plugins
  [ -d "$d" ] || { echo "racecheck $b: $d missing (bench/gpu/build_race.sh)"; continue; }
  LT_QUICK=7 timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $d > "$OUT/racecheck_state_$b.log" 2>&1
  echo "racecheck state pass $b rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_state_$b.log" | tail -1) $(tail -1 "$OUT/racecheck_state_$b.log")"
done
LT_QUICK=2 timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/racecheck_default_gdn.log" 2>&1
echo "racecheck defaults (LT_QUICK=2) rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_default_gdn.log" | tail -1) $(tail -1 "$OUT/racecheck_default_gdn.log")"
echo "race_chunk_state: done [$SECONDS s]"
