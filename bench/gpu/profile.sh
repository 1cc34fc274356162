#!/usr/bin/env bash
# bench/gpu/profile.sh - where the time goes, by Nsight Compute (clocks left
# alone), for the open speed gaps; one ncu run per question, each capped
# (at most ~6.5 minutes; PROFILE="1 3" runs those questions only).
#   1. GDN chunked prefill 64k: every kernel's duration in one forward, then the
#      state pass's sections (stall reasons)
#   2. GDN stream decode B 256: speed of light, memory workload, stalls
#   3. cuda_attn wgmma prefill b 4 x 4k (page 16): durations of the extend and
#      save-KV launches, then the extend kernel's sections
#   4. cuda_mla: 128 rows (the wide kernel, compute-bound) and 16 heads (the mma
#      kernel, memory-bound)
#   5. cuda_attn fp8 decode b 64 x 4k (GQA 32/8, d128, page 16; issue 20): the
#      register-fed decode's sections and pipe utilisation: which unit bounds
#      it (only when PROFILE names it: PROFILE=5)
#   6. cuda_mla DSA sparse decode B 64, 128 heads, top-k 2048 (issue 21): the gather
#      kernel's durations and sections, combine included (only when PROFILE names it: PROFILE=6)
#   7. cuda_attn verify of 64 draft tokens, B 64 L 4k (GQA 32/8, d128, page 16;
#      issue 20): every launch's duration for the chain and the EAGLE mask
#      (plan, mask pack, save-KV, extend), then the EAGLE extend's sections
#      (PROFILE=7)
#   8. cuda_attn ragged qk 192 / v 128 at 1 x 16k and 2 x 8k beside the d128
#      ragged and the paged prefill without save (issue 20): a short bench, the
#      launches' durations, the qk192 kernel's sections (PROFILE=8)
#   9. gdn's fused chunk kernel (fused_chunk=1) at Qwen3.5 TP8 16 x 8k (issue 22):
#      one launch of lin_chunk_fused_cp_kernel, speed of light, warp states,
#      scheduler and memory sections: why a chunk step takes ~21 us and not ~4
#      (barrier / shared-memory / issue bound; docs/lab/linear.md) (PROFILE=9)
#  10. kda's chunked prefill at Kimi-Linear TP4 1 x 64k (issue 22): every kernel's
#      duration in one forward, then the UT kernel's sections (occupancy, warp
#      states, scheduler) (PROFILE=10)
#  11. where the linear prefill's instructions go (issue 22): every kernel's
#      duration in one forward of gdn 1 x 64k, mamba2 1 x 64k and kda 16 x 8k,
#      then kda's UT kernel (1 x 64k) by SASS instruction: executed count and
#      stall samples per instruction, the opcode mix (PROFILE=11)
#  12. the same SASS view of gdn's segmented state pass (first pass) at Qwen3.5
#      TP8 1 x 64k and of mamba2's UT kernel at Nemotron-H 1 x 64k, then the
#      sections of mamba2's UT kernel and stream prep (PROFILE=12)
#  13. mamba2's fused phase 2 (chunk_fused_state.cu, tile 64) at Nemotron-H
#      1 x 64k (issue 22): one launch's speed of light, warp states, scheduler
#      and memory sections, then by SASS instruction (PROFILE=13)
#  16. mamba2 1 x 64k's stream prep (which writes x and dt for the fused
#      phase 2's group form) by SASS instruction: executed count and stall
#      samples per instruction (PROFILE=16)
#  17. gdn's fused chunk kernel (the default at 16 x 8k) at Qwen3.5 TP8 16 x 8k
#      by SASS instruction: executed count and stall samples per instruction,
#      so the chunk step's ~30,000 cycles are placed by phase (PROFILE=17)
# Raw ncu output in $OUT/*.txt; the console gets the lines that matter.
. "$(dirname "$0")/common.sh"
need "$A" "$T/bench_lin" "$T/mla_gpu_bench"
on() { case " ${PROFILE:-1 2 3 4} " in *" $1 "*) return 0;; esac; return 1; }
NCU="ncu --clock-control none"
SECS="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"

