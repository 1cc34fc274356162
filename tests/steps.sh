#!/usr/bin/env bash
# tests/steps.sh - run `make test`'s steps in lanes.
#
#   tests/steps.sh LOGDIR JOBS "MAKE..." "LANE1 STEPS" "LANE2 STEPS"
#
# The steps of one lane run in order; the lanes run at the same time when
# JOBS > 1 (otherwise one after the other).  The second lane holds the steps
# that build and run in a tree of their own (ASan, TSan, fuzz), so the lanes
# never write the same files.  Each step's output goes to LOGDIR/<step>.log
# and is printed whole when the step ends, one step at a time, so nothing
# interleaves.  The first failure ends the run: the other lane starts no new
# step, and the failing step's log is printed last.
set -u
logdir=$1 jobs=$2 make_cmd=$3 lane1=$4 lane2=$5
mkdir -p "$logdir"
failed=$logdir/failed
rm -f "$failed"
exec 9> "$logdir/print.lock"

run_lane() {
    local step start rc secs
    for step in $1; do
        [ -e "$failed" ] && return 0
        start=$(date +%s)
        $make_cmd "$step" > "$logdir/$step.log" 2>&1
        rc=$?
        secs=$(($(date +%s) - start))
        if [ $rc -ne 0 ]; then
            echo "$step" >> "$failed"
            return 0
        fi
        flock 9
        echo "==== make $step"
        cat "$logdir/$step.log"
        echo "==== make $step: ok ($secs s)"
        flock -u 9
    done
}

if [ "$jobs" -gt 1 ]; then
    run_lane "$lane1" &
    p1=$!
    run_lane "$lane2" &
    p2=$!
    wait $p1 $p2
else
    run_lane "$lane1 $lane2"
fi

if [ -e "$failed" ]; then
    while read -r step; do
        echo "==== make $step: FAILED (its output follows)"
        cat "$logdir/$step.log"
        echo "==== make $step: FAILED"
    done < "$failed"
    exit 1
fi
exit 0
