#!/usr/bin/env bash
# bench/gpu/badidx.sh - bad device-resident indices through cuda_attn, cuda_mla
# and gdn_cuda on the GPU (~1 minute): test_cuda_badidx (every bad index
# class, with cuda_attn's page-table and slot-map ones, cuda_attn kernel
# auto / mma / portable and cuda_mla, decode and extend) plain and under
# compute-sanitizer memcheck; test_lin_gpu's bad inputs (state_indices out
# of the pool, int64 2^32 + a slot, reported at the next metadata call) ride
# in lin_check.sh's full run.
# Passing: test_cuda_badidx rc=0 with "0 failures" both times, memcheck
# "ERROR SUMMARY: 0 errors".
. "$(dirname "$0")/common.sh"
need "$T/test_cuda_badidx" "$P/cuda_attn.so" "$P/cuda_mla.so"
step "1. test_cuda_badidx"
timeout 90 "$T/test_cuda_badidx" "$P" > "$OUT/badidx.log" 2>&1
echo "test_cuda_badidx rc=$? $(tail -1 "$OUT/badidx.log") [$SECONDS s]"
grep -E "^(FAIL|SKIP|ok)" "$OUT/badidx.log" | head -12
step "2. test_cuda_badidx under memcheck"
timeout 180 compute-sanitizer --tool memcheck --error-exitcode 9 "$T/test_cuda_badidx" "$P" > "$OUT/badidx_memcheck.log" 2>&1
echo "memcheck test_cuda_badidx rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/badidx_memcheck.log" | tail -1) $(grep -E 'checks,' "$OUT/badidx_memcheck.log" | tail -1)"
grep -E "^(FAIL|=========.*(Invalid|Error))" "$OUT/badidx_memcheck.log" | head -8
echo "badidx: done [$SECONDS s]"
