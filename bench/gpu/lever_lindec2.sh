#!/usr/bin/env bash
# bench/gpu/lever_lindec2.sh - the stream decode in ONE launch
# (SGL_ATTN_LIN_DECODE=stream_one, lin_decode4_kernel in lk_decode3.cu: prep
# and stream items of one grid, ordered by an atomic ticket; stream items wait
# on per-(request, key head group) ready flags after issuing their state loads;
# prep items prefetch their conv histories to L2 first; stream_one_nopf: no
# prefetch; stream_one_static: blockIdx as the ticket, no atomic in front of
# the state loads, relying on in-order block dispatch (a long wait traps))
# checked, sanitised and timed against the default stream_pdl.  Prebuilt
# build/, repo root, OUT=dir; <= 90 s on the H200 (each step has its own
# timeout, 88 s in all, ~70 s expected; racecheck last: a slow one costs only
# itself).
#   1. test_lin_gpu LT_QUICK=4 LT_DECODE=stream_one,stream_one_nopf,
#      stream_one_static,stream_pdl:
#      the new forms' configs (every recurrent kind, both state dtypes, V 40 /
#      96 partial tiles, K 96 on the fused kernel, l2norm off) and graphs
#      (capture + replays: the self-resetting sync words), and the default's,
#      against the float64 reference
#   2. bench_lin decode (B 32 / 256 / 1024, TP2 B 32 / 1024, B 256 bf16
#      state): stream_pdl (default), stream_one, stream_one_nopf,
#      stream_one_static; the table:
#      us, TB/s, fraction of 4.26 TB/s, ratio to stream_pdl (> 1: faster).
#      JSON: $OUT/bench_dec_<form>.json, $OUT/lever_lindec2.json
#   3. ncu gpu__time_duration of the first 6 decode launches at B 256 fp32
#      state (clocks left alone): stream_pdl's prep and stream kernels apart
#      (ncu serialises them: the prep's own time), stream_one's and
#      stream_one_static's single kernels
#   4. compute-sanitizer memcheck and racecheck, LT_QUICK=5 LT_DECODE=stream_one
#      (3 configs, f32 activations)
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
FORMS="stream_pdl stream_one stream_one_nopf stream_one_static"
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT LT_DECODE
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu LT_QUICK=4: stream_one, stream_one_nopf, stream_one_static, stream_pdl"
LT_QUICK=4 LT_DECODE=stream_one,stream_one_nopf,stream_one_static,stream_pdl timeout 12 $T/test_lin_gpu $P \
  > "$OUT/test_lin_gpu_stream.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_gpu_stream.log") ok-lines=$(grep -cE '^ok' "$OUT/test_lin_gpu_stream.log") (of 26)" \
     "stream_one* ok-lines=$(grep -E '^ok' "$OUT/test_lin_gpu_stream.log" | grep -c stream_one) (of 18)"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_stream.log" | head -8

step "2. bench_lin decode: $FORMS"
for v in $FORMS; do
  SGL_ATTN_LIN_DECODE=$v BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 5 \
    $T/bench_lin "$OUT/bench_dec_$v.json" $P > "$OUT/bench_dec_$v.log" 2>&1
  echo "$v rc=$?"
done
python3 - "$OUT" $FORMS <<'PY'
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
print("%-44s %-17s %9s %7s %6s %6s" % ("case", "decode", "us", "TB/s", "of bw", "x pdl"))
for c in cases:
    base = runs[forms[0]].get(c)
    for v in forms:
        r = runs[v].get(c)
        if not r: continue
        x = base["us"] / r["us"] if base else float("nan")
        print("%-44s %-17s %9.1f %7.3f %6.3f %6.3f" % (c, v, r["us"], r["tbps"], r["frac_bw"], x))
        rows.append({"case": c, "decode": v, "us": r["us"], "tbps": r["tbps"], "frac_bw": r["frac_bw"],
                     "x_stream_pdl": None if x != x else round(x, 4)})
json.dump({"tool": "lever_lindec2", "rows": rows}, open(os.path.join(out, "lever_lindec2.json"), "w"), indent=1)
PY

step "3. ncu durations at B 256 fp32 state (first 6 decode launches; ncu serialises PDL)"
for v in stream_pdl stream_one stream_one_static; do
  SGL_ATTN_LIN_DECODE=$v BENCH_FILTER="hv32/hk16 B=256" BENCH_VARIANT=fast BENCH_QUICK=1 timeout 8 \
    ncu --clock-control none --metrics gpu__time_duration.sum -k regex:lin_dec -c 6 \
    $T/bench_lin /dev/null $P > "$OUT/ncu_dec_$v.txt" 2>&1
  echo "$v rc=$?"
  python3 - "$OUT/ncu_dec_$v.txt" <<'PY'
import re, sys
name = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
    if m: name = m.group(1)
    m = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and name: print("   %-36s %10s %s" % (name, m.group(2), m.group(1))); name = None
PY
done

step "4. compute-sanitizer memcheck / racecheck (LT_QUICK=5, LT_DECODE=stream_one)"
for tool in memcheck racecheck; do
  lim=12; [ $tool = racecheck ] && lim=20
  LT_QUICK=5 LT_DECODE=stream_one timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 \
    $T/test_lin_gpu $P > "$OUT/lin_one_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_one_$tool.log" | tail -1)" \
       "ok-lines=$(grep -cE '^ok' "$OUT/lin_one_$tool.log") (of 3) $(tail -1 "$OUT/lin_one_$tool.log")"
done
echo "lever_lindec2: done [$SECONDS s]"
