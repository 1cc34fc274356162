#!/usr/bin/env bash
# bench/gpu/mha_decode_sweep.sh - cuda_attn's decode variants on the GPU, in
# one go (~4 minutes; docs/cuda.md, "decode performance"):
#   0. device, clocks
#   1. attnctl check --plugin cuda_attn --filter decode for each variant (the
#      whole decode matrix: --quick holds only two decode cases); variants
#      that fail are left out of the timing
#   2. compute-sanitizer memcheck on the two register-fed decodes (small cases)
#   3. the issue-6 decode shapes, cheapest pools first: one attnctl bench per
#      shape (--min-time 0.2) with SGL_ATTN_CUDA_DECODE_SWEEP, so the plugin
#      times every variant on the same batch (events, kernel only) and the
#      harness times $BENCH_VARIANT end to end; a shape whose pool would not
#      build inside the budget is skipped (the harness fills pools on the host)
#   4. the table variant x shape -> TB/s (K+V bytes / kernel time), last
# Run from the repo root with a prebuilt build/ (libcjson.so.1 in build/lib):
#   OUT=/some/dir bash bench/gpu/mha_decode_sweep.sh     (or bench/gpu/run.sh mha_decode_sweep)
# Knobs: SWEEP_BUDGET_S (default 220: the last shape must be done by then),
# SWEEP_VARIANTS (space-separated), BENCH_VARIANT (default reg.w4b2),
# SWEEP_CASES (space-separated case strings, replaces the default list),
# TORCH_JSON (bench/cuda/torch_side_by_side.py output for the cuDNN / flash
# columns; default: the 2026-12-02 H200 numbers below).
set -u
OUT=${OUT:-/tmp/mha_decode_sweep}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
A=build/bin/attnctl
BUDGET=${SWEEP_BUDGET_S:-220}
VARIANTS=${SWEEP_VARIANTS:-"mma mma.s2 mma.s4 mma.h reg.w4b2 reg.w4b1 reg.w2b2 reg.w8b2 reg.w4b2.h reg.w2b2.h"}
BENCH_VARIANT=${BENCH_VARIANT:-reg.w4b2}
PROBE=reg.w4b2.contig # page table ignored: wrong outputs, timing only
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
step() { echo; echo "### $* [$(el) s]"; }
gqa="hq=32,hkv=8,d=128,dtype=bf16"
CASES=${SWEEP_CASES:-"decode:b=64,l=4096,$gqa,page=16 decode:b=16,l=16384,$gqa,page=16
decode:b=256,l=1024,$gqa,page=16 decode:b=16,l=4096,$gqa,page=16 decode:b=64,l=1024,$gqa,page=16
decode:b=16,l=1024,$gqa,page=16 decode:b=64,l=4096,$gqa,page=1 decode:b=256,l=4096,$gqa,page=16
decode:b=64,l=16384,$gqa,page=16 decode:b=16,l=16384,$gqa,page=1"}

step "0. device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv | tee "$OUT/gpu.txt"
echo "commit $SGL_ATTN_COMMIT" | tee -a "$OUT/gpu.txt"
[ -x "$A" ] || { echo "no $A: build first (make attnctl cuda_attn)"; exit 1; }

step "1. attnctl check --filter decode, per variant"
ok=""
for v in $VARIANTS; do
  SGL_ATTN_CUDA_DECODE=$v timeout 45 "$A" check --plugin cuda_attn --filter decode --json \
    > "$OUT/check_$v.json" 2> "$OUT/check_$v.log"
  rc=$?
  echo "check $v: rc=$rc $(tail -1 "$OUT/check_$v.log")"
  [ $rc -eq 0 ] && ok="$ok $v"
done
grep -h -E "^  (fail|error) " "$OUT"/check_*.log | head -20
list=$(echo $ok | tr ' ' ',')
[ -n "$list" ] || list=mma
case " $ok " in *" reg.w4b2 "*) list="$list,$PROBE";; esac
echo "timed: $list"

