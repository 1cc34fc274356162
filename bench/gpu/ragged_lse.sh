#!/usr/bin/env bash
# bench/gpu/ragged_lse.sh - cuda_attn's forward_ragged (K / V as tensors with
# cu_seqlens: DeepSeek's MLA prefill at qk 192 / v 128, and d128) and the LSE
# output (ragged, and forward_args.lse on extend and decode), issue 20:
#   1. attnctl check of the ragged family and the paged LSE cases against
#      float64, with the defaults (wgmma on the H200) and kernel=mma (the
#      sm_80 fallback);
#   2. compute-sanitizer memcheck and racecheck of the same cases (the ragged
#      plan, the wgmma / mma kernels with their RAGGED flag, the LSE writes);
#   3. the whole cuda_attn matrix, so nothing else broke;
#   4. attnctl bench: ragged qk 192 / v 128 (with LSE) and qk 128 / v 128
#      against the d128 paged prefill (with and without its save-KV launch) at
#      B x S = 4 x 4k, 2 x 8k, 1 x 16k, causal, 16 heads, bf16, and PyTorch
#      SDPA (flash / cuDNN / efficient) on the same shapes in the same call;
#   5. the table: TFLOP/s and ragged 192/128 / paged d128 (bar: >= 0.90x).
# Passing: check lines "rc=0 ... 0 failed, ... 0 errors" with the ragged
# cases passed (not "not supported"), memcheck "ERROR SUMMARY: 0 errors",
# racecheck "RACECHECK SUMMARY: 0 hazards", the summary's "shapes under
# 0.90x (or missing): 0".  ~2 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"
F='^ragged:|^lse:'
kernel_confs auto mma
step "1. check: ragged and LSE cases against float64 (kernel=auto, kernel=mma)"
for k in auto mma; do
  ( timeout 90 "$A" check --plugin cuda_attn --conf "$OUT/conf_$k.json" --filter "$F" --json > "$OUT/check_rl_$k.json" \
      2> "$OUT/check_rl_$k.log"
    echo "check ragged|lse kernel=$k: rc=$? $(tail -1 "$OUT/check_rl_$k.log")" > "$OUT/check_rl_$k.rc" ) &
done
wait
for k in auto mma; do
  cat "$OUT/check_rl_$k.rc"
  grep -E "^  (FAIL|ERROR|not supported)" -A1 "$OUT/check_rl_$k.log" | head -12
  grep -cE "^  pass +ragged:" "$OUT/check_rl_$k.log" | sed 's/^/  ragged cases passed: /'
done
grep -hoE "kernel=[a-z]+: extend [a-z]+.*ragged [a-z]+( \(TMA\))?" "$OUT"/check_rl_*.log | sort | uniq -c
step "2. compute-sanitizer memcheck and racecheck of those cases (and 3. beside them)"
( SGL_ATTN_NO_UNLOAD=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin cuda_attn \
    --conf "$OUT/conf_auto.json" --filter "$F" > "$OUT/memcheck_rl_auto.log" 2>&1
  echo "memcheck kernel=auto: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_rl_auto.log" | tail -1) $(tail -1 "$OUT/memcheck_rl_auto.log")" \
    > "$OUT/memcheck_rl_auto.rc" ) &
( SGL_ATTN_NO_UNLOAD=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin cuda_attn \
    --conf "$OUT/conf_mma.json" --filter "$F" > "$OUT/memcheck_rl_mma.log" 2>&1
  echo "memcheck kernel=mma: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_rl_mma.log" | tail -1) $(tail -1 "$OUT/memcheck_rl_mma.log")" \
    > "$OUT/memcheck_rl_mma.rc" ) &
( SGL_ATTN_NO_UNLOAD=1 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$A" check --plugin cuda_attn \
    --conf "$OUT/conf_auto.json" --filter '^ragged:' > "$OUT/racecheck_rl_auto.log" 2>&1
  echo "racecheck kernel=auto: rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_rl_auto.log" | tail -1) $(tail -1 "$OUT/racecheck_rl_auto.log")" \
    > "$OUT/racecheck_rl_auto.rc" ) &
( timeout 120 "$A" check --plugin cuda_attn --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
  echo "check all (3.): rc=$? $(tail -1 "$OUT/check_all.log")" > "$OUT/check_all.rc" ) &
wait
cat "$OUT"/memcheck_rl_*.rc "$OUT"/racecheck_rl_auto.rc
step "3. the whole cuda_attn matrix (defaults; ran beside the sanitizers)"
cat "$OUT/check_all.rc"
grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_all.log" | head -8
step "4. bench: ragged qk192/v128 and d128 vs the paged d128 prefill; torch SDPA on the same shapes"
cases=""
for bs in 4:4096 2:8192 1:16384; do
  b=${bs%%:*}; s=${bs##*:}
  cases="$cases --case ragged:b=$b,lq=$s,hq=16,hkv=16,d=192,dv=128,dtype=bf16"
  cases="$cases --case ragged:b=$b,lq=$s,hq=16,hkv=16,d=128,dtype=bf16,lse=0"
  cases="$cases --case extend:b=$b,l=$s,q=$s,hq=16,hkv=16,d=128,dtype=bf16,page=16"
  cases="$cases --case extend:b=$b,l=$s,q=$s,hq=16,hkv=16,d=128,dtype=bf16,page=16,save=0"
done
timeout 120 "$A" bench --plugin cuda_attn $cases --min-time 0.2 --json > "$OUT/bench_ragged.json" 2> "$OUT/bench_ragged.log"
echo "bench: rc=$?"; tail -14 "$OUT/bench_ragged.log"
timeout 120 python3 bench/cuda/ragged_torch.py "$OUT/torch_ragged.json" > "$OUT/torch_ragged.log" 2>&1
echo "torch: rc=$?"; tail -3 "$OUT/torch_ragged.log" | cut -c1-300
step "5. summary: ragged qk192/v128 TFLOP/s / paged d128 prefill (bar >= 0.90x)"
python3 bench/cuda/ragged_summary.py "$OUT" | tee "$OUT/summary_ragged.txt"
echo "ragged_lse: done [$SECONDS s]"