if on 1; then
  step "1a. linear prefill 64k: kernel durations (first 16 launches)"
  BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 60 $NCU --metrics gpu__time_duration.sum -c 16 \
    $T/bench_lin /dev/null $P > "$OUT/lin_prefill_durs.txt" 2>&1; echo "rc=$?"
  grep -E "lin_|gpu__time_duration" "$OUT/lin_prefill_durs.txt" | sed 's/(lin_fwd.*//' | head -40
  step "1b. linear prefill: the state pass's sections"
  BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 60 $NCU $SECS -k regex:lin_chunk_state -c 1 \
    $T/bench_lin /dev/null $P > "$OUT/lin_state_sections.txt" 2>&1; echo "rc=$?"
  grep -E "Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|Occupancy|Registers|Shared Memory Config|Block Limit" \
    "$OUT/lin_state_sections.txt" | head -40
fi
if on 2; then
  step "2. linear stream decode B 256"
  BENCH_FILTER="B=256" BENCH_VARIANT=fast BENCH_QUICK=1 timeout 45 $NCU $SECS -k regex:lin_decode_stream -c 1 --launch-skip 3 \
    $T/bench_lin /dev/null $P > "$OUT/lin_decode_sections.txt" 2>&1; echo "rc=$?"
  grep -E "Duration|Throughput|DRAM|Stall|Warp Cycles|Eligible|Occupancy" "$OUT/lin_decode_sections.txt" | head -30
fi
if on 3; then
  C="extend:b=4,l=4096,q=4096,hq=16,hkv=16,d=128,dtype=bf16,page=16"
  step "3a. cuda_attn prefill b4 x 4k: kernel durations"
  timeout 45 $NCU --metrics gpu__time_duration.sum -c 12 $A bench --plugin cuda_attn --case $C --min-time 0.01 \
    > "$OUT/mha_durs.txt" 2>&1; echo "rc=$?"
  grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/mha_durs.txt" | sed 's/(.*//' | head -30
  step "3b. cuda_attn wgmma extend sections"
  timeout 60 $NCU $SECS --section SourceCounters -k regex:attn_extend_wgmma -c 1 --launch-skip 2 \
    $A bench --plugin cuda_attn --case $C --min-time 0.01 > "$OUT/mha_sections.txt" 2>&1; echo "rc=$?"
  grep -E "Duration|Throughput|Stall|Warp Cycles|Eligible|Issued|Occupancy|Registers" "$OUT/mha_sections.txt" | head -40
fi
if on 4; then
  # mla_gpu_bench OUT MEMORY-BOUND-VARIANTS COMPUTE-BOUND-VARIANTS: "auto" on the shape's side only
  export SGL_ATTN_MLA_STRICT=1
  step "4a. cuda_mla 128 rows (b 128, 4k): the wide kernel"
  MLA_BENCH_ONLY="decode:b=128,l=4096,q=1,hq=128,page=64" timeout 60 $NCU $SECS --section SourceCounters \
    -k "regex:mla_(wgmma_wide|mma)_kernel" -c 2 --launch-skip 4 $T/mla_gpu_bench /dev/null auto auto \
    > "$OUT/mla128_sections.txt" 2>&1; echo "rc=$?"
  grep -E "mla_.*kernel|Duration|Throughput|Stall|Warp Cycles|Eligible|Issued" "$OUT/mla128_sections.txt" | head -40
  step "4b. cuda_mla 16 heads (b 128, 16k): the mma kernel"
  MLA_BENCH_ONLY="decode:b=128,l=16384,q=1,hq=16,page=64" timeout 60 $NCU $SECS -k "regex:mla_(wgmma_wide|mma)_kernel" \
    -c 2 --launch-skip 4 $T/mla_gpu_bench /dev/null auto auto > "$OUT/mla16_sections.txt" 2>&1; echo "rc=$?"
  grep -E "mla_.*kernel|Duration|Throughput|DRAM|Stall|Warp Cycles|Eligible" "$OUT/mla16_sections.txt" | head -30
