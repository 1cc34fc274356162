#!/usr/bin/env bash
# bench/gpu/fp8_decode.sh - cuda_attn on fp8 e4m3 KV pools (sglang's
# --kv-cache-dtype fp8_e4m3): the fp8 cases of the check matrix against
# float64 (on the dequantised values), memcheck of them, then bf16 and fp8
# decode timed through the public C API (attnctl bench) at GQA 32/8, d128,
# page 16, B 64/128, L 4k/8k/16k, with PyTorch in the same call (SDPA on the
# dequantised bf16 KV, and the dequantise-then-SDPA path an fp8 pool costs
# torch), and the fp8 / bf16 time ratios (issue 20: <= 0.6x).  ~2 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"
step "check: the fp8 cases (cuda_attn, and cuda_mla's MLA one)"
for plugin in cuda_attn cuda_mla; do
  timeout 120 "$A" check --plugin $plugin --filter 'fp8_e4m3' --json > "$OUT/check_fp8_$plugin.json" \
    2> "$OUT/check_fp8_$plugin.log"
  echo "$plugin rc=$? $(tail -1 "$OUT/check_fp8_$plugin.log")"
done
step "compute-sanitizer memcheck on the fp8 cases"
SGL_ATTN_NO_UNLOAD=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$A" check --plugin cuda_attn --filter 'fp8_e4m3' > "$OUT/sanitizer_memcheck_fp8.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck_fp8.log" | tail -1)"
step "bench: bf16 and fp8 decode, GQA 32/8 d128 page 16"
cases=""
for b in 64 128; do for l in 4096 8192 16384; do for kv in bf16 fp8_e4m3; do
  cases="$cases --case decode:b=$b,l=$l,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=$kv,page=16"
done; done; done
timeout 200 "$A" bench --plugin cuda_attn $cases --min-time 0.2 --roofline-gbps 4260 --json \
  > "$OUT/bench_fp8.json" 2> "$OUT/bench_fp8.log"
echo "rc=$?"; tail -15 "$OUT/bench_fp8.log"
step "torch: SDPA on bf16 KV, and dequantise fp8 + SDPA, same shapes"
timeout 120 python3 bench/cuda/fp8_torch.py "$OUT/torch_fp8.json" > "$OUT/torch_fp8.log" 2>&1; echo "rc=$?"
tail -8 "$OUT/torch_fp8.log"
step "summary: fp8 / bf16 decode time (target <= 0.60x at every shape)"
python3 bench/cuda/fp8_summary.py "$OUT" | tee "$OUT/summary_fp8.txt"
echo "fp8_decode: done [$SECONDS s]"
