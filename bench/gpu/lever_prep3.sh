#!/usr/bin/env bash
# bench/gpu/lever_prep3.sh - the split phase 1's prep v3 (SGL_ATTN_LIN_PREP=v3:
# lin_cprep3_kernel in lk_split1.cu, v2's arithmetic with its rows packed and
# its conv weights re-read from shared memory: 64 registers, 4 blocks of 256
# per SM instead of 2) and the split output kernel v2 (SGL_ATTN_LIN_COUT=v2:
# lin_cout_kernel<., 1> in lk_split2.cu, the two column halves of a (chunk,
# head) side by side so the second reads QG / M from L2, two cp.async groups,
# 16-byte output rows), checked, sanitised and timed against the defaults
# (prep v2, output v1) on the same binary.  Prebuilt build/, repo root,
# OUT=dir; every step capped, 70 s of caps in all.
#   1. test_lin_gpu LT_QUICK=12: the "pp3,co2" configs (V 64 / 96 / 128,
#      both state dtypes, l2norm off, mamba2, lightning, long ragged requests;
#      f16 / f32, V 40, K 96, kda: other paths), each beside the defaults on
#      the same config (equal NMSE: the same outputs, as designed), a graph
#   2. compute-sanitizer memcheck (LT_QUICK=6) and racecheck (LT_QUICK=7), new
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8, tile 16), default and new:
#      $OUT/bench_pre_{def,new}.json
#   4. ncu of the first two forwards (12 launches each), default and new:
#      duration, DRAM / SM throughput, warps active
#   then the table: TFLOP/s (4 T HV K V), x default, ms per kernel.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_UT SGL_ATTN_LIN_COUT
sel() { [ "$1" = new ] && echo "SGL_ATTN_LIN_PREP=v3 SGL_ATTN_LIN_COUT=v2" || echo "SGL_ATTN_LIN_PREP=v2 SGL_ATTN_LIN_COUT=v1"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu LT_QUICK=12: pp3,co2 configs beside the defaults"
LT_QUICK=12 timeout 14 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_pc.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_gpu_pc.log")"
grep -E "^FAIL|SKIP" "$OUT/test_lin_gpu_pc.log" | head -8
python3 - "$OUT/test_lin_gpu_pc.log" <<'EOF'
import re, sys
rows = [l for l in open(sys.argv[1]) if re.match(r"^(ok|FAIL)\s", l)]
same = tot = 0
for a, b in zip(rows, rows[1:]):
    if "pp3,co2" not in a or "pp3" in b: continue
    na, nb = re.search(r"NMSE (\S+)", a), re.search(r"NMSE (\S+)", b)
    tot += 1; same += bool(na and nb and na.group(1) == nb.group(1))
    if not (na and nb and na.group(1) == nb.group(1)): print("  differs:", a.strip(), "|", nb.group(1) if nb else "?")
print("pp3,co2 configs run: %d; NMSE equal to the default kernels' on the same config: %d of %d" %
      (sum("pp3,co2" in l for l in rows), same, tot))
EOF

step "2. compute-sanitizer memcheck (LT_QUICK=6) / racecheck (LT_QUICK=7), new"
for tool in memcheck racecheck; do
  env $(sel new) LT_QUICK=$([ $tool = memcheck ] && echo 6 || echo 7) timeout $([ $tool = memcheck ] && echo 9 || echo 11) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_pc_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_pc_$tool.log" | tail -1) $(tail -1 "$OUT/lin_pc_$tool.log")"
done

step "3. bench_lin prefill T=65536 vt=16: default (prep v2, output v1), new (prep v3, output v2)"
for v in def new; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 8 \
    $T/bench_lin "$OUT/bench_pre_$v.json" $P > "$OUT/bench_pre_$v.log" 2>&1
  echo "$v rc=$?"; grep prefill "$OUT/bench_pre_$v.log"
done

step "4. ncu, the first two forwards (12 launches): default, new"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
for v in def new; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 10 \
    ncu --clock-control none --metrics $M -c 12 $T/bench_lin /dev/null $P > "$OUT/ncu_$v.txt" 2>&1
  echo "$v rc=$?"
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys
out = sys.argv[1]
tf, ms, mx = {}, {}, {}
for v in ("def", "new"):
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
print("%-30s %10s %10s %8s" % ("T=65536 prefill, vt=16", "default", "new", "new/def"))
print("(default: lin_cprep2_kernel + lin_cout_kernel<2, 0>; new: lin_cprep3_kernel + lin_cout_kernel<2, 1>)")
a, b = tf.get("def"), tf.get("new")
fa = a["tflops_std"] if a else nan; fb = b["tflops_std"] if b else nan
print("%-30s %10.2f %10.2f %8.3f" % ("TFLOP/s (4 T HV K V)", fa, fb, fb / fa if a and b and fa else nan))
print("%-30s %10.1f %10.1f %8.3f" % ("us per forward", a["us"] if a else nan, b["us"] if b else nan,
                                      b["us"] / a["us"] if a and b else nan))
for k in sorted(set(ms["def"]) | set(ms["new"])):
    p, q = ms["def"].get(k, nan), ms["new"].get(k, nan)
    print("%-30s %10.3f %10.3f %8.3f  ms (mean of the launches profiled)" % (k, p, q, q / p if p == p and p else nan))
tot = {v: sum(ms[v].values()) if ms[v] else nan for v in ms}
print("%-30s %10.3f %10.3f %8.3f  ms (ncu, kernels serialised)" % ("sum", tot.get("def", nan), tot.get("new", nan),
      tot["new"] / tot["def"] if tot.get("def") == tot.get("def") and tot.get("def") else nan))
print("prep / output kernels, % of peak (mean): dram throughput, sm throughput, warps active")
print("(floors at 64k tokens: prep ~0.40 GB ~0.10 ms; output 0.74 GB unique (QG 134 MB, Hs 268, M 67, Unew 134, o 134)")
print(" ~0.17 ms at 4.4 TB/s; v1 reads QG and M twice from DRAM: 0.94 GB)")
for v in ("def", "new"):
    for k, q in sorted(mx[v].items()):
        if "cout" in k or "prep" in k:
            print("  %s %-26s dram %5.1f  sm %5.1f  warps %5.1f" % (v, k, q.get("dram__throughput", nan),
                  q.get("sm__throughput", nan), q.get("sm__warps_active", nan)))
EOF
echo "lever_prep3: done [$SECONDS s]"