fi
if on 5; then
  C="decode:b=64,l=4096,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16"
  step "5. cuda_attn fp8 decode b64 x 4k: decode_reg sections"
  timeout 60 $NCU $SECS --section InstructionStats -k regex:attn_decode_reg -c 1 --launch-skip 2 \
    $A bench --plugin cuda_attn --case $C --min-time 0.01 > "$OUT/fp8_decode.txt" 2>&1; echo "rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Issue Slots|Executed Ipc|Stall|Warp Cycles|Eligible|Registers|ALU|FMA|XU|Pipe" \
    "$OUT/fp8_decode.txt" | head -30
fi
if on 6; then
  C="sparse_decode:b=64,l=4096,hq=128,dtype=bf16,page=64,topk=2048,save=0"
  step "6a. cuda_mla sparse decode B64: kernel durations"
  timeout 45 $NCU --metrics gpu__time_duration.sum -c 12 $A bench --plugin cuda_mla --case $C --min-time 0.01 \
    > "$OUT/mla_sparse_durs.txt" 2>&1; echo "rc=$?"
  grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/mla_sparse_durs.txt" | sed 's/(.*//' | head -30
  step "6b. cuda_mla sparse gather kernel sections"
  timeout 60 $NCU $SECS --section SourceCounters --section InstructionStats -k regex:mla_sparse_kernel -c 1 \
    --launch-skip 2 $A bench --plugin cuda_mla --case $C --min-time 0.01 > "$OUT/mla_sparse_sections.txt" 2>&1
  echo "rc=$?"
  grep -E "Duration|Throughput|DRAM|L2|Stall|Warp Cycles|Eligible|Issued|Occupancy|Registers|Pipe" \
    "$OUT/mla_sparse_sections.txt" | head -50
fi
if on 7; then
  S="hq=32,hkv=8,d=128,dtype=bf16,page=16"
  for v in "verify:b=64,l=4096,q=64,$S" "verify:b=64,l=4096,q=64,$S,tree=2"; do
    n=$(echo "$v" | grep -q tree && echo eagle || echo chain)
    step "7a. cuda_attn $n verify B64 L4k: launch durations"
    timeout 45 $NCU --metrics gpu__time_duration.sum -c 16 $A bench --plugin cuda_attn --case "$v" --min-time 0.01 \
      > "$OUT/verify_${n}_durs.txt" 2>&1; echo "rc=$?"
    grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/verify_${n}_durs.txt" | sed 's/(.*//' | head -34
  done
  step "7b. the EAGLE verify's extend sections"
  timeout 60 $NCU $SECS --section InstructionStats -k regex:attn_extend_wgmma -c 1 --launch-skip 2 \
    $A bench --plugin cuda_attn --case "verify:b=64,l=4096,q=64,$S,tree=2" --min-time 0.01 > "$OUT/verify_sections.txt" 2>&1
  echo "rc=$?"
  grep -E "Duration|Throughput|Stall|Warp Cycles|Eligible|Issued|Occupancy|Registers|Pipe" "$OUT/verify_sections.txt" | head -40
