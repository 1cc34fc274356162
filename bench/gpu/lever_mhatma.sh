#!/usr/bin/env bash
# bench/gpu/lever_mhatma.sh - the TMA producer of the wgmma extend kernel
# (SGL_ATTN_WGMMA_TMA=1: whole 16-row page boxes of K/V by TMA instead of the
# per-row cp.async gather; kern_extend_wgmma.cuh wg_tma_boxes, attn_tmap.c).
# One GPU call on an H200, <= ~90 s.  Prebuilt build/, repo root, OUT=dir.
#   1. at once: attnctl check --filter extend with the switch on and off; three
#      small cases with it on and the overlapped consumer (the other TMA
#      kernel); compute-sanitizer memcheck and racecheck, switch on, on them;
#      did the switch take (create line "(extend: TMA)" at SGL_ATTN_DEBUG=1)
#   2. attnctl bench, prefill shapes (bench/cuda/shapes.py PREFILL: causal,
#      d128, 16 heads, 16k tokens, bf16, page 16): default, TMA; then, time
#      left, both with SGL_ATTN_WGMMA_L2SEC=1 (the lead's work order)
#   3. the table: S -> TFLOP/s and the ratios; $OUT/summary.json
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset SGL_ATTN_WGMMA_TMA SGL_ATTN_WGMMA_L2SEC SGL_ATTN_WGMMA_OVERLAP SGL_ATTN_WGMMA_FUSED_SAVE
BUDGET=${LEVER_BUDGET_S:-90}
T0=$SECONDS
el() { echo $(( SECONDS - T0 )); }
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo; echo "### $* [$(el) s]"; }
for f in "$A" "$SO"; do [ -e "$f" ] || echo "MISSING $f (build here first and carry build/)"; done
TMA="SGL_ATTN_WGMMA_TMA=1"
# GQA + prefix + ragged (partial last boxes); page 64 + window (unaligned tile
# starts: cp.async) + sinks, fp16; a 1k prefill on pages of 32
C1="extend:b=3,l=300,q=150,hq=8,hkv=2,d=128,dtype=bf16,page=16,ragged=1"
C2="extend:b=2,l=700,q=333,hq=4,hkv=4,d=128,dtype=f16,page=64,window=100,sinks=1,ragged=1"
C3="extend:b=1,l=1000,q=1000,hq=16,hkv=16,d=128,dtype=bf16,page=32"
SMALL="--case $C1 --case $C2 --case $C3"

step "1. checks (TMA on / off / on + overlap), sanitizers, at once"
( env $TMA timeout 45 "$A" check --plugin cuda_attn --filter extend > "$OUT/check_tma.log" 2>&1; echo $? > "$OUT/check_tma.rc" ) &
( timeout 45 "$A" check --plugin cuda_attn --filter extend > "$OUT/check_default.log" 2>&1; echo $? > "$OUT/check_default.rc" ) &
( env $TMA SGL_ATTN_WGMMA_OVERLAP=1 timeout 30 "$A" check --plugin cuda_attn $SMALL > "$OUT/check_tma_ovl.log" 2>&1; echo $? > "$OUT/check_tma_ovl.rc" ) &
sanitize() { # tool
  if ! command -v compute-sanitizer >/dev/null; then echo "no compute-sanitizer" > "$OUT/san_$1.log"; echo 127 > "$OUT/san_$1.rc"; return; fi
  env $TMA timeout 45 compute-sanitizer --tool "$1" --error-exitcode 9 "$A" check --plugin cuda_attn \
    --case "$C1" --case "$C2" > "$OUT/san_$1.log" 2>&1
  echo $? > "$OUT/san_$1.rc"
}
( sanitize memcheck ) &
( sanitize racecheck ) &
( env $TMA SGL_ATTN_DEBUG=1 timeout 25 "$A" check --plugin cuda_attn --case "$C1" > "$OUT/kernels_tma.log" 2>&1 ) &
wait
ok() { # rc 0 and a summary line with 0 failed, 0 errors
  [ "$(cat "$OUT/check_$1.rc" 2>/dev/null)" = 0 ] && tail -1 "$OUT/check_$1.log" | grep -q " 0 failed, .* 0 errors"
}
for v in tma default tma_ovl; do
  echo "check $v: rc=$(cat "$OUT/check_$v.rc" 2>/dev/null) $(tail -1 "$OUT/check_$v.log")"
  ok "$v" || grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_$v.log" | head -12
done
for t in memcheck racecheck; do
  echo "$t: rc=$(cat "$OUT/san_$t.rc" 2>/dev/null) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|no compute-sanitizer' "$OUT/san_$t.log" | tr '\n' ' ' | cut -c1-300)"
  [ "$(cat "$OUT/san_$t.rc" 2>/dev/null)" = 0 ] || grep -E "Error|Race|Invalid|Hazard" "$OUT/san_$t.log" | head -6
done
if grep -q "(extend: TMA)" "$OUT/kernels_tma.log"; then echo "TMA: on ($(grep -m1 -o 'kernels [^,]*' "$OUT/kernels_tma.log"))"
else echo "TMA: no '(extend: TMA)' create line in kernels_tma.log: OFF (the TMA checks ran cp.async)?"; grep -m3 -iE "kernels|warn|error" "$OUT/kernels_tma.log" | cut -c1-200; fi

step "2. bench"
cases=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+prefill_case(b,s) for b,s in PREFILL))')
bench() { # name envs timeout
  env $2 timeout "$3" "$A" bench --plugin cuda_attn $cases --min-time 0.15 --json \
    > "$OUT/bench_$1.json" 2> "$OUT/bench_$1.log"
  echo "bench $1 ($2): rc=$? [$(el) s]"
}
bench default "" 18
if ok tma; then bench tma "$TMA" 18; else echo "skip bench tma: its check failed"; fi
if [ "$(left)" -ge 30 ] && ok tma; then
  bench sec1 "SGL_ATTN_WGMMA_L2SEC=1" 13
  bench tma_sec1 "$TMA SGL_ATTN_WGMMA_L2SEC=1" 13
else echo "skip the L2SEC=1 pair: $(left) s left"; fi

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
V = ("default", "tma", "sec1", "tma_sec1")
res = {v: load(v) for v in V}
print("prefill TFLOP/s: causal, d128, 16 heads, b x s = 16k tokens, bf16, page 16 (sec1 = SGL_ATTN_WGMMA_L2SEC=1)")
print(f"{'S':>6} | " + " ".join(f"{v:>8}" for v in V) + " | tma/default  tma_sec1/sec1")
summary = {"shapes": {}}
for s in (1024, 2048, 4096, 8192, 16384):
    t = {v: res[v].get(s, {}).get("tflops") for v in V}
    us = {v: res[v].get(s, {}).get("median_us") for v in V}
    f = lambda x: f"{x:8.1f}" if x else f"{'-':>8}"
    q = lambda a, b: t[a] / t[b] if t[a] and t[b] else None
    r1, r2 = q("tma", "default"), q("tma_sec1", "sec1")
    g = lambda r: f"{r:11.3f}x" if r else f"{'-':>12}"
    print(f"{s:>6} | " + " ".join(f(t[v]) for v in V) + f" | {g(r1)} {g(r2)}")
    summary["shapes"][str(s)] = {"tflops": t, "median_us": us, "tma_over_default": r1, "tma_sec1_over_sec1": r2}
for v in ("tma", "default", "tma_ovl"):
    try:
        summary.setdefault("checks", {})[v] = open(os.path.join(out, f"check_{v}.log")).read().strip().splitlines()[-1]
    except Exception:
        pass
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "lever_mhatma: done [$(el) s]"
