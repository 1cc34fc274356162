#!/usr/bin/env bash
# bench/gpu/lin_caller_state.sh - the CUDA linear wrappers with caller-owned
# state (ABI 1.2, SGL_ATTN_FEAT_CALLER_STATE: the engine's conv / SSM state and
# its per-step copies passed in linear_io, ops->state_batch on index tensors):
#   1. test_lin_gpu LT_QUICK=11: each config's scenario with batched state
#      operations on the pool, then on the test's tensors (the batch's slots,
#      and linear.state_indices past max_reqs): outputs the pool run's bits and
#      within the float64 reference's limits, the tensors' states the
#      reference's; a graph with caller state; bad inputs.  Plain and under
#      memcheck; racecheck of LT_QUICK=12 (gdn's defaults, the graph, bad inputs)
#   2. attnctl check of the five stacks (<kind>_cuda/cuda_attn), filtered to
#      owner=caller, against float64; then each stack's whole matrix
#   3. gdn decode, Qwen3-Next shape (16 qk / 32 value heads, K = V = 128), B 64,
#      bf16, f32 state, through attnctl bench: the wrapper's pool against caller
#      state (one slot kernel more per layer); the ratio printed
# Passing: "0 failures" and rc=0 in 1, "ERROR SUMMARY: 0 errors" under the
# sanitizers, every check "0 failed ... 0 errors"; the ratio is a figure
# (expected a little above 1.0: the slot kernel's launch).  ~3-4 minutes (run it as
# lin_caller_state:330).
. "$(dirname "$0")/common.sh"
need "$A" "$T/test_lin_gpu" "$P/gdn_cuda.so"
step "1. test_lin_gpu LT_QUICK=11 (caller-owned state), plain / memcheck / racecheck"
LT_QUICK=11 timeout 60 "$T/test_lin_gpu" "$P" > "$OUT/test_lin_gpu_q11.log" 2>&1
echo "test_lin_gpu LT_QUICK=11 rc=$? $(tail -1 "$OUT/test_lin_gpu_q11.log")"
grep -E "^(ok|FAIL)" "$OUT/test_lin_gpu_q11.log" | head -24
LT_QUICK=11 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$T/test_lin_gpu" "$P" \
  > "$OUT/memcheck_q11.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_q11.log" | tail -1) $(grep -E 'failures?$' "$OUT/memcheck_q11.log" | tail -1)"
LT_QUICK=12 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$T/test_lin_gpu" "$P" \
  > "$OUT/racecheck_q12.log" 2>&1
echo "racecheck (LT_QUICK=12: gdn's defaults, graph, bad inputs) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/racecheck_q12.log" | tail -1)"
step "2. attnctl check: owner=caller cases of the five stacks, then each whole matrix"
for k in gdn mamba2 kda lightning short_conv; do
  s=${k}_cuda/cuda_attn
  timeout 30 "$A" check --plugin "$s" --filter owner=caller --json > "$OUT/check_caller_${k}.json" \
    2> "$OUT/check_caller_${k}.log"
  echo "check $s owner=caller rc=$? $(tail -1 "$OUT/check_caller_${k}.log")"
  grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_caller_${k}.log" | sed 's/^/    /' | head -6
  timeout 40 "$A" check --plugin "$s" --json > "$OUT/check_all_${k}.json" 2> "$OUT/check_all_${k}.log"
  echo "check $s (whole matrix) rc=$? $(tail -1 "$OUT/check_all_${k}.log")"
  grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_all_${k}.log" | sed 's/^/    /' | head -6
done
step "3. gdn decode B 64 (16/32 heads, K = V = 128, bf16, f32 state): pool vs caller state"
base="gdn:b=64,fwd=decode,prefix=16,pad=0,hk=16,hv=32,dk=128,dv=128,dtype=bf16"
timeout 60 "$A" bench --plugin gdn_cuda/cuda_attn --case "$base,owner=plugin" --case "$base,owner=caller" \
  --min-time 0.2 --json > "$OUT/bench_caller_state.json" 2> "$OUT/bench_caller_state.log"
echo "rc=$?"; tail -6 "$OUT/bench_caller_state.log"
python3 - "$OUT/bench_caller_state.json" <<'PY' | tee "$OUT/summary_caller_state.txt"
import json, sys
try:
    cases = json.load(open(sys.argv[1])).get("cases", [])
except Exception as e:
    print(f"no bench JSON: {e}"); sys.exit(0)
t = {("caller" if "owner=caller" in c.get("case", "") else "pool"): c.get("median_us") for c in cases}
p, c = t.get("pool"), t.get("caller")
print(f"gdn decode B 64: pool {p or 0:.2f} us, caller state {c or 0:.2f} us, caller / pool "
      + (f"{c / p:.3f}x" if p and c else "-"))
PY
echo "lin_caller_state: done [$SECONDS s]"
