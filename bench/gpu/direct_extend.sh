#!/usr/bin/env bash
# bench/gpu/direct_extend.sh - cuda_attn's 16-bit extend on issue 23's shapes with the defaults:
# the direct extend (new tokens from k / v on the ragged wgmma, save-KV as its programmatic
# dependent) on the batches without a prefix, save-KV then the paged wgmma extend on those with
# one (docs/cuda.md, "The direct extend").  ~1 min (run.sh cap 120).
#   1. attnctl check against float64 of the benched kinds of batch at an eighth of their
#      lengths, and the matrix's extends;
#   2. compute-sanitizer memcheck and racecheck of one small batch of each kind;
#   3. attnctl bench (--min-time 0.2), then the table beside the default and the lever of the
#      eca08d5 run (bench/results/h200-2026-12-05/run2-eca08d5/lever_extend_new_ragged): a
#      no-prefix shape should sit at the lever's time, a prefix shape at the old default's.
# Passing: check rc=0 with 0 failed, memcheck "0 errors", racecheck "0 hazards"; the table's
# "x eca08d5" column >= ~1.03 on the no-prefix rows and ~1.00 on the prefix rows.
#   Dry run here: DIRECT_PLUGIN_PATH=build/emu-plugins-sm90 DIRECT_SMALL=1 OUT=/tmp/x bash bench/gpu/direct_extend.sh
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so"
pp=()
[ -n "${DIRECT_PLUGIN_PATH:-}" ] && pp=(--plugin-path "$DIRECT_PLUGIN_PATH" --no-conf)
E=hq=16,hkv=16,d=128,dtype=bf16
QUICK=""
if [ "${DIRECT_SMALL:-0}" = 1 ]; then # tiny shapes and the quick matrix for the emulator
  QUICK=--quick
  CASES="extend:b=2,l=256,q=256,$E,page=16 extend:b=2,l=384,q=128,$E,page=16 extend:b=1,l=256,q=256,$E,page=1"
  SMALL=$CASES
else
  CASES="extend:b=16,l=1024,q=1024,$E,page=16 extend:b=4,l=4096,q=4096,$E,page=16 extend:b=1,l=16384,q=16384,$E,page=16
    extend:b=16,l=2048,q=1024,$E,page=16 extend:b=4,l=8192,q=4096,$E,page=16
    extend:b=4,l=4096,q=1024,hq=32,hkv=8,d=128,dtype=bf16,page=16 extend:b=4,l=4096,q=4096,$E,page=1"
  SMALL="extend:b=2,l=512,q=512,$E,page=16 extend:b=2,l=768,q=256,$E,page=16"
fi
# the check's float64 reference of the benched shapes takes minutes (27 s for 4 x 8k alone): the
# same kinds of batch at an eighth of the lengths
CHECK=${CHECK_CASES:-$(for c in $CASES; do
  python3 -c 'import re,sys; print(re.sub(r"\b([lq])=(\d+)", lambda m: "%s=%d" % (m[1], max(1, int(m[2]) // 8)), sys.argv[1]))' "$c"
done)}
args() { local c; for c; do printf -- '--case %s ' "$c"; done; }

step "1. check: the benched kinds of batch at an eighth of their lengths, then the matrix's extends"
# shellcheck disable=SC2046 # the case list is words
timeout 120 "$A" check "${pp[@]}" --plugin cuda_attn $(args $CHECK) > "$OUT/check_shapes.log" 2>&1
echo "check shapes: rc=$? $(tail -1 "$OUT/check_shapes.log")"
timeout 120 "$A" check "${pp[@]}" --plugin cuda_attn $QUICK --filter '^extend:' > "$OUT/check_matrix.log" 2>&1
echo "check matrix extends: rc=$? $(tail -1 "$OUT/check_matrix.log")"

step "2. sanitizers: one batch without a prefix, one with"
if command -v compute-sanitizer > /dev/null; then
  # shellcheck disable=SC2046
  sanitize memcheck 90 memcheck "$A" check "${pp[@]}" --plugin cuda_attn $(args $SMALL)
  # shellcheck disable=SC2046
  sanitize racecheck 120 racecheck "$A" check "${pp[@]}" --plugin cuda_attn $(args $SMALL)
else
  echo "no compute-sanitizer here: skipped"
fi

step "3. bench"
# shellcheck disable=SC2046
timeout 90 "$A" bench "${pp[@]}" --plugin cuda_attn $(args $CASES) --min-time 0.2 --json > "$OUT/bench.json" \
  2> "$OUT/bench.log"
echo "bench: rc=$? [$SECONDS s]"
python3 - "$OUT/bench.json" bench/results/h200-2026-12-05/run2-eca08d5/lever_extend_new_ragged/lever.json <<'PY'
import json, statistics, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return {}
now = {c["case"]: c for c in load(sys.argv[1]).get("cases", [])}
ref = {c["case"]: c for c in load(sys.argv[2]).get("bench", {}).get("cases", [])}
print("16-bit extend, the defaults; eca08d5 (H200): the old default and the lever (us, median of 3)")
print(f"{'case':<66} {'path':<7} {'us':>8} {'eca08d5':>8} {'lever':>8} {'x eca08d5':>9}")
for case, c in now.items():
    d = dict(x.split("=", 1) for x in case.partition(":")[2].split(",") if "=" in x)
    path = "direct" if d.get("l") == d.get("q") else "paged"
    us = c.get("median_us") or c.get("us")
    r = ref.get(case, {})
    old = statistics.median(r["default_us"]) if r.get("default_us") else None
    lev = statistics.median(r["lever_us"]) if r.get("lever_us") else None
    cell = lambda x, w=8, p=1: f"{x:{w}.{p}f}" if x else f"{'-':>{w}}"
    print(f"{case:<66} {path:<7} {cell(us)} {cell(old)} {cell(lev)} {cell(old / us if old and us else None, 9, 3)}")
PY
echo "direct_extend: done [$SECONDS s]"
