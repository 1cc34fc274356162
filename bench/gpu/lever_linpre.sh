#!/usr/bin/env bash
# bench/gpu/lever_linpre.sh - two opt-in levers of the CUDA linear wrappers'
# chunked prefill, checked, sanitised and timed against the defaults on the
# same binary ("v2" below = both selected):
#   SGL_ATTN_LIN_PREP=v2    lin_cprep2_kernel (lk_split1.cu): the split prep
#                           without the shared-memory conv chain, 16-byte I/O
#   SGL_ATTN_LIN_CSTATE=v2  lin_cstate_kernel<.., 4> (lk_split2.cu): the state
#                           pass with 4 producer warps instead of 1
# (ncu's per-kernel durations separate the two.)  Prebuilt build/, repo
# root, OUT=dir; every step capped, 89 s of caps in all.
#   1. test_lin_gpu LT_QUICK=3 (every split config and graph) with v2, and
#      LT_QUICK=6 (three gdn split extends) with the defaults
#   2. compute-sanitizer memcheck (LT_QUICK=6) and racecheck (LT_QUICK=7: VT 32
#      and 16) with v2
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8, tiles 16 and 32), v1 and v2:
#      $OUT/bench_pre_{v1,v2}.json
#   4. ncu per-kernel durations of the first 12 launches, v1 and v2
#   then the table: TFLOP/s (4 T HV K V) per tile and ms per kernel, v1 vs v2.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE
sel() { if [ "$1" = v2 ]; then echo "SGL_ATTN_LIN_PREP=v2 SGL_ATTN_LIN_CSTATE=v2"; else echo "SGL_ATTN_LIN_PREP=v1 SGL_ATTN_LIN_CSTATE=v1"; fi; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: split kernels with v2 (LT_QUICK=3), default (LT_QUICK=6)"
env $(sel v2) LT_QUICK=3 timeout 10 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_v2.log" 2>&1
echo "v2 rc=$? $(tail -1 "$OUT/test_lin_gpu_v2.log")"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_v2.log" | head -8
LT_QUICK=6 timeout 5 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_v1.log" 2>&1
echo "default rc=$? $(tail -1 "$OUT/test_lin_gpu_v1.log")"

step "2. compute-sanitizer memcheck (LT_QUICK=6) / racecheck (LT_QUICK=7), v2"
for tool in memcheck racecheck; do
  env $(sel v2) LT_QUICK=$([ $tool = memcheck ] && echo 6 || echo 7) timeout $([ $tool = memcheck ] && echo 12 || echo 26) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_prep2_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_prep2_$tool.log" | tail -1) $(tail -1 "$OUT/lin_prep2_$tool.log")"
done

step "3. bench_lin prefill T=65536: v1 (default), v2"
for v in v1 v2; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast timeout 7 \
    $T/bench_lin "$OUT/bench_pre_$v.json" $P > "$OUT/bench_pre_$v.log" 2>&1
  echo "$v rc=$?"; grep prefill "$OUT/bench_pre_$v.log"
done

step "4. ncu kernel durations (first 12 launches): v1, v2"
for v in v1 v2; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast timeout 11 \
    ncu --clock-control none --metrics gpu__time_duration.sum -c 12 $T/bench_lin /dev/null $P > "$OUT/ncu_$v.txt" 2>&1
  echo "$v rc=$?"
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys
out = sys.argv[1]
tf, ms = {}, {}
for v in ("v1", "v2"):
    try:
        tf[v] = {c["vt"]: c for c in json.load(open(os.path.join(out, "bench_pre_%s.json" % v)))["cases"] if c.get("mode") == "prefill"}
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); tf[v] = {}
    d, name = {}, None
    try:
        for line in open(os.path.join(out, "ncu_%s.txt" % v)):
            m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
            if m: name = m.group(1).replace("cprep2", "cprep").replace(", 1>", ", NP>").replace(", 4>", ", NP>"); continue
            m = re.search(r"gpu__time_duration\.sum\s+(\w+)\s+([\d.,]+)", line)
            if m and name:
                x = float(m.group(2).replace(",", "")) * {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(m.group(1), float("nan"))
                d.setdefault(name, []).append(x); name = None
    except Exception as e:
        print("%s: no ncu output (%s)" % (v, e))
    ms[v] = {k: sum(x) / len(x) for k, x in d.items()}
print("%-28s %10s %10s %8s" % ("T=65536 prefill", "v1", "v2", "v2/v1")); print("(v2: lin_cprep2_kernel, lin_cstate_kernel NP = 4 producer warps; v1: NP = 1)")
for vt in sorted(set(tf["v1"]) | set(tf["v2"])):
    a, b = tf["v1"].get(vt), tf["v2"].get(vt)
    fa = a["tflops_std"] if a else float("nan"); fb = b["tflops_std"] if b else float("nan")
    print("%-28s %10.2f %10.2f %8.3f" % ("TFLOP/s vt=%s" % vt, fa, fb, fb / fa if a and b and fa else float("nan")))
    print("%-28s %10.1f %10.1f" % ("us vt=%s" % vt, a["us"] if a else float("nan"), b["us"] if b else float("nan")))
for k in sorted(set(ms["v1"]) | set(ms["v2"]), key=lambda k: k):
    a, b = ms["v1"].get(k, float("nan")), ms["v2"].get(k, float("nan"))
    print("%-28s %10.3f %10.3f %8.3f  ms (mean of the launches profiled)" % (k, a, b, b / a if a else float("nan")))
EOF
echo "lever_linpre: done [$SECONDS s]"
