#!/usr/bin/env bash
# bench/gpu/lever_utfuse.sh - the split phase 1's prep fused into its UT
# kernel (SGL_ATTN_LIN_UT=v3: lin_utf_kernel in lk_split1.cu, gdn with conv
# width 4 and bf16 x; each (chunk, value head) block convolves its q / k / v
# tiles from x in place in shared memory: no lin_cprep2_kernel launch, no
# q / k / v round trip through DRAM; 40 KiB, 92 registers: 5 blocks per SM, v2's
# UT 4), checked, sanitised and timed against the default (prep + UT) on the
# same binary.  Prebuilt build/, repo root, OUT=dir; every
# step capped, 84 s of caps in all.
#   1. test_lin_gpu LT_QUICK=3 with v3 from the environment: every split config
#      (v3 where it applies, the pair elsewhere) and the ut3 entries / graph
#   2. compute-sanitizer memcheck (LT_QUICK=6) and racecheck (LT_QUICK=7), v3
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8, tile 16), default and v3:
#      $OUT/bench_pre_{v2,v3}.json
#   4. ncu of the first two forwards (12 / 10 launches), default and v3:
#      duration, DRAM / SM throughput, warps active
#   then the table: TFLOP/s (4 T HV K V), x default, ms per kernel.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_UT
sel() { echo "SGL_ATTN_LIN_UT=$1"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: split kernels with v3 (LT_QUICK=3)"
env $(sel v3) LT_QUICK=3 timeout 10 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_v3.log" 2>&1
echo "v3 rc=$? $(tail -1 "$OUT/test_lin_gpu_v3.log")"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_v3.log" | head -8
grep -c "ut3" "$OUT/test_lin_gpu_v3.log" | sed 's/^/ut3 entries: /'

step "2. compute-sanitizer memcheck (LT_QUICK=6) / racecheck (LT_QUICK=7), v3"
for tool in memcheck racecheck; do
  env $(sel v3) LT_QUICK=$([ $tool = memcheck ] && echo 6 || echo 7) timeout $([ $tool = memcheck ] && echo 12 || echo 20) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_utf_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_utf_$tool.log" | tail -1) $(tail -1 "$OUT/lin_utf_$tool.log")"
done

step "3. bench_lin prefill T=65536 vt=16: default (v2), v3"
for v in v2 v3; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 9 \
    $T/bench_lin "$OUT/bench_pre_$v.json" $P > "$OUT/bench_pre_$v.log" 2>&1
  echo "$v rc=$?"; grep prefill "$OUT/bench_pre_$v.log"
done

step "4. ncu, the first two forwards (12 / 10 launches): default (v2), v3"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
for v in v2 v3; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 12 \
    ncu --clock-control none --metrics $M -c $([ $v = v2 ] && echo 12 || echo 10) $T/bench_lin /dev/null $P \
    > "$OUT/ncu_$v.txt" 2>&1
  echo "$v rc=$?"
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys
out = sys.argv[1]
tf, ms, mx = {}, {}, {}
for v in ("v2", "v3"):
    try:
        tf[v] = [c for c in json.load(open(os.path.join(out, "bench_pre_%s.json" % v)))["cases"] if c.get("mode") == "prefill"][0]
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); tf[v] = None
    d, x, name = {}, {}, None
    try:
        for line in open(os.path.join(out, "ncu_%s.txt" % v)):
            m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
            if m: name = m.group(1); continue
            m = re.search(r"^\s+(\S+)\s+(\S+)\s+([\d.,]+)\s*$", line)
            if m and name and m.group(1) != "Metric":
                val = float(m.group(3).replace(",", ""))
                if m.group(1) == "gpu__time_duration.sum":
                    val *= {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(m.group(2), float("nan"))
                    d.setdefault(name, []).append(val)
                else:
                    x.setdefault(name, {}).setdefault(m.group(1).split(".")[0], []).append(val)
    except Exception as e:
        print("%s: no ncu output (%s)" % (v, e))
    ms[v] = {k: sum(a) / len(a) for k, a in d.items()}
    mx[v] = {k: {n: sum(a) / len(a) for n, a in q.items()} for k, q in x.items()}
nan = float("nan")
print("%-30s %10s %10s %8s" % ("T=65536 prefill, vt=16", "v2", "v3", "v3/v2"))
print("(v2: lin_cprep2_kernel + lin_ut_kernel<2, 1>; v3: lin_utf_kernel<2>, the two fused)")
a, b = tf.get("v2"), tf.get("v3")
fa = a["tflops_std"] if a else nan; fb = b["tflops_std"] if b else nan
print("%-30s %10.2f %10.2f %8.3f" % ("TFLOP/s (4 T HV K V)", fa, fb, fb / fa if a and b and fa else nan))
print("%-30s %10.1f %10.1f %8.3f" % ("us per forward", a["us"] if a else nan, b["us"] if b else nan,
                                      b["us"] / a["us"] if a and b else nan))
for k in sorted(set(ms["v2"]) | set(ms["v3"])):
    p, q = ms["v2"].get(k, nan), ms["v3"].get(k, nan)
    print("%-30s %10.3f %10.3f %8.3f  ms (mean of the launches profiled)" % (k, p, q, q / p if p == p and p else nan))
tot = {v: sum(ms[v].values()) if ms[v] else nan for v in ms}
print("%-30s %10.3f %10.3f %8.3f  ms (ncu, kernels serialised)" % ("sum", tot.get("v2", nan), tot.get("v3", nan),
      tot["v3"] / tot["v2"] if tot.get("v2") == tot.get("v2") and tot.get("v2") else nan))
print("prep / UT kernels, % of peak (mean): dram throughput, sm throughput, warps active")
for v in ("v2", "v3"):
    for k, q in sorted(mx[v].items()):
        if "ut" in k or "prep" in k:
            print("  %s %-26s dram %5.1f  sm %5.1f  warps %5.1f" % (v, k, q.get("dram__throughput", nan),
                  q.get("sm__throughput", nan), q.get("sm__warps_active", nan)))
EOF
echo "lever_utfuse: done [$SECONDS s]"
