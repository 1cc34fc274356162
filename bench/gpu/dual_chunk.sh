#!/usr/bin/env bash
# bench/gpu/dual_chunk.sh - cuda_attn's dual chunk attention (issue 24,
# docs/dual_chunk.md): the dual chunk cases of the check matrix ('chunk=')
# against float64, the whole cuda_attn matrix (nothing else broke),
# compute-sanitizer memcheck of the dual chunk cases and racecheck of the
# quick ones, then the issue's timings through the public C API
# (attnctl bench) at Qwen2.5-7B-Instruct-1M's per-rank shape (28 q / 4 kv
# heads, d128, bf16, page 16): decode at 256k cached tokens (B 1 and 8) and
# prefills of 16k, 32k, 64k and 128k tokens (B 1), each beside the same shape
# through the plain kernels (the defaults, and kernel=mma).  Dual chunk runs
# with the model's sizes (chunk 262144, local 8192, original 262144) and with
# chunk 32768 / local 4096, where all three parts work; its decode is the mma
# decode's DCA form, its extend the default extend's (on the H200 the wgmma
# kernel's DCA form); the prefill with all three parts is also timed under
# kernel=mma (the mma extend's DCA form) to show what the wgmma one gains.
# Each prefill case is its own attnctl under its own cap (15 / 20 / 30 / 45 s
# by length), shortest first; a variant cut at one length skips the longer
# ones.  summary_dual_chunk.txt: dual chunk / plain per shape (issue 24:
# <= 1.30x against the defaults).  ~3.5 minutes; DC_PREFILL_ONLY=1: the
# prefills alone (~2 minutes, run.sh cap 240 s).  DC_LENS="256 512": other
# prefill lengths (a dry run on the emulator: SGL_ATTN_PLUGIN_PATH=build/emu-plugins-sm90).
# Passing: check lines "rc=0 ... 0 failed, ... 0 errors", memcheck "ERROR
# SUMMARY: 0 errors", racecheck "RACECHECK SUMMARY: 0 hazards", every prefill
# line rc=0, and the summary's ratios.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"
for k in auto mma; do
  printf '{"sglattn_conf": 1, "plugin_options": {"cuda_attn": {"kernel": "%s"}}}\n' "$k" > "$OUT/conf_$k.json"
done
S="hq=28,hkv=4,d=128,dtype=bf16,page=16"
MODEL="chunk=262144,local=8192,omp=262144"
THREE="chunk=32768,local=4096,omp=262144"
if [ -z "${DC_PREFILL_ONLY:-}" ]; then # DC_PREFILL_ONLY=1: the prefill timing alone
step "check: dual chunk cases, the whole matrix, memcheck, racecheck (in parallel)"
( timeout 90 "$A" check --plugin cuda_attn --filter 'chunk=' --json > "$OUT/check_dc.json" 2> "$OUT/check_dc.log"
  echo "check chunk= (kernel=auto): rc=$? $(tail -1 "$OUT/check_dc.log")" > "$OUT/check_dc.rc" ) &
( timeout 90 "$A" check --plugin cuda_attn --conf "$OUT/conf_mma.json" --filter 'chunk=' --json > "$OUT/check_dc_mma.json" \
    2> "$OUT/check_dc_mma.log"
  echo "check chunk= (kernel=mma: 64-row plan items): rc=$? $(tail -1 "$OUT/check_dc_mma.log")" > "$OUT/check_dc_mma.rc" ) &
( timeout 90 "$A" check --plugin cuda_attn --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
  echo "check whole matrix: rc=$? $(tail -1 "$OUT/check_all.log")" > "$OUT/check_all.rc" ) &
( SGL_ATTN_NO_UNLOAD=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$A" check --plugin cuda_attn --filter 'chunk=' > "$OUT/memcheck_dc.log" 2>&1
  echo "memcheck chunk=: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_dc.log" | tail -1) $(tail -1 "$OUT/memcheck_dc.log")" \
    > "$OUT/memcheck_dc.rc" ) &
( SGL_ATTN_NO_UNLOAD=1 timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$A" check --plugin cuda_attn --quick --filter 'chunk=' > "$OUT/racecheck_dc.log" 2>&1
  echo "racecheck quick chunk=: rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_dc.log" | tail -1) $(tail -1 "$OUT/racecheck_dc.log")" \
    > "$OUT/racecheck_dc.rc" ) &
wait
cat "$OUT"/check_dc.rc "$OUT"/check_dc_mma.rc "$OUT"/check_all.rc "$OUT"/memcheck_dc.rc "$OUT"/racecheck_dc.rc
grep -hE "^ *(fail|error)" "$OUT"/check_dc.log "$OUT"/check_dc_mma.log "$OUT"/check_all.log | head -20

step "bench: decode at 256k (B 1, 8): plain, dual chunk (model sizes, three parts)"
dec=""; pdec=""
for b in 1 8; do
  c="decode:b=$b,l=262144,$S"
  dec="$dec --case $c --case $c,$MODEL --case $c,$THREE"; pdec="$pdec --case $c"
done
timeout 120 "$A" bench --plugin cuda_attn --conf "$OUT/conf_auto.json" $dec --min-time 0.3 --roofline-gbps 4260 --json \
  > "$OUT/bench_dc_decode.json" 2> "$OUT/bench_dc_decode.log"; echo "decode (auto) rc=$?"
timeout 60 "$A" bench --plugin cuda_attn --conf "$OUT/conf_mma.json" $pdec --min-time 0.3 --json \
  > "$OUT/bench_dc_decode_mma.json" 2> "$OUT/bench_dc_decode_mma.log"; echo "decode (plain kernel=mma) rc=$?"
fi
step "bench: prefill of 16k, 32k, 64k, 128k tokens (B 1): plain (defaults, kernel=mma), dual chunk (model sizes, three parts; three parts with kernel=mma)"
# One attnctl a case, each under its cap, so a slow case costs its cap only.
declare -A cut
for l in ${DC_LENS:-16384 32768 65536 131072}; do
  cap=$(( l <= 16384 ? 15 : l <= 32768 ? 20 : l <= 65536 ? 30 : 45 ))
  c="extend:b=1,l=$l,q=$l,$S"
  for v in plain mma model three three_mma; do
    if [ -n "${cut[$v]:-}" ]; then echo "prefill $v l=$l: skipped (cut at l=${cut[$v]})"; continue; fi
    case $v in
      plain) conf=auto x="";; mma) conf=mma x="";; model) conf=auto x=",$MODEL";; three) conf=auto x=",$THREE";;
      three_mma) conf=mma x=",$THREE";;
    esac
    f="$OUT/bench_dc_prefill_${l}_$v"
    t0=$SECONDS
    timeout "$cap" "$A" bench --plugin cuda_attn --conf "$OUT/conf_$conf.json" --case "$c$x" --min-time 0.3 --json \
      > "$f.json" 2> "$f.log"
    rc=$?
    [ $rc = 124 ] && cut[$v]=$l
    echo "prefill $v l=$l: rc=$rc in $((SECONDS - t0)) s (cap $cap s): $(grep -E '^  extend' "$f.log" | awk '$2 + 0 > 0 {print $2 " us"}')"
  done
done
step "summary: dual chunk / plain at equal length (issue 24: <= 1.30x against the defaults)"
python3 bench/cuda/dual_chunk_summary.py "$OUT" | tee "$OUT/summary_dual_chunk.txt"
echo "dual_chunk: done [$SECONDS s]"
