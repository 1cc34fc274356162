#!/usr/bin/env bash
# bench/gpu/mla_defaults.sh - cuda_mla after the page-table ring became the
# default at 16 heads (lever_mla.sh measured it 1.041x two): the defaults
# against float64 (strict, with the plan log to show the ring ran), graph
# replay, attnctl check on the full matrix, memcheck, and the 16-head shapes
# timed through attnctl bench with the defaults.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN
A=build/bin/attnctl; T=build/tests
step() { echo; echo "### $* [$SECONDS s]"; }
step "1. test_mla_gpu (quick, auto + the kernels, strict), graph replay"
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=auto,mma+two+pf4,wgmma timeout 40 $T/test_mla_gpu > "$OUT/test_mla_gpu.log" 2>&1
echo "rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu.log" | tr '\n' ' ') ring plans: $(grep -c 'mma ring' "$OUT/test_mla_gpu.log")"
MLA_GPU_QUICK=3 MLA_GPU_VARIANTS=auto timeout 20 $T/test_mla_gpu > "$OUT/graphs.log" 2>&1
echo "graphs rc=$? $(grep -E 'graph replay|PASSED|FAILED' "$OUT/graphs.log" | tr '\n' ' ' | tr -s ' ')"
step "2. attnctl check --plugin cuda_mla (full matrix, defaults), memcheck on --quick"
timeout 40 $A check --plugin cuda_mla --json > "$OUT/check.json" 2> "$OUT/check.log"; echo "check rc=$? $(tail -1 "$OUT/check.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $A check --plugin cuda_mla --quick > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
echo "mla_defaults: done [$SECONDS s]"
