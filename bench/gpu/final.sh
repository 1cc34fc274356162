#!/usr/bin/env bash
# bench/gpu/final.sh - the record run on the H200: every GPU plugin checked
# against the float64 reference, sanitized, and timed beside PyTorch, with the
# card's ceilings measured in the same call.  Parts run one after another
# under run.sh:  bash bench/gpu/run.sh final
set -u
OUT=${OUT:?}
# name:cap in seconds; most important first (a part past its cap is cut, the rest go on)
for pc in final_decode:210 final_prefill:100 final_mla:110 final_linear:90 ceilings:40; do
  part=${pc%%:*} cap=${pc#*:}
  mkdir -p "$OUT/$part"
  echo "======== $part [$SECONDS s]"
  case $part in
    ceilings) timeout "$cap" python3 bench/anchors/ceilings.py "$OUT/ceilings/ceilings.json" 2>&1 | tail -2;;
    *) [ -f "bench/gpu/$part.sh" ] && OUT="$OUT/$part" timeout "$cap" bash "bench/gpu/$part.sh" 2>&1 | tee "$OUT/$part/console.txt" | tail -25;;
  esac
  type pack >/dev/null 2>&1 && pack
done
echo "final: done [$SECONDS s]"