fi
if on 8; then
  R="hq=16,hkv=16,dtype=bf16"
  step "8a. ragged qk192 / d128 / paged prefill (save=0) at 1 x 16k and 2 x 8k"
  timeout 60 $A bench --plugin cuda_attn --min-time 0.2 \
    --case "ragged:b=1,lq=16384,$R,d=192,dv=128" --case "ragged:b=1,lq=16384,$R,d=128,lse=0" \
    --case "extend:b=1,l=16384,q=16384,$R,d=128,page=16,save=0" \
    --case "ragged:b=2,lq=8192,$R,d=192,dv=128" --case "extend:b=2,l=8192,q=8192,$R,d=128,page=16,save=0" \
    > "$OUT/ragged_bench.txt" 2>&1; echo "rc=$?"; tail -8 "$OUT/ragged_bench.txt"
  step "8b. ragged qk192 1 x 16k: launch durations, then the kernel's sections"
  timeout 45 $NCU --metrics gpu__time_duration.sum -c 10 $A bench --plugin cuda_attn \
    --case "ragged:b=1,lq=16384,$R,d=192,dv=128" --min-time 0.01 > "$OUT/ragged_durs.txt" 2>&1; echo "rc=$?"
  grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/ragged_durs.txt" | sed 's/(.*//' | head -24
  timeout 60 $NCU $SECS --section InstructionStats -k regex:attn_extend_wgmma -c 1 --launch-skip 1 \
    $A bench --plugin cuda_attn --case "ragged:b=1,lq=16384,$R,d=192,dv=128" --min-time 0.01 > "$OUT/ragged_sections.txt" 2>&1
  echo "rc=$?"
  grep -E "attn_|Duration|Throughput|Stall|Warp Cycles|Eligible|Issued|Occupancy|Registers|Shared Memory|Block Limit" "$OUT/ragged_sections.txt" | head -40
fi
# one linear kernel's launch: speed of light, warp states, scheduler, memory: lin_sections NAME FILTER KERNEL
lin_sections() {
  BENCH_SET=prefill BENCH_FILTER="$2" BENCH_QUICK=1 timeout 120 $NCU \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    -k "regex:$3" -c 1 $T/bench_lin /dev/null $P > "$OUT/$1_sections.txt" 2>&1
  echo "rc=$?"
  grep -E "$3|Duration|Throughput|Stall|Warp Cycles|Eligible|Issued|Issue Slot|No Eligible|Active Warps|Bank|Shared" \
    "$OUT/$1_sections.txt" | head -50
}
if on 9; then
  step "9. gdn fused chunk kernel, Qwen3.5 TP8 16 x 8k, fused_chunk=1: one launch's sections"
  SGL_ATTN_LIN_FUSED_CHUNK=1 lin_sections lin_fused_cp "hv8/hk2 16x8k" lin_chunk_fused_cp_kernel
fi
if on 10; then
  step "10a. kda prefill 1 x 64k: kernel durations of one forward"
  BENCH_SET=prefill BENCH_FILTER="kda,1x64k" BENCH_QUICK=1 timeout 90 $NCU \
    --metrics gpu__time_duration.sum -c 12 $T/bench_lin /dev/null $P > "$OUT/kda_durs.txt" 2>&1
  echo "rc=$?"
  grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/kda_durs.txt" | sed 's/(lin_fwd.*//' | head -30
  step "10b. kda prefill 1 x 64k: the UT kernel's sections"
  BENCH_SET=prefill BENCH_FILTER="kda,1x64k" BENCH_QUICK=1 timeout 90 $NCU \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    -k regex:lin_chunk_ut_kernel -c 1 $T/bench_lin /dev/null $P > "$OUT/kda_ut_sections.txt" 2>&1
  echo "rc=$?"
  grep -E "Duration|Throughput|Stall|Warp Cycles|Eligible|Issued|No Eligible|Active Warps|Occupancy|Block Limit" \
    "$OUT/kda_ut_sections.txt" | head -40
