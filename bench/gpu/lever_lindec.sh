#!/usr/bin/env bash
# bench/gpu/lever_lindec.sh - the stream decode of the CUDA linear wrappers
# (SGL_ATTN_LIN_DECODE=stream / stream_cp, lk_decode3.cu) checked, sanitised
# and timed against the default fused decode.  Prebuilt build/, repo root,
# OUT=dir; <= 90 s on the H200 (each step has its own timeout, 86 s in all).
#   1. test_lin_gpu LT_QUICK=4: every stream / stream_cp config and graph
#      against the float64 reference; LT_QUICK=2: the default gdn kernels
#      (the fused decode's phase A moved to lk_decop.cuh)
#   2. compute-sanitizer memcheck and racecheck, LT_QUICK=5 (stream configs
#      with f32 activations: extends token by token, so the run stays short)
#   3. bench_lin decode (B 32 / 256 / 1024, TP2 B 32 / 1024, B 256 bf16 state):
#      fused, stream, stream_cp; the table: us, TB/s, fraction of 4.26 TB/s,
#      ratio to fused.  JSON: $OUT/bench_dec_{fused,stream,stream_cp}.json
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: stream decode (LT_QUICK=4), default gdn (LT_QUICK=2)"
LT_QUICK=4 timeout 22 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_stream.log" 2>&1
echo "stream rc=$? $(tail -1 "$OUT/test_lin_gpu_stream.log")"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_stream.log" | head -8
LT_QUICK=2 timeout 8 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_default.log" 2>&1
echo "default rc=$? $(tail -1 "$OUT/test_lin_gpu_default.log")"

step "2. compute-sanitizer memcheck / racecheck (LT_QUICK=5)"
for tool in memcheck racecheck; do
  LT_QUICK=5 timeout 14 compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_stream_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_stream_$tool.log" | tail -1) $(tail -1 "$OUT/lin_stream_$tool.log")"
done

step "3. bench_lin decode: fused (default), stream, stream_cp"
for v in fused stream stream_cp; do
  SGL_ATTN_LIN_DECODE=$v BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 9 \
    $T/bench_lin "$OUT/bench_dec_$v.json" $P > "$OUT/bench_dec_$v.log" 2>&1
  echo "$v rc=$?"
done
python3 - "$OUT" <<'EOF'
import json, sys, os
out = sys.argv[1]
runs = {}
for v in ("fused", "stream", "stream_cp"):
    try:
        runs[v] = {c["case"]: c for c in json.load(open(os.path.join(out, "bench_dec_%s.json" % v)))["cases"]}
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); runs[v] = {}
cases = list(runs["fused"]) or list(runs["stream"])
print("%-44s %-10s %9s %7s %6s %7s" % ("case", "decode", "us", "TB/s", "of bw", "x fused"))
for c in cases:
    base = runs["fused"].get(c)
    for v in ("fused", "stream", "stream_cp"):
        r = runs[v].get(c)
        if not r: continue
        x = base["us"] / r["us"] if base else float("nan")
        print("%-44s %-10s %9.1f %7.3f %6.3f %7.2f" % (c, v, r["us"], r["tbps"], r["frac_bw"], x))
EOF
echo "lever_lindec: done [$SECONDS s]"
