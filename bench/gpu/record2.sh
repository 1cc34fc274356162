#!/usr/bin/env bash
# bench/gpu/record2.sh - the record of the second 2026-12-03 session: the
# defaults as shipped, timed with every anchor in the same call.  Parts, each
# capped (a part past its cap is cut, the rest go on):
#   torch prefill (flash, cuDNN) + cuda_attn prefill (attnctl bench, page 16)
#   the card's copy bandwidth and bf16 GEMM (ceilings.py)
#   cuda_mla on issue 7's 10 shapes (attnctl bench) + the PyTorch matmul path
#   the linear wrappers' bench_lin (decode + 64k prefill) + plain PyTorch GDN
#   checks of the defaults that changed: test_lin_gpu quick + e2e, test_mla_gpu quick
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP SGL_ATTN_LIN_CSTATE
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN SGL_ATTN_WGMMA_TMA SGL_ATTN_WGMMA_L2SEC
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"

step "1. prefill: torch SDPA flash / cuDNN, then ours (page 16, with the save-KV)"
TORCH_PARTS=prefill timeout 75 python3 bench/cuda/torch_side_by_side.py "$OUT/torch_prefill.json" > "$OUT/torch_prefill.log" 2>&1
echo "torch rc=$?"; grep "torch prefill" "$OUT/torch_prefill.log" | cut -c1-200
cases=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+prefill_case(b,s) for b,s in PREFILL))')
timeout 25 $A bench --plugin cuda_attn $cases --min-time 0.2 --json > "$OUT/prefill_ours.json" 2> "$OUT/prefill_ours.log"; echo "ours rc=$?"

step "2. ceilings"
timeout 45 python3 bench/anchors/ceilings.py "$OUT/ceilings.json" 2>&1 | tail -2

step "3. cuda_mla, issue 7's shapes, and the torch matmul path"
mc=""; for sh in decode:b=64,l=4096,hq=16 decode:b=128,l=4096,hq=16 decode:b=64,l=16384,hq=16 decode:b=128,l=16384,hq=16 \
  decode:b=64,l=32768,hq=16 decode:b=128,l=32768,hq=16 decode:b=128,l=4096,hq=128 decode:b=128,l=8192,hq=128 \
  verify:b=128,l=4096,q=2,hq=64 verify:b=128,l=8192,q=2,hq=64; do mc="$mc --case $sh,mla=1,dtype=bf16,page=64"; done
SGL_ATTN_MLA_LOG=1 timeout 60 $A bench --plugin cuda_mla $mc --min-time 0.2 --json > "$OUT/mla_ours.json" 2> "$OUT/mla_ours.log"
echo "ours rc=$?"; grep -E "^  (decode|verify)" "$OUT/mla_ours.log" | cut -c1-160
timeout 35 python3 bench/cuda/mla_torch.py "$OUT/mla_torch.json" > "$OUT/mla_torch.log" 2>&1; echo "torch rc=$?"

step "4. linear wrappers: bench_lin (defaults) and plain PyTorch"
BENCH_QUICK=1 BENCH_VARIANT=fast timeout 30 $T/bench_lin "$OUT/lin_ours.json" $P > "$OUT/lin_ours.log" 2>&1; echo "ours rc=$?"
grep -E "decode|prefill" "$OUT/lin_ours.log" | head -12
timeout 40 python3 bench/cuda/linear_torch.py "$OUT/lin_torch.json" > "$OUT/lin_torch.log" 2>&1; echo "torch rc=$?"

step "5. checks of the shipped defaults"
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log")"
timeout 25 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=1 timeout 30 $T/test_mla_gpu > "$OUT/test_mla_gpu.log" 2>&1; echo "test_mla_gpu rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu.log" | tr '\n' ' ')"
echo "record2: done [$SECONDS s]"