fi
if on 11; then
  for f in "hv8/hk2,1x64k" "mamba2,1x64k" "kda,16x8k"; do
    n=$(echo "$f" | tr -c 'a-z0-9\n' _)
    step "11a. linear prefill $f: kernel durations of one forward"
    BENCH_SET=prefill BENCH_FILTER="$f" BENCH_QUICK=1 timeout 90 $NCU \
      --metrics gpu__time_duration.sum -c 10 $T/bench_lin /dev/null $P > "$OUT/durs_$n.txt" 2>&1
    echo "rc=$?"
    grep -E "^  [a-z_].*\(|gpu__time_duration" "$OUT/durs_$n.txt" | sed 's/(lin_fwd.*//' | head -24
  done
  step "11b. kda 1 x 64k: the UT kernel by SASS instruction"
  BENCH_SET=prefill BENCH_FILTER="kda,1x64k" BENCH_QUICK=1 timeout 150 $NCU \
    --section SourceCounters --section InstructionStats --section WarpStateStats \
    -k regex:lin_chunk_ut_kernel -c 1 -o "$OUT/kda_ut" $T/bench_lin /dev/null $P > "$OUT/kda_ut_src.log" 2>&1
  echo "rc=$?"
  ncu -i "$OUT/kda_ut.ncu-rep" --page details --print-details all > "$OUT/kda_ut_details.txt" 2>&1
  grep -E "Duration|Executed Instructions|Stall|Warp Cycles|Issued" "$OUT/kda_ut_details.txt" | head -30
  ncu -i "$OUT/kda_ut.ncu-rep" --page source --csv --print-source sass > "$OUT/kda_ut_sass.csv" 2>&1
  echo "sass rc=$? lines $(wc -l < "$OUT/kda_ut_sass.csv")"
  head -c 600 "$OUT/kda_ut_sass.csv"; echo
  gzip -9 "$OUT/kda_ut_sass.csv"
  rm -f "$OUT/kda_ut.ncu-rep"
fi
# one kernel's launch by SASS instruction: sass_of NAME FILTER KERNEL-REGEX [SKIP]
sass_of() {
  BENCH_SET=prefill BENCH_FILTER="$2" BENCH_QUICK=1 timeout 150 $NCU \
    --section SourceCounters --section InstructionStats --section WarpStateStats \
    -k "regex:$3" -c 1 --launch-skip "${4:-0}" -o "$OUT/$1" $T/bench_lin /dev/null $P > "$OUT/$1_src.log" 2>&1
  echo "rc=$?"
  ncu -i "$OUT/$1.ncu-rep" --page details --print-details all > "$OUT/$1_details.txt" 2>&1
  grep -E "Executed Instructions  |Warp Cycles Per Issued|Issued Warp" "$OUT/$1_details.txt" | head -4
  ncu -i "$OUT/$1.ncu-rep" --page source --csv --print-source sass > "$OUT/$1_sass.csv" 2>&1
  echo "sass rc=$? lines $(wc -l < "$OUT/$1_sass.csv")"
  gzip -9 "$OUT/$1_sass.csv"
  rm -f "$OUT/$1.ncu-rep"
}
if on 12; then
  step "12a. gdn 1 x 64k: the segmented state pass (first pass) by SASS instruction"
  sass_of gdn_state1 "hv8/hk2,1x64k" "lin_chunk_state_kernel"
  step "12b. mamba2 1 x 64k: the UT kernel by SASS instruction"
  sass_of m2_ut "mamba2,1x64k" "lin_chunk_ut_kernel"
  step "12c. mamba2 1 x 64k: the UT kernel's and the stream prep's sections"
  lin_sections m2_ut "mamba2,1x64k" lin_chunk_ut_kernel
  lin_sections m2_prep "mamba2,1x64k" lin_chunk_prep_stream_kernel
fi
if on 13; then
  step "13a. mamba2 1 x 64k: the fused phase 2's sections"
  lin_sections m2_fs "mamba2,1x64k" lin_chunk_fused_state_kernel
  step "13b. mamba2 1 x 64k: the fused phase 2 by SASS instruction"
  sass_of m2_fs "mamba2,1x64k" "lin_chunk_fused_state_kernel"
fi
if on 16; then
  step "16. mamba2 1 x 64k: the stream prep by SASS instruction"
  sass_of m2_prepx "mamba2,1x64k" "lin_chunk_prep_stream_kernel"
fi
if on 17; then
  step "17. gdn 16 x 8k: the fused chunk kernel by SASS instruction"
  sass_of gdn_fused_cp "hv8/hk2,16x8k" "lin_chunk_fused_cp_kernel"
fi
echo "profile: done [$SECONDS s]"
