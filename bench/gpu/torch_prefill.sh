#!/usr/bin/env bash
# bench/gpu/torch_prefill.sh - PyTorch SDPA flash and cuDNN on the issue-6
# prefill shapes (bench/cuda/shapes.py), the same-call anchor of a prefill run.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
TORCH_PARTS=prefill timeout 70 python3 bench/cuda/torch_side_by_side.py "$OUT/torch.json" > "$OUT/torch.log" 2>&1
echo "torch prefill rc=$?"; grep "torch prefill" "$OUT/torch.log"
