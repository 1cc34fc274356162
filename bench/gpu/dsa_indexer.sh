#!/usr/bin/env bash
# bench/gpu/dsa_indexer.sh - cuda_mla's DSA indexer (issue 21; mla_indexer.cu:
# the key save, the mma.sync scores, the radix top-k): the indexer check cases
# against float64 with the defaults and with a 1 MB score scratch (a batch in
# several passes), memcheck of them, racecheck of the quick ones, the whole
# cuda_mla matrix, then indexer + top-k at B 64 / 1 / 128 decode over 32k /
# 16k / 4k / 2k cached tokens (64 index heads x 128, topk 2048) through the
# Python package beside plain PyTorch (gather + fp8 -> bf16 + einsum + ReLU +
# weights + torch.topk) in the same process (bench/cuda/dsa_indexer_torch.py).
# ~2 minutes.
# Passing: every check rc=0 with 0 failed and 0 not supported among the
# indexer cases, memcheck "ERROR SUMMARY: 0 errors", racecheck "0 hazards",
# every timed shape "ok" (its selection holds the float64 rule on sampled
# tokens); the issue's figure is the last line (B 64 at 32k: time, and the
# ratio to torch).
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_mla.so" build/lib/libsglattn.so.1
step "check: cuda_mla indexer cases against float64 (defaults)"
timeout 120 "$A" check --plugin cuda_mla --filter '^indexer_' --json > "$OUT/check_indexer.json" \
  2> "$OUT/check_indexer.log"
echo "rc=$?"; grep -E '^\s*(pass|FAIL|fail|error|not supported)' "$OUT/check_indexer.log" | cut -c1-150; tail -1 "$OUT/check_indexer.log"
step "check: the indexer cases with a 1 MB score scratch (several passes a batch)"
SGL_ATTN_MLA_INDEXER_SCRATCH_MB=1 timeout 120 "$A" check --plugin cuda_mla --filter '^indexer_' \
  > "$OUT/check_indexer_1mb.log" 2>&1
echo "rc=$?"; grep -E '^\s*(FAIL|fail|error|not supported)' "$OUT/check_indexer_1mb.log" | cut -c1-150; tail -1 "$OUT/check_indexer_1mb.log"
step "compute-sanitizer memcheck: the indexer cases"
sanitize memcheck 200 memcheck_indexer "$A" check --plugin cuda_mla --filter '^indexer_'
step "compute-sanitizer racecheck: the quick indexer cases"
sanitize racecheck 200 racecheck_indexer "$A" check --plugin cuda_mla --quick --filter '^indexer_'
step "check: cuda_mla's whole matrix (nothing else broke)"
timeout 200 "$A" check --plugin cuda_mla --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
echo "rc=$?"; grep -E '^\s*(FAIL|fail|error)' "$OUT/check_all.log" | cut -c1-150; tail -1 "$OUT/check_all.log"
step "bench: indexer + top-k beside PyTorch (einsum + relu + weights + topk), same process"
SGLATTN_LIB="$PWD/build/lib/libsglattn.so.1" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  timeout 300 python3 bench/cuda/dsa_indexer_torch.py "$OUT/bench_dsa_indexer.json" > "$OUT/bench_dsa_indexer.log" 2>&1
echo "rc=$?"; tail -7 "$OUT/bench_dsa_indexer.log"
echo "dsa_indexer: done [$SECONDS s]"
