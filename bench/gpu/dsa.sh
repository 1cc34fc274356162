#!/usr/bin/env bash
# bench/gpu/dsa.sh - cuda_mla's DSA sparse MLA (issue 21): the sparse (and
# indexer) check cases against float64, memcheck of the sparse cases and
# racecheck of the quick ones (mla_sparse.cu: the gather kernel, its split and
# combine), cuda_mla's whole matrix, then sparse decode / verify / extend
# timed through the Python package beside plain PyTorch (gather + einsum +
# fp32 softmax) in the same process (bench/cuda/dsa_torch.py; FLOPs as
# FlashMLA counts them: 2 * tokens * topk * hq * (576 + 512)).  The same over
# FlashMLA's fp8 record pool (SGL_ATTN_DSA_KV_FP8_RECORD): the rec=1 check
# cases (their saves byte for byte), under memcheck with the rest, racecheck
# of the record's 16-row (quick) and 64-row (hq 32 / 128) instantiations, and
# the *_rec timed shapes (torch dequantises the gathered records before the
# same einsums; the extend_b1_q4096 shape is issue 21's prefill, target >= 450
# TFLOP/s).  ~5 minutes.
# Passing: every check rc=0 with 0 failed (the f32 cases are "not
# supported": cuda_mla claims bf16/f16; the indexer and rec=1 cases pass;
# bench/gpu/dsa_indexer.sh checks and times the indexer itself), memcheck "ERROR SUMMARY: 0 errors", both racechecks
# "0 hazards", test_cuda_badidx "ok" on every line (bad topk_indices among
# them), every timed shape "ok"; the issue's figures are the last two lines
# (B 64, 128 heads, topk 2048, fp8 record pool and bf16 pool: target >= 300
# TFLOP/s).
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_mla.so" "$T/test_cuda_badidx" build/lib/libsglattn.so.1
step "check: cuda_mla sparse and indexer cases against float64"
timeout 120 "$A" check --plugin cuda_mla --filter '^(sparse|indexer)_' --json > "$OUT/check_dsa.json" \
  2> "$OUT/check_dsa.log"
echo "rc=$?"; grep -E '^\s*(pass|FAIL|fail|error|not supported)' "$OUT/check_dsa.log" | cut -c1-150; tail -1 "$OUT/check_dsa.log"
step "compute-sanitizer memcheck: the sparse cases"
sanitize memcheck 300 memcheck_sparse "$A" check --plugin cuda_mla --filter '^sparse_'
step "compute-sanitizer racecheck: the quick sparse cases"
sanitize racecheck 150 racecheck_sparse "$A" check --plugin cuda_mla --quick --filter '^sparse_'
step "compute-sanitizer racecheck: the fp8 record's 64-row instantiation (hq 32 / 128, rec=1)"
sanitize racecheck 200 racecheck_record "$A" check --plugin cuda_mla --filter '^sparse_.*hq=(32|128),.*rec=1'
step "bad topk_indices: skipped, reported at the next metadata call (test_cuda_badidx, with the other classes)"
timeout 90 "$T/test_cuda_badidx" "$P" > "$OUT/badidx.log" 2>&1
echo "rc=$?"; grep -E '^(ok|FAIL|SKIP)' "$OUT/badidx.log"; tail -1 "$OUT/badidx.log"
step "check: cuda_mla's whole matrix (nothing else broke)"
timeout 200 "$A" check --plugin cuda_mla --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
echo "rc=$?"; grep -E '^\s*(FAIL|fail|error)' "$OUT/check_all.log" | cut -c1-150; tail -1 "$OUT/check_all.log"
step "bench: sparse MLA beside PyTorch (gather + einsum), same process"
SGLATTN_LIB="$PWD/build/lib/libsglattn.so.1" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  timeout 360 python3 bench/cuda/dsa_torch.py "$OUT/bench_dsa.json" > "$OUT/bench_dsa.log" 2>&1
echo "rc=$?"; tail -12 "$OUT/bench_dsa.log"
echo "dsa: done [$SECONDS s]"
