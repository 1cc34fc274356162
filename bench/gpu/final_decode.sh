#!/usr/bin/env bash
# bench/gpu/final_decode.sh - cuda_attn's part of the record run (defaults as
# shipped): the whole check matrix, the portable kernels HIP shares, graph
# capture, compute-sanitizer, the issue-6 decode shapes (page 16 and 1) and
# PyTorch SDPA flash / cuDNN on the same shapes (decode and prefill: the
# prefill rows are final_prefill.sh's same-call anchors), then the decode
# figures beside the last record's.  ~2 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so" "$T/test_cuda_graph"
step "check: defaults, whole matrix"
timeout 120 "$A" check --plugin cuda_attn --json > "$OUT/check_default.json" 2> "$OUT/check_default.log"
echo "rc=$? $(tail -1 "$OUT/check_default.log")"
step "check: portable kernels (the source hip_attn compiles; plugin option kernel=portable)"
printf '{"sglattn_conf": 1, "plugin_options": {"cuda_attn": {"kernel": "portable"}}}\n' > "$OUT/conf_portable.json"
timeout 60 "$A" check --plugin cuda_attn --conf "$OUT/conf_portable.json" --json \
  > "$OUT/check_portable.json" 2> "$OUT/check_portable.log"
echo "rc=$? $(tail -1 "$OUT/check_portable.log")"
step "graph capture and replay"
timeout 60 "$T/test_cuda_graph" > "$OUT/graph_test.log" 2>&1
echo "rc=$? $(tail -2 "$OUT/graph_test.log" | tr '\n' ' ')"
step "compute-sanitizer on the quick matrix (defaults)"
for tool in memcheck racecheck; do
  SGL_ATTN_NO_UNLOAD=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$A" check --plugin cuda_attn --quick > "$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
done
step "bench: decode shapes"
cases=$(python3 -c 'import sys; sys.path.insert(0, "bench/cuda"); from shapes import *
print(" ".join("--case " + x for x in [decode_case(b, l) for b, l in DECODE] + [decode_case(b, l, 1) for b, l in DECODE_PAGE1]))')
timeout 150 "$A" bench --plugin cuda_attn $cases --min-time 0.2 --roofline-gbps 4260 --json \
  > "$OUT/bench_default.json" 2> "$OUT/bench_default.log"
echo "rc=$?"; tail -15 "$OUT/bench_default.log"
step "torch SDPA flash / cuDNN, same shapes"
timeout 90 python3 bench/cuda/torch_side_by_side.py "$OUT/torch.json" > "$OUT/torch.log" 2>&1; echo "rc=$?"
step "summary"
python3 bench/cuda/summarize.py "$OUT" | tee "$OUT/summary.txt"
step "beside the last record"
python3 bench/cuda/vs_last.py decode "$OUT"
echo "final_decode: done [$SECONDS s]"
