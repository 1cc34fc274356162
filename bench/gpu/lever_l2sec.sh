#!/usr/bin/env bash
# bench/gpu/lever_l2sec.sh - the wgmma extend's work order in sections of KV
# heads (SGL_ATTN_WGMMA_L2SEC=N; kern_extend_wgmma.cuh wg_work_split) against
# item-major (0, the order before).  Prebuilt build/, repo root, OUT=dir,
# <= ~85 s.
#   1. attnctl check --filter extend with N = 1 and a case whose last section is
#      narrower (hq 8 = hkv 8, N = 3: sections of 3, 3, 2 heads); memcheck on it
#   2. attnctl bench, prefill shapes (16 heads, d128, 16k tokens, page 16):
#      N = 0, 1, 2, 4; TFLOP/s and the ratio to 0
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
A=build/bin/attnctl
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset SGL_ATTN_WGMMA_L2SEC
step() { echo; echo "### $* [$SECONDS s]"; }
ODD="extend:b=3,l=700,q=450,hq=8,hkv=8,d=128,dtype=bf16,page=16,ragged=1"
GQA="extend:b=3,l=300,q=150,hq=8,hkv=2,d=128,dtype=bf16,page=16,ragged=1"

step "1. checks (sections of 1 KV head; 3 of 8 heads), memcheck"
( SGL_ATTN_WGMMA_L2SEC=1 timeout 40 "$A" check --plugin cuda_attn --filter extend > "$OUT/check_sec1.log" 2>&1; echo "check sec1 rc=$? $(tail -1 "$OUT/check_sec1.log")" > "$OUT/check_sec1.rc" ) &
( SGL_ATTN_WGMMA_L2SEC=3 timeout 30 "$A" check --plugin cuda_attn --case "$ODD" --case "$GQA" > "$OUT/check_sec3.log" 2>&1; echo "check sec3 rc=$? $(tail -1 "$OUT/check_sec3.log")" > "$OUT/check_sec3.rc" ) &
( SGL_ATTN_WGMMA_L2SEC=3 timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$A" check --plugin cuda_attn --case "$ODD" --case "$GQA" > "$OUT/memcheck_sec3.log" 2>&1; echo "memcheck sec3 rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck_sec3.log")" > "$OUT/memcheck.rc" ) &
wait
cat "$OUT"/*.rc

step "2. bench: sections of 0 (item-major), 1, 2, 4 KV heads"
cases=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+prefill_case(b,s) for b,s in PREFILL))')
for n in 0 1 2 4; do
  SGL_ATTN_WGMMA_L2SEC=$n timeout 14 "$A" bench --plugin cuda_attn $cases --min-time 0.15 --json \
    > "$OUT/bench_sec$n.json" 2> "$OUT/bench_sec$n.log"; echo "bench sec$n rc=$? [$SECONDS s]"
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(n):
    try: d = json.load(open(os.path.join(out, f"bench_sec{n}.json")))
    except Exception: return {}
    r = {}
    for c in d.get("cases", []):
        kv = dict(x.split("=", 1) for x in c.get("case", "").partition(":")[2].split(",") if "=" in x)
        if c.get("tflops"): r[int(kv.get("l", 0))] = c["tflops"]
    return r
res = {n: load(n) for n in (0, 1, 2, 4)}
print(f"{'S':>6} | " + " ".join(f"{'sec'+str(n):>8}" for n in res) + " | x sec0")
for s in sorted(res[0] or res[1]):
    t = [res[n].get(s) for n in res]
    print(f"{s:>6} | " + " ".join(f"{x:8.1f}" if x else f"{'-':>8}" for x in t) + " | "
          + " ".join(f"{x / t[0]:.3f}" if x and t[0] else "-" for x in t[1:]))
json.dump({str(n): res[n] for n in res}, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "lever_l2sec: done [$SECONDS s]"
