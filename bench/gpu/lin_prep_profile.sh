#!/usr/bin/env bash
# bench/gpu/lin_prep_profile.sh - the chunked prefill's prep for gdn (conv width 4) under Nsight
# Compute, the w4 prep (the default) beside prep_stream=1 (chunk_prep_stream.cu; issue 22's lever
# prep_stream), at Qwen3.5 TP8 1 x 64k and Qwen3-Next 1 x 32k: per launch the duration, DRAM
# throughput and bytes, SM throughput, warps active, registers.  Raw ncu output in
# $OUT/prep_<0|1>_<shape>.txt; the console gets the metric lines.
#   OUT=dir bash bench/gpu/lin_prep_profile.sh       on the GPU (or: bash bench/gpu/run.sh lin_prep_profile)
#   PREP_PROFILE_DRY=1 OUT=dir bash ...              print the commands only (no GPU, no ncu)
. "$(dirname "$0")/common.sh"
DRY=${PREP_PROFILE_DRY:-0}
[ "$DRY" = 1 ] || need "$T/bench_lin"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__grid_size,launch__block_size
for shape in "qwen3.5 tp8 hv8/hk2 1x64k" "qwen3-next hv32/hk16 1x32k"; do
  tag=$(echo "$shape" | tr ' /' '__')
  for v in 0 1; do
    step "prep_stream=$v, $shape: the first two prep launches"
    f=$OUT/prep_${v}_$tag.txt
    cmd=(env "SGL_ATTN_LIN_PREP_STREAM=$v" BENCH_SET=prefill BENCH_QUICK=1 "BENCH_FILTER=$shape"
         timeout 150 ncu --clock-control none --metrics "$M" -k regex:lin_chunk_prep -c 2 "$T/bench_lin" /dev/null "$P")
    if [ "$DRY" = 1 ]; then printf '%q ' "${cmd[@]}"; echo "> $f"; continue; fi
    "${cmd[@]}" > "$f" 2>&1; echo "rc=$?"
    grep -E "lin_chunk_prep|gpu__time|dram__|sm__|launch__" "$f" | head -24
  done
done
