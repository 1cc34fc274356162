#!/usr/bin/env bash
# bench/gpu/engine_index.sh - cuda_attn's ABI 1.2 page tables (batch.page_table)
# and slot maps (layer.slot_map): the harness's `ptable` / `smap` cases
# against float64 with each value of the plugin option kernel (auto: decode_reg
# and the wgmma extend with its TMA producer on the H200; mma: decode_mma /
# extend_mma; portable: the kernels hip_attn shares), test_cuda_badidx (a
# page-table page or slot-map entry out of range is a fault like a bad
# req_to_token entry: noted, nothing written through it, the next metadata
# call fails naming the tensor), compute-sanitizer memcheck of the cases with
# each kernel and racecheck with the defaults, the whole cuda_attn matrix (nothing else broke), then the cost:
# decode B64 L4k GQA 32/8 d128 page 16 and a 4k prefill timed through
# req_to_token, page_table, slot_map and both (attnctl bench, one call).
# ~2 minutes.
# Passing: every check line "rc=0 ... 0 failed, ... 0 errors" with a nonzero
# pass count for the filtered ones, test_cuda_badidx rc=0 "0 failures",
# memcheck "ERROR SUMMARY: 0 errors", racecheck "RACECHECK SUMMARY: 0 hazards"; the summary prints each index mode's time
# beside req_to_token's (page_table: about 1.00x is the aim; the harness's
# slot map is a random permutation of the whole pool, so its row is the cost of
# a fully scattered layer pool, the worst case, and it takes TMA off the extend).
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so" "$T/test_cuda_badidx"
kernel_confs auto mma portable
step "1. check --filter 'ptable|smap' with kernel=auto, mma, portable; test_cuda_badidx"
for k in auto mma portable; do
  ( timeout 60 "$A" check --plugin cuda_attn --conf "$OUT/conf_$k.json" --filter 'ptable|smap' --json \
      > "$OUT/check_idx_$k.json" 2> "$OUT/check_idx_$k.log"
    echo "check ptable|smap kernel=$k: rc=$? $(tail -1 "$OUT/check_idx_$k.log")" > "$OUT/check_idx_$k.rc" ) &
done
( timeout 90 "$T/test_cuda_badidx" "$P" > "$OUT/badidx.log" 2>&1
  echo "test_cuda_badidx: rc=$? $(tail -1 "$OUT/badidx.log")" > "$OUT/badidx.rc" ) &
wait
cat "$OUT"/check_idx_*.rc "$OUT/badidx.rc"
grep -hE "ptable|smap" "$OUT"/check_idx_auto.log | head -12
grep -E "^(FAIL|SKIP|ok)" "$OUT/badidx.log" | head -12
step "2. memcheck of the ptable|smap cases, each kernel; racecheck with the defaults; the whole cuda_attn matrix"
for k in auto mma portable; do
  ( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin cuda_attn \
      --conf "$OUT/conf_$k.json" --filter 'ptable|smap' > "$OUT/memcheck_idx_$k.log" 2>&1
    echo "memcheck ptable|smap kernel=$k: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_idx_$k.log" | tail -1) $(tail -1 "$OUT/memcheck_idx_$k.log")" \
      > "$OUT/memcheck_idx_$k.rc" ) &
done
( timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 "$A" check --plugin cuda_attn \
    --conf "$OUT/conf_auto.json" --filter 'ptable|smap' > "$OUT/racecheck_idx_auto.log" 2>&1
  echo "racecheck ptable|smap kernel=auto: rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_idx_auto.log" | tail -1) $(tail -1 "$OUT/racecheck_idx_auto.log")" \
    > "$OUT/racecheck_idx_auto.rc" ) &
( timeout 90 "$A" check --plugin cuda_attn --json > "$OUT/check_all.json" 2> "$OUT/check_all.log"
  echo "check cuda_attn (whole matrix, defaults): rc=$? $(tail -1 "$OUT/check_all.log")" > "$OUT/check_all.rc" ) &
wait
cat "$OUT"/memcheck_idx_*.rc "$OUT/racecheck_idx_auto.rc" "$OUT/check_all.rc"
step "3. bench: req_to_token vs page_table vs slot_map (one attnctl bench call)"
dec="decode:b=64,l=4096,hq=32,hkv=8,d=128,dtype=bf16,page=16"
pre="extend:b=1,l=4096,q=4096,hq=32,hkv=8,d=128,dtype=bf16,page=16"
cases=""
for base in "$dec" "$pre"; do
  for x in "" ",ptable=1" ",smap=1" ",ptable=1,smap=1" ""; do cases="$cases --case $base$x"; done
done
timeout 200 "$A" bench --plugin cuda_attn $cases --min-time 0.3 --roofline-gbps 4260 --json \
  > "$OUT/bench_idx.json" 2> "$OUT/bench_idx.log"
echo "bench rc=$?"; tail -12 "$OUT/bench_idx.log"
step "summary: each index mode's median beside req_to_token's (the mean of its two runs)"
python3 - "$OUT/bench_idx.json" <<'EOF' | tee "$OUT/summary_idx.txt"
import json, sys
try:
    rows = json.load(open(sys.argv[1])).get("cases", [])
except Exception as e:
    print(f"no bench JSON: {e}"); sys.exit(1)
def mode(c):
    k = c.split(":", 1)[1].split(",")
    return "+".join(x.split("=")[0] for x in k if x in ("ptable=1", "smap=1")) or "req_to_token"
groups = {}
for r in rows:
    c = r.get("case", "")
    groups.setdefault(c.split(":")[0], []).append((mode(c), r.get("median_us")))
for g, rs in groups.items():
    base = [t for m, t in rs if m == "req_to_token" and t]
    b = sum(base) / len(base) if base else None
    spread = (max(base) / min(base) - 1) * 100 if len(base) > 1 else 0
    print(f"{g}: req_to_token {b or 0:.1f} us (its two runs differ by {spread:.1f}%)")
    for m, t in rs:
        if m != "req_to_token":
            print(f"  {m:<14} {t or 0:9.1f} us  {t / b if t and b else 0:.3f}x req_to_token")
EOF
echo "engine_index: done [$SECONDS s]"
