#!/usr/bin/env bash
# bench/gpu/lever_pdl.sh - the stream decode's prep kernel overlapped with the
# state stream by programmatic dependent launch (SGL_ATTN_LIN_DECODE=stream_pdl,
# and stream_pdl64: the same with 8-warp stream blocks; lk_decode3.cu), checked,
# sanitised and timed against the default stream decode.  Prebuilt build/,
# repo root, OUT=dir; <= 100 s on the H200 (each step has its own timeout,
# 99 s in all; ~70 s expected).
#   1. test_lin_gpu LT_QUICK=4: every stream / stream_cp / stream_pdl /
#      stream_pdl64 config and graph (capture + replay: a programmatic edge)
#      against the float64 reference
#   2. compute-sanitizer memcheck and racecheck, LT_QUICK=5 with
#      LT_DECODE=stream_pdl,stream_pdl64 (only the new forms, f32 activations:
#      extends token by token); racecheck gets 60 s
#   3. bench_lin decode (B 32 / 256 / 1024, TP2 B 32 / 1024, B 256 bf16 state):
#      stream (the default), stream_pdl, stream_pdl64; the table: us, TB/s,
#      fraction of the 4.26 TB/s copy, ratio to stream (> 1: faster).
#      JSON: $OUT/bench_dec_{stream,stream_pdl,stream_pdl64}.json, $OUT/lever_pdl.json
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT LT_DECODE
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu LT_QUICK=4: the stream decode forms, stream_pdl and stream_pdl64 included"
LT_QUICK=4 timeout 12 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_stream.log" 2>&1
echo "stream forms rc=$? $(tail -1 "$OUT/test_lin_gpu_stream.log") ok-lines=$(grep -cE '^ok' "$OUT/test_lin_gpu_stream.log")" \
     "pdl ok-lines=$(grep -E '^ok' "$OUT/test_lin_gpu_stream.log" | grep -c stream_pdl)"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_stream.log" | head -8

step "2. compute-sanitizer memcheck / racecheck (LT_QUICK=5, LT_DECODE=stream_pdl,stream_pdl64)"
for tool in memcheck racecheck; do
  lim=12; [ $tool = racecheck ] && lim=60
  LT_QUICK=5 LT_DECODE=stream_pdl,stream_pdl64 timeout $lim compute-sanitizer --tool $tool --error-exitcode 9 \
    $T/test_lin_gpu $P > "$OUT/lin_pdl_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_pdl_$tool.log" | tail -1)" \
       "ok-lines=$(grep -cE '^ok' "$OUT/lin_pdl_$tool.log") (of 5) $(tail -1 "$OUT/lin_pdl_$tool.log")"
done

step "3. bench_lin decode: stream (default), stream_pdl, stream_pdl64"
for v in stream stream_pdl stream_pdl64; do
  SGL_ATTN_LIN_DECODE=$v BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 5 \
    $T/bench_lin "$OUT/bench_dec_$v.json" $P > "$OUT/bench_dec_$v.log" 2>&1
  echo "$v rc=$?"
done
python3 - "$OUT" <<'EOF'
import json, sys, os
out = sys.argv[1]
forms = ("stream", "stream_pdl", "stream_pdl64")
runs = {}
for v in forms:
    try:
        runs[v] = {c["case"]: c for c in json.load(open(os.path.join(out, "bench_dec_%s.json" % v)))["cases"]}
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); runs[v] = {}
cases = list(runs["stream"]) or list(runs["stream_pdl"]) or list(runs["stream_pdl64"])
rows = []
print("%-44s %-13s %9s %7s %6s %8s" % ("case", "decode", "us", "TB/s", "of bw", "x stream"))
for c in cases:
    base = runs["stream"].get(c)
    for v in forms:
        r = runs[v].get(c)
        if not r: continue
        x = base["us"] / r["us"] if base else float("nan")
        print("%-44s %-13s %9.1f %7.3f %6.3f %8.3f" % (c, v, r["us"], r["tbps"], r["frac_bw"], x))
        rows.append({"case": c, "decode": v, "us": r["us"], "tbps": r["tbps"], "frac_bw": r["frac_bw"],
                     "x_stream": None if x != x else round(x, 4)})
json.dump({"tool": "lever_pdl", "rows": rows}, open(os.path.join(out, "lever_pdl.json"), "w"), indent=1)
print("wrote %s" % os.path.join(out, "lever_pdl.json"))
EOF
echo "lever_pdl: done [$SECONDS s]"
