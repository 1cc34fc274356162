#!/usr/bin/env bash
# bench/gpu/final.sh - the record run on the H200: every GPU plugin checked
# against the float64 reference, sanitized, and timed beside PyTorch, with the
# card's ceilings measured in the same call.  Parts run one after another
# under run.sh:  bash bench/gpu/run.sh final
set -u
OUT=${OUT:?}
for part in ceilings final_decode final_prefill final_mla final_linear; do
  mkdir -p "$OUT/$part"
  echo "======== $part [$SECONDS s]"
  case $part in
    ceilings) timeout 60 python3 bench/anchors/ceilings.py "$OUT/ceilings/ceilings.json" 2>&1 | tail -2;;
    *) [ -f "bench/gpu/$part.sh" ] && OUT="$OUT/$part" bash "bench/gpu/$part.sh" 2>&1 | tee "$OUT/$part/console.txt" | tail -25;;
  esac
done
echo "final: done [$SECONDS s]"
