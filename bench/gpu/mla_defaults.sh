#!/usr/bin/env bash
# bench/gpu/mla_defaults.sh - cuda_mla's defaults re-checked after a flip
# (third 2026-12-03 session: bulk-copy mma `tma` at <= 32 rows on SM 9.0,
# wgmma3 at >= 64 rows): the defaults and the former ones against float64
# (strict, plan log: which kernel each plan ran), the whole test set with the
# defaults, graph replay, attnctl check on the full matrix, memcheck and
# racecheck on --quick.  ~60 s.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset SGL_ATTN_MLA_KERNEL SGL_ATTN_MLA_PREFETCH SGL_ATTN_MLA_MMA SGL_ATTN_MLA_PLAN
A=build/bin/attnctl; T=build/tests
step() { echo; echo "### $* [$SECONDS s]"; }
plans() { echo "plans: tma $(grep -c 'mma tma' "$1"), ring $(grep -c 'mma ring' "$1"), wgmma4 $(grep -c 'runs wgmma4' "$1")"; }
step "1. test_mla_gpu: quick set (auto, mma+ring, wgmma0), full set (auto), graph replay"
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=1 MLA_GPU_VARIANTS=auto,mma+ring,wgmma0 timeout 40 $T/test_mla_gpu > "$OUT/test_mla_gpu.log" 2>&1
echo "quick rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu.log" | tr '\n' ' ') $(plans "$OUT/test_mla_gpu.log")"
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_VARIANTS=auto timeout 40 $T/test_mla_gpu > "$OUT/test_mla_gpu_full.log" 2>&1
echo "full rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu_full.log" | tr '\n' ' ') $(plans "$OUT/test_mla_gpu_full.log")"
SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=3 MLA_GPU_VARIANTS=auto timeout 20 $T/test_mla_gpu > "$OUT/graphs.log" 2>&1
echo "graphs rc=$? $(grep -E 'graph replay|PASSED|FAILED' "$OUT/graphs.log" | tr '\n' ' ' | tr -s ' ') $(plans "$OUT/graphs.log")"
step "2. attnctl check --plugin cuda_mla (full matrix, defaults), memcheck and racecheck on --quick"
timeout 40 $A check --plugin cuda_mla --json > "$OUT/check.json" 2> "$OUT/check.log"; echo "check rc=$? $(tail -1 "$OUT/check.log")"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $A check --plugin cuda_mla --quick > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $A check --plugin cuda_mla --quick > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1)"
grep -oE 'Race reported between [A-Za-z]+ access at [^(]+' "$OUT/racecheck.log" | sort | uniq -c | sort -rn | head -6
echo "mla_defaults: done [$SECONDS s]"
