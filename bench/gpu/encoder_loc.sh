#!/usr/bin/env bash
# bench/gpu/encoder_loc.sh - cuda_attn's cross attention encoder slots
# (batch.encoder_out_cache_loc, SGL_ATTN_FEAT_ENCODER_LOC, issue 20 item 6):
#   1. attnctl check of the harness's cross cases (`encsave=1`: a cross layer
#      saves the encoder's K/V at the slots, then attends over them; and the
#      plain cross cases beside them) against float64 with each value of the
#      plugin option kernel (auto, mma, portable), and test_cuda_badidx (its
#      encoder-slot cases: an entry that is not its column's slot, one entry
#      more or fewer, through req_to_token and a page table: the pool changes
#      exactly at the entries given, the next metadata call names the entry or
#      the length);
#   2. compute-sanitizer memcheck of those cases with each kernel (the check
#      kernel encoder_loc_check.cu, the save at the encoder slots) and of
#      test_cuda_badidx, racecheck of the cases with the defaults;
#   3. the whole cuda_attn matrix, so nothing else broke.
# Passing: every check line "rc=0 ... 0 failed, ... 0 errors" with the
# encsave cases passed (not "not supported": the caps declare the bit),
# test_cuda_badidx rc=0 "0 failures" plain and under memcheck, memcheck
# "ERROR SUMMARY: 0 errors", racecheck "RACECHECK SUMMARY: 0 hazards".
# ~2 minutes.
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so" "$T/test_cuda_badidx"
F='encsave=|cross='
kernel_confs auto mma portable
step "1. check --filter '$F' with kernel=auto, mma, portable; test_cuda_badidx"
for k in auto mma portable; do
  ( timeout 60 "$A" check --plugin cuda_attn --conf "$OUT/conf_$k.json" --filter "$F" --json \
      > "$OUT/check_enc_$k.json" 2> "$OUT/check_enc_$k.log"
    echo "check $F kernel=$k: rc=$? $(tail -1 "$OUT/check_enc_$k.log")" > "$OUT/check_enc_$k.rc" ) &
done
( timeout 90 "$T/test_cuda_badidx" "$P" > "$OUT/badidx.log" 2>&1
  echo "test_cuda_badidx: rc=$? $(tail -1 "$OUT/badidx.log")" > "$OUT/badidx.rc" ) &
wait
for k in auto mma portable; do
  cat "$OUT/check_enc_$k.rc"
  grep -E "^  (FAIL|ERROR|not supported)" -A1 "$OUT/check_enc_$k.log" | head -8
  grep -cE "^  pass +.*encsave=1" "$OUT/check_enc_$k.log" | sed 's/^/  encsave cases passed: /'
done
cat "$OUT/badidx.rc"
grep -E "^(FAIL|SKIP|ok)" "$OUT/badidx.log" | head -12
step "2. memcheck of the cases (each kernel) and of test_cuda_badidx; racecheck (defaults); 3. the whole matrix"
for k in auto mma portable; do
  ( SGL_ATTN_NO_UNLOAD=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin cuda_attn \
      --conf "$OUT/conf_$k.json" --filter "$F" > "$OUT/memcheck_enc_$k.log" 2>&1
    echo "memcheck $F kernel=$k: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_enc_$k.log" | tail -1) $(tail -1 "$OUT/memcheck_enc_$k.log")" \
      > "$OUT/memcheck_enc_$k.rc" ) &
done
( SGL_ATTN_NO_UNLOAD=1 timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$A" check --plugin cuda_attn \
    --conf "$OUT/conf_auto.json" --filter "$F" > "$OUT/racecheck_enc_auto.log" 2>&1
  echo "racecheck $F kernel=auto: rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_enc_auto.log" | tail -1) $(tail -1 "$OUT/racecheck_enc_auto.log")" \
    > "$OUT/racecheck_enc_auto.rc" ) &
( timeout 180 compute-sanitizer --tool memcheck --error-exitcode 9 "$T/test_cuda_badidx" "$P" > "$OUT/badidx_memcheck.log" 2>&1
  echo "memcheck test_cuda_badidx: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/badidx_memcheck.log" | tail -1) $(grep -E 'checks,' "$OUT/badidx_memcheck.log" | tail -1)" \
    > "$OUT/badidx_memcheck.rc" ) &
( timeout 120 "$A" check --plugin cuda_attn --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
  echo "check cuda_attn (whole matrix, defaults): rc=$? $(tail -1 "$OUT/check_all.log")" > "$OUT/check_all.rc" ) &
wait
cat "$OUT"/memcheck_enc_*.rc "$OUT/racecheck_enc_auto.rc" "$OUT/badidx_memcheck.rc"
grep -E "^(FAIL|=========.*(Invalid|Error))" "$OUT/badidx_memcheck.log" | head -8
step "3. the whole cuda_attn matrix (defaults; ran beside the sanitizers)"
cat "$OUT/check_all.rc"
grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_all.log" | head -8
echo "encoder_loc: done [$SECONDS s]"
