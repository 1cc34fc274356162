#!/usr/bin/env bash
# bench/gpu/final.sh - the record run on the H200: every GPU plugin's defaults
# checked against the float64 reference, sanitized, and timed beside PyTorch and
# the card's ceilings in the same call, each figure beside the last record's
# (bench/results/README.md says which run that is).  About 7 minutes; one device
# call:  bash bench/gpu/run.sh final
# The parts run one after another, each cut at its cap (most important first);
# FINAL_PARTS="final_mla:110 anchors:40" runs a subset.  Last, the record
# against the last one: every part's x-last table summed up, and every case more
# than 2% slower than the last record named (bench/cuda/vs_last.py).
. "$(dirname "$0")/common.sh"
for spec in ${FINAL_PARTS:-final_decode:200 final_prefill:80 final_mla:110 final_linear:130 anchors:40}; do
  PART_TAIL=25 run_part "$spec"
done
step "the record beside the last record"
python3 bench/cuda/vs_last.py summary "$OUT" | tee "$OUT/vs_last.txt"
echo "final: done [$SECONDS s]"
