#!/usr/bin/env bash
# bench/gpu/lever_decprep3.sh - the stream decode's prep v3
# (SGL_ATTN_LIN_DECPREP=v3, lin_decprep3_kernel in lk_decprep3.cu: v2's
# per-channel work in a persistent grid of 2 blocks per SM, each keeping one
# key head group and walking requests: the next item's history / x loaded
# into registers and item t + 4's lines prefetched to L2 before item t's math
# and stores; 96 registers, so 4 stream blocks per SM start beside it under
# PDL and get their state loads in flight) checked, sanitised and timed
# against v2 (the default) under the default stream_pdl.  Prebuilt build/,
# repo root, OUT=dir; <= 75 s on the H200 (each step has its own timeout,
# 74 s in all, ~40 s expected; racecheck last: a slow one costs only itself).
#   1. test_lin_gpu LT_QUICK=4 with SGL_ATTN_LIN_DECPREP=v3, LT_DECODE = the
#      dp3 configs (gdn V 64 / 96 / 40, both state dtypes, bf16 / f32 / f16 x,
#      l2norm off, kda and mamba2 falling back to v1; under stream, stream_cp,
#      stream_pdl, stream_pdl64; a graph with a padded row at replay) + every
#      stream_pdl config (v3 from the environment), against float64
#   2. test_lin_e2e with v3 (the hybrid model's decode steps)
#   3. bench_lin decode (B 32 / 256 / 1024, TP2 B 32 / 1024, B 256 bf16
#      state), v2 and v3; the table: forward us, TB/s (state bytes read +
#      written), fraction of 4.26 TB/s, ratio to v2 (> 1: faster).
#      JSON: $OUT/bench_dec_v2.json, bench_dec_v3.json, lever_decprep3.json
#   4. ncu gpu__time_duration and DRAM throughput (% of peak) at B 256 fp32
#      state of the first 6 decode launches (clocks left alone; ncu
#      serialises PDL, so the overlap v3 buys is not in these): the prep
#      kernels of v2 and v3 and the stream kernel apart
#   5. compute-sanitizer memcheck, LT_QUICK=5 with the dp3 configs (3, f32
#      x: gdn V 64 f32 state, V 96 bf16 state, l2norm off under plain
#      stream), and racecheck on the first two
# Target: B 256 forward <= ~336 us (v2: 341.7 = 316 stream + 25.7 prep, run 10).
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT LT_DECODE \
      SGL_ATTN_LIN_DECPREP
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | head -1
DP3="stream_pdl+dp3,stream+dp3,stream_cp+dp3,stream_pdl64+dp3"

step "1. test_lin_gpu LT_QUICK=4, SGL_ATTN_LIN_DECPREP=v3: the dp3 configs + stream_pdl"
SGL_ATTN_LIN_DECPREP=v3 LT_QUICK=4 LT_DECODE=$DP3,stream_pdl timeout 11 $T/test_lin_gpu $P \
  > "$OUT/test_lin_gpu_decprep3.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_gpu_decprep3.log") ok-lines=$(grep -cE '^ok' "$OUT/test_lin_gpu_decprep3.log") (of 21)" \
     "dp3 ok-lines=$(grep -E '^ok' "$OUT/test_lin_gpu_decprep3.log" | grep -c dp3) (of 13)"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_decprep3.log" | head -8

step "2. test_lin_e2e, SGL_ATTN_LIN_DECPREP=v3"
SGL_ATTN_LIN_DECPREP=v3 timeout 7 $T/test_lin_e2e $P > "$OUT/test_lin_e2e_decprep3.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_e2e_decprep3.log")"

step "3. bench_lin decode: v2, v3"
for v in v2 v3; do
  SGL_ATTN_LIN_DECPREP=$v BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 6 \
    $T/bench_lin "$OUT/bench_dec_$v.json" $P > "$OUT/bench_dec_$v.log" 2>&1
  echo "$v rc=$?"
done
python3 - "$OUT" v2 v3 <<'PY'
import json, sys, os
out, forms = sys.argv[1], sys.argv[2:]
runs = {}
for v in forms:
    try:
        runs[v] = {c["case"]: c for c in json.load(open(os.path.join(out, "bench_dec_%s.json" % v)))["cases"]}
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); runs[v] = {}
cases = next((list(runs[v]) for v in forms if runs[v]), [])
rows = []
print("%-44s %-7s %9s %7s %6s %6s" % ("case (stream_pdl)", "decprep", "us", "TB/s", "of bw", "x v2"))
for c in cases:
    base = runs[forms[0]].get(c)
    for v in forms:
        r = runs[v].get(c)
        if not r: continue
        x = base["us"] / r["us"] if base else float("nan")
        print("%-44s %-7s %9.1f %7.3f %6.3f %6.3f" % (c, v, r["us"], r["tbps"], r["frac_bw"], x))
        rows.append({"case": c, "decprep": v, "us": r["us"], "tbps": r["tbps"], "frac_bw": r["frac_bw"],
                     "x_v2": None if x != x else round(x, 4)})
print("target: B=256 fp32 state forward <= ~336 us, B=1024 <= ~1336 us (0.75 of 4.26 TB/s)")
json.dump({"tool": "lever_decprep3", "rows": rows}, open(os.path.join(out, "lever_decprep3.json"), "w"), indent=1)
PY

step "4. ncu durations at B 256 fp32 state (first 6 decode launches; ncu serialises PDL)"
for v in v2 v3; do
  SGL_ATTN_LIN_DECPREP=$v BENCH_FILTER="hv32/hk16 B=256" BENCH_VARIANT=fast BENCH_QUICK=1 timeout 7 \
    ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -k regex:lin_dec -c 6 \
    $T/bench_lin /dev/null $P > "$OUT/ncu_dec_$v.txt" 2>&1
  echo "$v rc=$?"
  python3 - "$OUT/ncu_dec_$v.txt" <<'PY'
import re, sys
cur = None  # the launch being read: name, duration, dram %
def show(c):
    if c and c[1]: print("   %-44s %14s  dram %s%%" % (c[0], c[1], c[2]))
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
    if m: show(cur); cur = [m.group(1), None, "?"]
    m = re.search(r"dram__throughput\.avg\.pct_of_peak_sustained_elapsed\s+\S+\s+([\d.,]+)", line)
    if m and cur: cur[2] = m.group(1)
    m = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and cur: cur[1] = "%s %s" % (m.group(2), m.group(1))
show(cur)
PY
done

step "5. compute-sanitizer memcheck / racecheck (LT_QUICK=5, the dp3 configs)"
for tool in memcheck racecheck; do
  lim=10 dec=stream_pdl+dp3,stream+dp3 of=3
  [ $tool = racecheck ] && lim=20 dec=stream_pdl+dp3 of=2
  LT_QUICK=5 LT_DECODE=$dec timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 \
    $T/test_lin_gpu $P > "$OUT/lin_decprep3_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_decprep3_$tool.log" | tail -1)" \
       "ok-lines=$(grep -cE '^ok' "$OUT/lin_decprep3_$tool.log") (of $of) $(tail -1 "$OUT/lin_decprep3_$tool.log")"
done
echo "lever_decprep3: done [$SECONDS s]"
