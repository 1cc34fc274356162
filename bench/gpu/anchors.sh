#!/usr/bin/env bash
# bench/gpu/anchors.sh - the same-call anchors that are not attention: the
# card's copy bandwidth and bf16 GEMM rate (bench/anchors/ceilings.py, ~20 s),
# the ceilings of the bandwidth- and compute-bound ratios, beside the last
# record's (bench/cuda/vs_last.py).  ANCHORS_FULL=1 also times PyTorch's SDPA
# backends on the anchor grid (bench/anchors/anchors_torch.py, ~5 minutes; the
# figures of bench/results/anchors_torch_h200_2026-12-02.json).
. "$(dirname "$0")/common.sh"
timeout 40 python3 bench/anchors/ceilings.py "$OUT/ceilings.json" 2>&1 | tail -2
python3 bench/cuda/vs_last.py anchors "$OUT"
if [ "${ANCHORS_FULL:-0}" = 1 ]; then
  timeout 300 python3 bench/anchors/anchors_torch.py "$OUT/anchors_torch.json" > "$OUT/anchors_torch.log" 2>&1
  echo "anchors_torch rc=$?"
fi
