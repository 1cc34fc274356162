#!/usr/bin/env bash
# bench/gpu/ceilings.sh - the card's copy bandwidth and bf16 GEMM rate, the
# same-call anchors of the bandwidth- and compute-bound ratios.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
timeout 40 python3 bench/anchors/ceilings.py "$OUT/ceilings.json" 2>&1 | tail -2
