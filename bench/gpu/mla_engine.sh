#!/usr/bin/env bash
# bench/gpu/mla_engine.sh - cuda_mla's ABI 1.2 engine inputs (issue 20): the
# MLA rope split (forward args q_rope / k_rope), tree verify (batch
# custom_mask / mask_indptr), draft extend and fp8 e4m3 pools with
# k_scale_tensor.  Their attnctl check cases against float64 (paged12's
# ropesplit and MLA fp8 cases, full_family.c's MLA tree, draft and fp8
# cases) with the defaults and with each kernel forced, test_mla_gpu's
# split test (strided views, output and saved rows) on every variant,
# memcheck and racecheck of the check cases, cuda_mla's whole matrix
# (alone and under validate/), then decode at B 64, L 4k, 16, 32 and 128
# heads timed with and without the split (mla_gpu_bench's +split: the same
# bytes, the split's path), with the ratio printed.  ~3 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_mla.so" "$T/mla_gpu_bench" "$T/test_mla_gpu"
F='ropesplit|mla=1.*(tree|draft|e4m3)'
plans() {
  echo "plans: tree $(grep -c 'tree mask' "$1"), mma $(grep -c 'runs mma' "$1"), wide $(grep -c 'runs wide' "$1")," \
       "simple $(grep -c 'runs simple' "$1")"
}
step "1. attnctl check --filter '$F': defaults (tma / two / wide by rows), simple, mma base (16 / 32 / 64 rows), mma ring (16 rows; two / base above), wide at any rows (strict; plan log)"
for v in auto simple mma+base mma+ring wide; do
  k=${v%%+*}; m=auto; [ "$v" != "$k" ] && m=${v#*+}
  SGL_ATTN_MLA_KERNEL=$k SGL_ATTN_MLA_MMA=$m SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 \
    timeout 60 "$A" check --plugin cuda_mla --filter "$F" --json > "$OUT/check_$v.json" 2> "$OUT/check_$v.log"
  echo "$v rc=$? $(tail -1 "$OUT/check_$v.log" | sed 's/ (seed.*//') | $(plans "$OUT/check_$v.log")"
  grep -E '^ +(fail|error) ' "$OUT/check_$v.log" | head -6
done
step "1b. test_mla_gpu's split test: q / q_rope, k / k_rope as strided views (16 / 32 / 128 rows, fp8), every variant"
SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 MLA_GPU_QUICK=4 MLA_GPU_VARIANTS=auto,simple,mma,mma+ring,mma+base,wide \
  timeout 60 "$T/test_mla_gpu" > "$OUT/test_mla_gpu.log" 2>&1
echo "rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_mla_gpu.log" | tr '\n' ' ')"
grep -E '^VARIANT_(FAIL|HANG|FAULT)|split .*FAILED' "$OUT/test_mla_gpu.log" | head -8
step "2. compute-sanitizer on the same cases: memcheck (defaults, mma), racecheck (mma: the tool's clean kernel)"
for v in auto mma; do
  SGL_ATTN_NO_UNLOAD=1 SGL_ATTN_MLA_KERNEL=$v timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$A" check --plugin cuda_mla --filter "$F" > "$OUT/memcheck_$v.log" 2>&1
  echo "memcheck $v rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$v.log" | tail -1) | $(grep -E 'plugin checked' "$OUT/memcheck_$v.log" | sed 's/ (seed.*//')"
done
SGL_ATTN_NO_UNLOAD=1 SGL_ATTN_MLA_KERNEL=mma timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$A" check --plugin cuda_mla --filter "$F" > "$OUT/racecheck_mma.log" 2>&1
echo "racecheck mma rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_mma.log" | tail -1) | $(grep -E 'plugin checked' "$OUT/racecheck_mma.log" | sed 's/ (seed.*//')"
grep -oE 'Race reported between [A-Za-z]+ access at [^(]+' "$OUT/racecheck_mma.log" | sort | uniq -c | sort -rn | head -6
step "3. attnctl check --plugin cuda_mla and validate/cuda_mla: the whole matrix (defaults)"
timeout 60 "$A" check --plugin cuda_mla --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
echo "cuda_mla rc=$? $(tail -1 "$OUT/check_all.log")"
grep -E '^ +(fail|error) ' "$OUT/check_all.log" | head -8
timeout 60 "$A" check --plugin validate/cuda_mla --json > "$OUT/check_validate.json" 2> "$OUT/check_validate.log"
echo "validate/cuda_mla rc=$? $(tail -1 "$OUT/check_validate.log")"
grep -E '^ +(fail|error) ' "$OUT/check_validate.log" | head -8
step "4. decode B 64, L 4k, 16, 32 and 128 heads (tma / two / wide), page 64: unsplit vs +split (forward alone, median of batches)"
MLA_BENCH_ONLY='decode:b=64,l=4096,q=1,hq=16,page=64;decode:b=64,l=4096,q=1,hq=32,page=64;decode:b=64,l=4096,q=1,hq=128,page=64' \
  SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1 timeout 120 "$T/mla_gpu_bench" "$OUT/bench_split.json" \
  auto,auto+split,mma+ring,mma+ring+split auto,auto+split,mma+base,mma+base+split \
  > "$OUT/bench_split.log" 2> "$OUT/bench_split.err"
echo "rc=$?"; grep -vE '^running' "$OUT/bench_split.log"
echo "split / unsplit time (issue 20: the split costs nothing, ~1.00x):"
awk '$1 ~ /^decode:/ && NF >= 5 && $3 ~ /^[0-9.]+$/ { t[$1 " " $2] = $3; n[$1] = 1 }
     END { for (c in n) for (v in t) { split(v, p, " "); if (p[1] == c && p[2] !~ /\+split$/ && (c " " p[2] "+split") in t)
           printf "  %-40s %-10s %8.1f us -> %8.1f us  %.3fx\n", c, p[2], t[v], t[c " " p[2] "+split"], t[c " " p[2] "+split"] / t[v] } }' \
  "$OUT/bench_split.log" | sort | tee "$OUT/summary_split.txt"
echo "mla_engine: done [$SECONDS s]"
