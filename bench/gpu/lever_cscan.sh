#!/usr/bin/env bash
# bench/gpu/lever_cscan.sh - SGL_ATTN_LIN_CSTATE=scan (lk_cscan.cu): the split
# state pass by groups of chunks (zero-start group states and transition
# products in parallel, a short float32 join over the groups, then the
# per-chunk pass on every group from its true start), checked, sanitised and
# timed beside the default (serial) pass on the same binary.  Prebuilt build/,
# repo root, OUT=dir; every step capped, 90 s of caps in all.
#   1. test_lin_gpu LT_QUICK=8 (the scan with groups of 1-3 chunks: the scenario,
#      long ragged requests over many groups with state carried in and padding,
#      every kind, both state dtypes, row tiles 64 and 32) and LT_QUICK=9 (one
#      32k-token request then 16k more on its state, one value head, slowly decaying
#      gates, groups of 16 (32 + 16 groups), scan and default side by side: the
#      precision of long chains)
#   2. compute-sanitizer memcheck (LT_QUICK=10) and racecheck (LT_QUICK=11)
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8, the default's tile 16): default, scan
#      with groups of 16 (row tile 64), of 16 with tile 32, of 32
#      ($OUT/bench_pre_{default,scan16,scan16t32,scan32}.json)
#   4. ncu per-kernel durations of the first 16 launches (two forwards), scan16
#      (the default's: bench/results/h200-2026-12-03/run8-441278e/lever_linpre: prep
#      0.40 ms, UT 0.56, state pass 1.22, outputs 0.37; the same kernels here)
#   then the table: TFLOP/s (4 T HV K V) and x default per case, ms per kernel.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_CSCAN_M
# default | scanM | scanMtV: SGL_ATTN_LIN_CSTATE=scan, groups of M chunks, row tile V (auto: 64)
sel() {
  case $1 in
    default) echo "SGL_ATTN_LIN_CSTATE=auto";;
    scan*t*) m=${1#scan}; echo "SGL_ATTN_LIN_CSTATE=scan SGL_ATTN_LIN_CSCAN_M=${m%t*} SGL_ATTN_LIN_CSCAN_VT=${m#*t}";;
    scan*) echo "SGL_ATTN_LIN_CSTATE=scan SGL_ATTN_LIN_CSCAN_M=${1#scan}";;
  esac
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: the scan set (LT_QUICK=8), long chains scan vs default (LT_QUICK=9, LT_LONG=32768)"
LT_QUICK=8 timeout 12 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_scan.log" 2>&1
echo "scan set rc=$? $(tail -1 "$OUT/test_lin_gpu_scan.log")"
grep -E "^FAIL +[a-z]|SKIP" "$OUT/test_lin_gpu_scan.log" | head -8
LT_QUICK=9 LT_LONG=32768 timeout 18 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_long.log" 2>&1
echo "long rc=$? $(tail -1 "$OUT/test_lin_gpu_long.log")"
grep -E "^(ok|FAIL) +[a-z]" "$OUT/test_lin_gpu_long.log"

step "2. compute-sanitizer memcheck (LT_QUICK=10) / racecheck (LT_QUICK=11), scan"
for tool in memcheck racecheck; do
  LT_QUICK=$([ $tool = memcheck ] && echo 10 || echo 11) timeout $([ $tool = memcheck ] && echo 11 || echo 16) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_cscan_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_cscan_$tool.log" | tail -1) $(tail -1 "$OUT/lin_cscan_$tool.log")"
done

step "3. bench_lin prefill T=65536 (tile 16): default, scan16, scan16t32, scan32"
for v in default scan16 scan16t32 scan32; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout $([ $v = default ] || [ $v = scan16 ] && echo 6 || echo 5) \
    $T/bench_lin "$OUT/bench_pre_$v.json" $P > "$OUT/bench_pre_$v.log" 2>&1
  echo "$v rc=$?"; grep prefill "$OUT/bench_pre_$v.log"
done

step "4. ncu kernel durations (first 16 launches): scan16"
for v in scan16; do
  env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 10 \
    ncu --clock-control none --metrics gpu__time_duration.sum -c 16 $T/bench_lin /dev/null $P > "$OUT/ncu_$v.txt" 2>&1
  echo "$v rc=$?"
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys
out = sys.argv[1]
tf, ms = {}, {}
V = ("default", "scan16", "scan16t32", "scan32")
for v in V:
    try:
        tf[v] = {c["vt"]: c for c in json.load(open(os.path.join(out, "bench_pre_%s.json" % v)))["cases"] if c.get("mode") == "prefill"}
    except Exception as e:
        print("%s: no JSON (%s)" % (v, e)); tf[v] = {}
for v in ("scan16",):
    d, name = {}, None
    try:
        for line in open(os.path.join(out, "ncu_%s.txt" % v)):
            m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
            if m:
                name = re.sub(r"\(int\)|\s", "", m.group(1)); continue
            m = re.search(r"gpu__time_duration\.sum\s+(\w+)\s+([\d.,]+)", line)
            if m and name:
                x = float(m.group(2).replace(",", "")) * {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(m.group(1), float("nan"))
                d.setdefault(name, []).append(x); name = None
    except Exception as e:
        print("%s: no ncu output (%s)" % (v, e))
    ms[v] = {k: sum(x) / len(x) for k, x in d.items()}
print("%-18s" % "T=65536 prefill" + "".join("%11s" % v for v in V))
print("(scanM: SGL_ATTN_LIN_CSTATE=scan, groups of M chunks, row tile 64; t32: tile 32; default: the serial pass, tile 16)")
for vt in sorted(set().union(*[set(x) for x in tf.values()])):
    row = [tf[v].get(vt) for v in V]
    f = [c["tflops_std"] if c else float("nan") for c in row]
    print("%-18s" % "TFLOP/s" + "".join("%11.2f" % x for x in f))
    print("%-18s" % "us" + "".join("%11.1f" % (c["us"] if c else float("nan")) for c in row))
    print("%-18s" % "x default" + "".join("%11.3f" % (x / f[0] if f[0] == f[0] and f[0] else float("nan")) for x in f))
print("ms per kernel (ncu, mean of the launches profiled; MODE 1 = group states and products, 3 = per-chunk pass):")
for v in ("scan16",):
    for k in sorted(ms[v]):
        print("  %-8s %-52s %8.3f" % (v, k, ms[v][k]))
    print("  %-8s %-52s %8.3f" % (v, "state pass total (lin_cstate*, lin_cscan*)",
                                 sum(x for k, x in ms[v].items() if k.startswith(("lin_cstate", "lin_cscan")))))
EOF
echo "lever_cscan: done [$SECONDS s]"
