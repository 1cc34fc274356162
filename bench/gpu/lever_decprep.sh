#!/usr/bin/env bash
# bench/gpu/lever_decprep.sh - the stream decode's prep v2
# (SGL_ATTN_LIN_DECPREP=v2, lin_decprep2_kernel in lk_decprep2.cu: gdn, conv
# width 4; a thread owns 4 channels and issues every load first, gates
# included; l2norm in registers, one barrier for k.q, operands straight to
# dq) checked, sanitised and timed against v1 (lin_decprep_kernel, the
# default) under the default stream_pdl.  Prebuilt build/, repo root,
# OUT=dir; <= 90 s on the H200 (each step has its own timeout, 86 s in all,
# ~55 s expected; racecheck last: a slow one costs only itself).
#   1. test_lin_gpu LT_QUICK=4 with SGL_ATTN_LIN_DECPREP=v2, LT_DECODE = the
#      dp2 configs (gdn V 64 / 96 / 40, both state dtypes, bf16 / f32 / f16 x,
#      l2norm off, kda and mamba2 falling back to v1; under stream, stream_cp,
#      stream_pdl, stream_pdl64; a graph with a padded row at replay) + every
#      stream_pdl config (v2 from the environment), against float64
#   2. test_lin_e2e with v2 (the hybrid model's decode steps)
#   3. bench_lin decode (B 32 / 256 / 1024, TP2 B 32 / 1024, B 256 bf16
#      state), v1 and v2; the table: forward us, TB/s (state bytes read +
#      written), fraction of 4.26 TB/s, ratio to v1 (> 1: faster).
#      JSON: $OUT/bench_dec_v1.json, bench_dec_v2.json, lever_decprep.json
#   4. ncu gpu__time_duration and DRAM throughput (% of peak) at B 256 fp32
#      state of the first 6 decode launches (clocks left alone; ncu
#      serialises PDL): v1's and v2's prep kernels and the stream kernel apart
#   5. compute-sanitizer memcheck, LT_QUICK=5 with the dp2 configs (3, f32
#      x: gdn V 64 f32 state, V 96 bf16 state, l2norm off under plain
#      stream), and racecheck on the first two
# The prep's floor at B 256 (Qwen3-Next, fp32 conv state like the ssm state):
# conv history 8192 ch x 3 x 4 B read + written = 192 KB / request (50.3 MB),
# x 16 KB (4.2 MB), operands 33 KB (8.5 MB): ~63 MB = ~15 us at 4.26 TB/s.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT LT_DECODE \
      SGL_ATTN_LIN_DECPREP
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | head -1
DP2="stream_pdl+dp2,stream+dp2,stream_cp+dp2,stream_pdl64+dp2"

step "1. test_lin_gpu LT_QUICK=4, SGL_ATTN_LIN_DECPREP=v2: the dp2 configs + stream_pdl"
SGL_ATTN_LIN_DECPREP=v2 LT_QUICK=4 LT_DECODE=$DP2,stream_pdl timeout 13 $T/test_lin_gpu $P \
  > "$OUT/test_lin_gpu_decprep.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_gpu_decprep.log") ok-lines=$(grep -cE '^ok' "$OUT/test_lin_gpu_decprep.log") (of 21)" \
     "dp2 ok-lines=$(grep -E '^ok' "$OUT/test_lin_gpu_decprep.log" | grep -c dp2) (of 13)"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_decprep.log" | head -8

step "2. test_lin_e2e, SGL_ATTN_LIN_DECPREP=v2"
SGL_ATTN_LIN_DECPREP=v2 timeout 9 $T/test_lin_e2e $P > "$OUT/test_lin_e2e_decprep.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_e2e_decprep.log")"

step "3. bench_lin decode: v1, v2"
for v in v1 v2; do
  SGL_ATTN_LIN_DECPREP=$v BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 6 \
    $T/bench_lin "$OUT/bench_dec_$v.json" $P > "$OUT/bench_dec_$v.log" 2>&1
  echo "$v rc=$?"
done
python3 - "$OUT" v1 v2 <<'PY'
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
print("%-44s %-7s %9s %7s %6s %6s" % ("case (stream_pdl)", "decprep", "us", "TB/s", "of bw", "x v1"))
for c in cases:
    base = runs[forms[0]].get(c)
    for v in forms:
        r = runs[v].get(c)
        if not r: continue
        x = base["us"] / r["us"] if base else float("nan")
        print("%-44s %-7s %9.1f %7.3f %6.3f %6.3f" % (c, v, r["us"], r["tbps"], r["frac_bw"], x))
        rows.append({"case": c, "decprep": v, "us": r["us"], "tbps": r["tbps"], "frac_bw": r["frac_bw"],
                     "x_v1": None if x != x else round(x, 4)})
print("target: B=256 fp32 state forward <= ~336 us (0.75 of 4.26 TB/s)")
json.dump({"tool": "lever_decprep", "rows": rows}, open(os.path.join(out, "lever_decprep.json"), "w"), indent=1)
PY

step "4. ncu durations at B 256 fp32 state (first 6 decode launches; ncu serialises PDL)"
for v in v1 v2; do
  SGL_ATTN_LIN_DECPREP=$v BENCH_FILTER="hv32/hk16 B=256" BENCH_VARIANT=fast BENCH_QUICK=1 timeout 8 \
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

step "5. compute-sanitizer memcheck / racecheck (LT_QUICK=5, the dp2 configs)"
for tool in memcheck racecheck; do
  lim=12 dec=stream_pdl+dp2,stream+dp2 of=3
  [ $tool = racecheck ] && lim=24 dec=stream_pdl+dp2 of=2
  LT_QUICK=5 LT_DECODE=$dec timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 \
    $T/test_lin_gpu $P > "$OUT/lin_decprep_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_decprep_$tool.log" | tail -1)" \
       "ok-lines=$(grep -cE '^ok' "$OUT/lin_decprep_$tool.log") (of $of) $(tail -1 "$OUT/lin_decprep_$tool.log")"
done
echo "lever_decprep: done [$SECONDS s]"
