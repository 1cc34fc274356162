#!/usr/bin/env bash
# bench/gpu/levers.sh - the 2026-12-03 lever run: each opt-in lever checked
# against float64, sanitized and timed beside the default on the same binary,
# with the same-call anchors (PyTorch prefill, the card's ceilings).  Parts are
# capped (a part past its cap is cut, the rest go on):
#   bash bench/gpu/run.sh levers      or name parts to run.sh directly
set -u
OUT=${OUT:?}
for pc in ${LEVER_PARTS:-lever_savekv:100 torch_prefill:75 lever_lindec:95 lever_mla:92 ceilings:45}; do
  part=${pc%%:*} cap=${pc#*:}
  mkdir -p "$OUT/$part"
  echo "======== $part [$SECONDS s]"
  [ -f "bench/gpu/$part.sh" ] && OUT="$OUT/$part" timeout "$cap" bash "bench/gpu/$part.sh" 2>&1 | tee "$OUT/$part/console.txt" | tail -30
  type pack >/dev/null 2>&1 && pack
done
echo "levers: done [$SECONDS s]"
