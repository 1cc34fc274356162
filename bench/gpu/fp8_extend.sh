#!/usr/bin/env bash
# bench/gpu/fp8_extend.sh - cuda_attn's extend on fp8 e4m3 KV pools (sglang's
# --kv-cache-dtype fp8_e4m3 with prefill / extend / verify on that pool: on
# SM 9.0 at d128 the split extend (new tokens by the ragged wgmma kernel over
# their dequantised rows, the prefix by the wgmma extend from a byte ring, an
# LSE merge; docs/cuda.md), elsewhere the F8 mma extend): the matrix's fp8 cases and
# fp8 extend cases of every feature (d64 / d128, f16 / bf16, window, sinks,
# soft-cap, scale tensors, page 1 / 16 / 64, the LSE output) against float64, memcheck of
# them, then bf16 and fp8 extend timed through attnctl bench (GQA 32/8, d128,
# page 16: prefills of 4k / 16k and extends over a cached prefix,
# bench/cuda/fp8_extend_torch.py's shapes), bf16 again with kernel=mma (the
# kernel the fp8 extend runs), and PyTorch in the same call (SDPA on bf16 K/V,
# and dequantise-then-SDPA).  ~2-3 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"
CASES=""
for c in \
  "extend:b=3,l=300,q=90,hq=8,hkv=2,d=64,dtype=f16,kvdtype=fp8_e4m3,page=1" \
  "extend:b=2,l=500,q=130,hq=8,hkv=8,d=128,dtype=f16,kvdtype=fp8_e4m3,page=16,kscale=0.37,vscale=2.5,scalet=1" \
  "extend:b=3,l=600,q=100,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16,window=128,sinks=1,softcap=30" \
  "extend:b=2,l=400,q=70,hq=4,hkv=1,d=64,dtype=bf16,kvdtype=fp8_e4m3,page=64,window=50,ragged=1" \
  "extend:b=1,l=2048,q=1024,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16" \
  "extend:b=1,l=3000,q=3000,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16,softcap=30" \
  "extend:b=5,l=900,q=300,hq=32,hkv=8,d=128,dtype=f16,kvdtype=fp8_e4m3,page=1,ragged=1" \
  "lse:op=extend,b=4,l=700,q=250,hq=16,hkv=2,d=128,dtype=bf16,kvdtype=fp8_e4m3,kscale=0.5,vscale=0.25,page=64,ragged=1" \
  "lse:op=extend,b=2,l=300,q=80,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e4m3fn,kscale=0.5,vscale=0.25,page=16" \
  "lse:op=verify,b=3,l=300,q=4,hq=8,hkv=2,d=64,dtype=f16,kvdtype=e4m3fn,kscale=0.3,vscale=3,page=16,window=64,sinks=1,softcap=30"; do
  CASES="$CASES --case $c"
done
step "check: the matrix's fp8 cases (cuda_attn), and the fp8 extend cases"
timeout 150 "$A" check --plugin cuda_attn --filter 'fp8' --json > "$OUT/check_fp8x.json" 2> "$OUT/check_fp8x.log"
echo "matrix fp8 rc=$? $(tail -1 "$OUT/check_fp8x.log")"
grep -E "^  (FAIL|ERROR)|(extend|verify).*fp8|fp8.*(extend|verify)" "$OUT/check_fp8x.log" | head -12
# shellcheck disable=SC2086
timeout 120 "$A" check --plugin cuda_attn $CASES --json > "$OUT/check_fp8x_cases.json" 2> "$OUT/check_fp8x_cases.log"
echo "extend cases rc=$? $(tail -1 "$OUT/check_fp8x_cases.log")"
grep -E "^  (FAIL|ERROR|not supported)" -A1 "$OUT/check_fp8x_cases.log" | head -8
step "compute-sanitizer memcheck on the fp8 extend cases"
# shellcheck disable=SC2086
SGL_ATTN_NO_UNLOAD=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$A" check --plugin cuda_attn --filter 'fp8.*(extend|verify)|(extend|verify).*fp8' \
  > "$OUT/sanitizer_memcheck_fp8x.log" 2>&1
echo "memcheck matrix rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck_fp8x.log" | tail -1)"
# shellcheck disable=SC2086
SGL_ATTN_NO_UNLOAD=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$A" check --plugin cuda_attn $CASES > "$OUT/sanitizer_memcheck_fp8x_cases.log" 2>&1
echo "memcheck cases rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck_fp8x_cases.log" | tail -1)"
step "bench: bf16 and fp8 extend (the defaults), bf16 with kernel=mma"
printf '{"sglattn_conf": 1, "plugin_options": {"cuda_attn": {"kernel": "mma"}}}\n' > "$OUT/conf_mma.json"
# shellcheck disable=SC2046
timeout 200 "$A" bench --plugin cuda_attn $(python3 bench/cuda/fp8_extend_torch.py --cases) --min-time 0.2 --json \
  > "$OUT/bench_fp8x.json" 2> "$OUT/bench_fp8x.log"
echo "rc=$?"; tail -12 "$OUT/bench_fp8x.log"
# shellcheck disable=SC2046
timeout 120 "$A" bench --plugin cuda_attn --conf "$OUT/conf_mma.json" $(python3 bench/cuda/fp8_extend_torch.py --cases-bf16) \
  --min-time 0.2 --json > "$OUT/bench_fp8x_mma.json" 2> "$OUT/bench_fp8x_mma.log"
echo "kernel=mma rc=$?"
step "torch: SDPA on bf16 KV, and dequantise fp8 + SDPA, same shapes"
timeout 150 python3 bench/cuda/fp8_extend_torch.py "$OUT/torch_fp8x.json" > "$OUT/torch_fp8x.log" 2>&1; echo "rc=$?"
tail -6 "$OUT/torch_fp8x.log"
step "summary: fp8 / bf16 extend time per shape"
python3 bench/cuda/fp8_extend_torch.py --summary "$OUT" | tee "$OUT/summary_fp8x.txt"
echo "fp8_extend: done [$SECONDS s]"
