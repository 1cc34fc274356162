#!/usr/bin/env bash
# bench/gpu/race_cstate4.sh - compute-sanitizer racecheck of the v4 state pass
# (LT_QUICK=17) on the normal build and on build/race/plugins (every bar.arrive
# a bar.sync: bench/gpu/build_race.sh): reports that vanish in the second are
# racecheck's view of the arrive hand-offs, not accesses the barriers leave
# unordered.  Then the default-set (auto = v4) racecheck, LT_QUICK=2.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests
for b in normal race; do
  P=build/lib/sglattn/plugins; [ $b = race ] && P=build/race/plugins
  LT_QUICK=17 timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/racecheck_v4_$b.log" 2>&1
  echo "racecheck v4 $b rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_v4_$b.log" | tail -1) $(tail -1 "$OUT/racecheck_v4_$b.log")"
done
LT_QUICK=2 timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu build/lib/sglattn/plugins > "$OUT/racecheck_default_gdn.log" 2>&1
echo "racecheck defaults (LT_QUICK=2) rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_default_gdn.log" | tail -1) $(tail -1 "$OUT/racecheck_default_gdn.log")"
echo "race_cstate4: done [$SECONDS s]"