step "2. compute-sanitizer memcheck (register-fed decodes, small cases)"
for v in reg.w4b2 reg.w4b1; do
  case " $ok " in *" $v "*) ;; *) echo "$v: skipped (check failed)"; continue;; esac
  SGL_ATTN_CUDA_DECODE=$v SGL_ATTN_NO_UNLOAD=1 timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$A" check --plugin cuda_attn --filter 'decode:b=(1|2|3|4),' > "$OUT/memcheck_$v.log" 2>&1
  echo "memcheck $v: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$v.log" | tail -1)"
done

step "3. bench: every variant on each shape (kernel events) + $BENCH_VARIANT end to end"
case " $ok " in *" $BENCH_VARIANT "*) bv=$BENCH_VARIANT;; *) bv=mma;; esac
rm -f "$OUT/sweep.jsonl"
rate=10 # seconds per GB of pool the harness takes to build (measured below)
n=0
for c in $CASES; do
  n=$((n + 1))
  gb=$(python3 -c "
import sys; kv = dict(x.split('=') for x in sys.argv[1].split(':')[1].split(','))
b, l, p = int(kv['b']), int(kv['l']), int(kv.get('page', 16))
print(round(b * ((l + p - 1) // p * p) * 1.25 * 8 * 128 * 2 * 2 / 1e9, 2))" "$c")
  need=$(python3 -c "print(int($gb * $rate + 8))")
  left=$(( BUDGET - $(el) ))
  if [ "$need" -gt "$left" ]; then echo "skip $c: pool $gb GB needs ~${need} s, ${left} s left"; continue; fi
  echo "{\"case\": \"$c\", \"n\": $n}" >> "$OUT/sweep.jsonl"
  s0=$(date +%s)
  SGL_ATTN_CUDA_DECODE=$bv SGL_ATTN_CUDA_DECODE_SWEEP="$OUT/sweep.jsonl" SGL_ATTN_CUDA_DECODE_SWEEP_LIST="$list" \
    timeout $(( left + 30 )) "$A" bench --plugin cuda_attn --case "$c" --min-time 0.2 --json \
    > "$OUT/bench_$n.json" 2> "$OUT/bench_$n.log"
  rc=$?
  dt=$(( $(date +%s) - s0 ))
  echo "[$(el) s] $c: rc=$rc, ${dt} s ($gb GB pool) $(grep -E 'decode:' "$OUT/bench_$n.log" | awk '{print $2, "us", $4, "GB/s"}')"
  # re-measure the build rate on pools big enough for it to dominate
  [ $rc -eq 0 ] && rate=$(python3 -c "print(max(2.0, ($dt - 3) / $gb) if $gb >= 0.3 else $rate)")
done

step "4. summary"
python3 - "$OUT" "$bv" "${TORCH_JSON:-}" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out, bv, tj = sys.argv[1], sys.argv[2], sys.argv[3]
# cuDNN / flash on contiguous KV, H200, bench/cuda/torch_side_by_side.py 2026-12-02 (TB/s)
ref = {(16, 1024): (1.967, 2.37), (16, 4096): (3.234, 3.545), (16, 16384): (4.01, 4.216),
       (64, 1024): (2.384, 3.474), (64, 4096): (2.458, 4.216), (64, 16384): (2.433, 4.451),
       (256, 1024): (2.303, 4.19), (256, 4096): (2.404, 4.469), (256, 16384): (2.293, 4.478)}
if tj and os.path.exists(tj):
    ref = {(r["b"], r["l"]): (r.get("flash_TBps"), r.get("cudnn_TBps")) for r in json.load(open(tj))["decode"]}
cases, cur, rows = [], None, {}
for line in open(os.path.join(out, "sweep.jsonl")) if os.path.exists(os.path.join(out, "sweep.jsonl")) else []:
    j = json.loads(line)
    if "case" in j:
        kv = dict(x.split("=") for x in j["case"].split(":")[1].split(","))
        cur = (int(kv["b"]), int(kv["l"]), int(kv.get("page", 16)), int(kv["hkv"]), int(kv["d"]), j["n"])
        cases.append(cur)
        continue
    if cur and "us" in j and j["us"] > 0:
        b, l, page, hkv, d, n = cur
        rows.setdefault(j["variant"], {})[cur] = (b * l * hkv * d * 2 * 2 / (j["us"] * 1e-6) / 1e12, j["us"], j["kernel"])
harness = {}
for c in cases:
    try:
        for r in json.load(open(os.path.join(out, f"bench_{c[5]}.json")))["cases"]:
            if "median_us" in r:
                harness[c] = (c[0] * c[1] * c[3] * c[4] * 4 / (r["median_us"] * 1e-6) / 1e12, r["median_us"])
    except Exception:
        pass
hdr = lambda c: f"{c[0]}x{c[1] // 1024}k" + ("/p1" if c[2] == 1 else "")
w = max([len(v) for v in rows] + [24])
print("decode GQA 32/8 d128 bf16, TB/s = K+V bytes / kernel time (events; attnctl row: end to end)")
print(f"{'variant':<{w}} " + " ".join(f"{hdr(c):>8}" for c in cases))
for v, r in rows.items():
    print(f"{v:<{w}} " + " ".join(f"{r[c][0]:8.2f}" if c in r else "       -" for c in cases))
print(f"{'attnctl bench (' + bv + ')':<{w}} " + " ".join(f"{harness[c][0]:8.2f}" if c in harness else "       -" for c in cases))
print(f"{'cuDNN contiguous':<{w}} " + " ".join(f"{ref[c[:2]][1]:8.2f}" if c[:2] in ref and c[2] == 16 else "       -" for c in cases))
print(f"{'flash contiguous':<{w}} " + " ".join(f"{ref[c[:2]][0]:8.2f}" if c[:2] in ref and c[2] == 16 else "       -" for c in cases))
best = {}
for c in cases:
    cand = [(r[c][0], v) for v, r in rows.items() if c in r and not v.endswith(".contig")]
    if cand:
        best[c] = max(cand)
print(f"{'best (not the probe)':<{w}} " + " ".join(f"{best[c][0]:8.2f}" if c in best else "       -" for c in cases))
print(f"{'  = variant':<{w}} " + " ".join(f"{best[c][1][:8]:>8}" if c in best else "       -" for c in cases))
print(f"{'best / cuDNN':<{w}} " + " ".join(f"{best[c][0] / ref[c[:2]][1]:7.2f}x" if c in best and c[:2] in ref and c[2] == 16 else "       -" for c in cases))
print(f"{'best / flash':<{w}} " + " ".join(f"{best[c][0] / ref[c[:2]][0]:7.2f}x" if c in best and c[:2] in ref and c[2] == 16 else "       -" for c in cases))
# page 1 over page 16, per variant, where both ran
for c1 in [c for c in cases if c[2] == 1]:
    c16 = next((c for c in cases if c[:2] == c1[:2] and c[2] == 16), None)
    if c16:
        print(f"page 1 / page 16 time at {hdr(c16)}: " + ", ".join(
            f"{v} {r[c1][1] / r[c16][1]:.2f}x" for v, r in rows.items() if c1 in r and c16 in r))
# geometric mean over the page-16 shapes every variant ran: one number per variant
p16 = [c for c in cases if c[2] == 16 and all(c in r for r in rows.values())]
if p16 and rows:
    import math
    print("geomean TB/s over " + " ".join(hdr(c) for c in p16) + ": " + ", ".join(
        f"{v} {math.exp(sum(math.log(r[c][0]) for c in p16) / len(p16)):.2f}"
        for v, r in sorted(rows.items(), key=lambda kv: -sum(math.log(kv[1][c][0]) for c in p16))))
json.dump({"cases": [list(c) for c in cases], "variants": {v: {hdr(c): r[c][0] for c in r} for v, r in rows.items()},
           "attnctl": {hdr(c): harness[c][0] for c in harness}}, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "[$(el) s] done"
