#!/usr/bin/env bash
# bench/gpu/lin_decode_quick.sh - a short first look at the decode ring levers
# (decode_ring, decode_ring_fold) for a call with little device time left, where
# the full lever parts (bench/gpu/levers/linear_decode_{ring,fold}.conf, ~10 min
# each) do not fit:
#   1. the copy anchor (bench/anchors/ceilings.py): the 4.26 TB/s the targets count in
#   2. test_lin_gpu LT_QUICK=14: every decode config with the ring (grids 1/3/5/default)
#      and the fold against the stream kernel's bits, and their graphs
#   3. bench_lin's decode set, default / ring / fold alternately, two rounds
# Passing: "0 failures" in 2; the lever/default ratios are figures.  The lever parts'
# sanitizers still have to run before either becomes a default.  ~3-4 minutes
# (run it as lin_decode_quick:240).
. "$(dirname "$0")/common.sh"
need "$T/test_lin_gpu" "$T/bench_lin" "$P/gdn_cuda.so"
step "1. copy anchor"
timeout 40 python3 bench/anchors/ceilings.py "$OUT/ceilings.json" 2>&1 | tail -2
step "2. test_lin_gpu LT_QUICK=14 (ring and fold against the stream kernel's bits)"
LT_QUICK=14 timeout 90 "$T/test_lin_gpu" "$P" > "$OUT/test_lin_gpu_q14.log" 2>&1
echo "rc=$? $(tail -1 "$OUT/test_lin_gpu_q14.log")"
grep -E "^FAIL" "$OUT/test_lin_gpu_q14.log" | head -8
step "3. bench_lin decode: default / ring / fold, two rounds"
for r in 1 2; do
  for v in default ring fold; do
    case $v in
      default) envs=();;
      ring) envs=(SGL_ATTN_LIN_DECODE_RING=1);;
      fold) envs=(SGL_ATTN_LIN_DECODE_RING=1 SGL_ATTN_LIN_DECODE_RING_FOLD=1);;
    esac
    env "${envs[@]}" BENCH_QUICK=1 BENCH_FILTER=decode BENCH_VARIANT=fast timeout 60 "$T/bench_lin" \
      "$OUT/bench_${v}_$r.json" "$P" > "$OUT/bench_${v}_$r.log" 2>&1
    echo "$v round $r rc=$?"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, sys, glob, statistics
out = sys.argv[1]
t = {}
for f in glob.glob(out + "/bench_*_*.json"):
    v = f.rsplit("/", 1)[1].split("_")[1]
    try:
        for c in json.load(open(f))["cases"]:
            t.setdefault(c["case"], {}).setdefault(v, []).append(c["us"])
    except Exception as e:
        print("unreadable", f, e)
print("%-52s %10s %10s %10s %7s %7s" % ("case", "default", "ring", "fold", "ring x", "fold x"))
for k, d in t.items():
    m = {v: statistics.median(x) for v, x in d.items()}
    dft = m.get("default")
    print("%-52s %10s %10s %10s %7s %7s" % (k, *("%.1f" % m[v] if v in m else "-" for v in ("default", "ring", "fold")),
          *("%.3f" % (dft / m[v]) if dft and v in m else "-" for v in ("ring", "fold"))))
PY
