#!/usr/bin/env bash
# bench/gpu/lever_savekv.sh - the fused save-KV lever (SGL_ATTN_WGMMA_FUSED_SAVE=1:
# forward_extend's save_kv_cache inside the wgmma extend kernel, no separate
# attn_save_kv_kernel launch; launch_wgmma.cu, kern_extend_wgmma.cuh).  One GPU
# call on an H200, ~60 s (<= 95 s: timeouts 40 + 25 + 25, save0 only in what is left).  Prebuilt
# build/, run from the repo root, OUT=dir.  Builds nothing.
#   1. at once (host-bound float64 reference; sanitizers on tiny cases):
#      a. attnctl check --filter extend with the switch on (the cases save by
#         default; full_verify.c checks every pool slot: each new token's row
#         at its out_cache_loc, every other slot untouched), and the default
#         as the control;
#      b. compute-sanitizer memcheck and racecheck, switch on, two small d128
#         extend cases (GQA + prefix + ragged, and a window + sinks);
#   2. attnctl bench on the prefill shapes (bench/cuda/shapes.py PREFILL: causal,
#      d128, 16 heads, 16k tokens, bf16, page 16): default, fused (if its check
#      passed), then the default with save=0 (no save at all: the ceiling);
#   3. the table: S -> TFLOP/s default / fused / save0, fused / default, and
#      $OUT/summary.json.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BUDGET=${LEVER_BUDGET_S:-95}
T0=$SECONDS
el() { echo $(( SECONDS - T0 )); }
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo; echo "### $* [$(el) s]"; }
for f in "$A" "$SO"; do [ -e "$f" ] || echo "MISSING $f (build here first and carry build/)"; done
FUSED="SGL_ATTN_WGMMA_FUSED_SAVE=1"
SMALL1="extend:b=3,l=300,q=150,hq=8,hkv=2,d=128,dtype=bf16,page=16,ragged=1"
SMALL2="extend:b=2,l=300,q=200,hq=8,hkv=2,d=128,dtype=f16,page=1,window=64,sinks=1,ragged=1"

step "1. check --filter extend (fused, default) and the sanitizers, at once"
( env $FUSED timeout 40 "$A" check --plugin cuda_attn --filter extend --json \
    > "$OUT/check_fused.json" 2> "$OUT/check_fused.log"; echo $? > "$OUT/check_fused.rc" ) &
p1=$!
( timeout 40 "$A" check --plugin cuda_attn --filter extend --json \
    > "$OUT/check_default.json" 2> "$OUT/check_default.log"; echo $? > "$OUT/check_default.rc" ) &
p2=$!
sanitize() { # tool
  if ! command -v compute-sanitizer >/dev/null; then echo "no compute-sanitizer" > "$OUT/san_$1.log"; echo 127 > "$OUT/san_$1.rc"; return; fi
  env $FUSED timeout 40 compute-sanitizer --tool "$1" --error-exitcode 9 "$A" check --plugin cuda_attn \
    --case "$SMALL1" --case "$SMALL2" > "$OUT/san_$1.log" 2>&1
  echo $? > "$OUT/san_$1.rc"
}
( sanitize memcheck ) &
p3=$!
( sanitize racecheck ) &
p4=$!
( env $FUSED SGL_ATTN_DEBUG=1 timeout 25 "$A" check --plugin cuda_attn --case "$SMALL1" > "$OUT/kernels_fused.log" 2>&1 ) &
p5=$!
wait $p1 $p2 $p3 $p4 $p5
ok() { # the check passed: rc 0 and a summary line with 0 failed, 0 errors
  [ "$(cat "$OUT/check_$1.rc" 2>/dev/null)" = 0 ] && tail -1 "$OUT/check_$1.log" | grep -q " 0 failed, .* 0 errors"
}
for v in fused default; do
  echo "check $v: rc=$(cat "$OUT/check_$v.rc") $(tail -1 "$OUT/check_$v.log")"
  ok "$v" || grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_$v.log" | head -12
done
for t in memcheck racecheck; do
  echo "$t: rc=$(cat "$OUT/san_$t.rc") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|no compute-sanitizer' "$OUT/san_$t.log" | tr '\n' ' ' | cut -c1-300)"
  [ "$(cat "$OUT/san_$t.rc")" = 0 ] || grep -E "Error|Race|Invalid|Hazard" "$OUT/san_$t.log" | head -6
done
# did the switch take? (the backend's create line at SGL_ATTN_DEBUG=1 says "(extend: fused save)")
if grep -q "fused save" "$OUT/kernels_fused.log"; then echo "fused save: on ($(grep -m1 -o 'kernels [^,]*' "$OUT/kernels_fused.log"))"
else echo "fused save: no '(extend: fused save)' create line in kernels_fused.log: OFF (the fused checks ran the separate save)?"; grep -m3 -iE "kernels|warn|error" "$OUT/kernels_fused.log" | cut -c1-200; fi

step "2. bench"
shapes() { python3 - "$1" <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import PREFILL, prefill_case
c = [prefill_case(b, s) for b, s in PREFILL]
if sys.argv[1] == "save0": c = [x + ",save=0" for x in c]
print(" ".join("--case " + x for x in c))
PY
}
bench() { # name envs which timeout
  env $2 timeout "$4" "$A" bench --plugin cuda_attn $(shapes "$3") --min-time 0.2 --json \
    > "$OUT/bench_$1.json" 2> "$OUT/bench_$1.log"
  echo "bench $1 ($2): rc=$? [$(el) s]"
}
bench default "" all 25
if ok fused; then bench fused "$FUSED" all 25; else echo "skip bench fused: its check failed"; fi
if [ "$(left)" -ge 16 ]; then bench save0 "" save0 $(( $(left) - 3 )); else echo "skip bench save0: $(left) s left"; fi

step "3. table"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(v):
    try:
        d = json.load(open(os.path.join(out, f"bench_{v}.json")))
    except Exception:
        return {}
    r = {}
    for c in d.get("cases", []):
        kv = dict(x.split("=", 1) for x in c.get("case", "").partition(":")[2].split(",") if "=" in x)
        if c.get("tflops"):
            r[int(kv.get("l", 0))] = c
    return r
res = {v: load(v) for v in ("default", "fused", "save0")}
S = [1024, 2048, 4096, 8192, 16384]
print("prefill TFLOP/s: causal, d128, 16 heads, b x s = 16k tokens, bf16, page 16; save0 = no save-KV at all")
print(f"{'S':>6} | {'default':>8} {'fused':>8} {'save0':>8} | fused/default  (save0/default)")
summary = {"shapes": {}}
for s in S:
    t = {v: res[v].get(s, {}).get("tflops") for v in res}
    us = {v: res[v].get(s, {}).get("median_us") for v in res}
    f = lambda x: f"{x:8.1f}" if x else f"{'-':>8}"
    r1 = t["fused"] / t["default"] if t["fused"] and t["default"] else None
    r2 = t["save0"] / t["default"] if t["save0"] and t["default"] else None
    print(f"{s:>6} | {f(t['default'])} {f(t['fused'])} {f(t['save0'])} | "
          + (f"{r1:13.3f}x" if r1 else f"{'-':>14}") + (f"  ({r2:.3f}x)" if r2 else ""))
    summary["shapes"][str(s)] = {"tflops": t, "median_us": us, "fused_over_default": r1, "save0_over_default": r2}
for v in ("fused", "default"):
    try:
        summary.setdefault("checks", {})[v] = open(os.path.join(out, f"check_{v}.log")).read().strip().splitlines()[-1]
    except Exception:
        pass
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "lever_savekv: done [$(el) s]"
