#!/usr/bin/env python3
"""bench/gpu/lever_table.py - the summary of a linear prefill lever script:
TFLOP/s, us and x the first variant from bench_pre_<variant>_t<tile>.json in
OUT, then the mean duration of each kernel from an ncu --metrics
gpu__time_duration.sum log.
  lever_table.py OUT default,v4,v5 16,32 ncu_v5.txt "note printed under the header" "ncu heading"
"""
import json, os, re, sys

out, variants, tiles, ncu = sys.argv[1], sys.argv[2].split(","), [int(t) for t in sys.argv[3].split(",")], sys.argv[4]
note = sys.argv[5] if len(sys.argv) > 5 else ""
heading = sys.argv[6] if len(sys.argv) > 6 else "ms per kernel (ncu, mean of the launches profiled):"
nan = float("nan")
print("%-24s" % "T=65536 prefill" + "".join("%11s" % v for v in variants))
if note:
    print("(%s)" % note)
for t in tiles:
    row = []
    for v in variants:
        try:
            cases = json.load(open(os.path.join(out, "bench_pre_%s_t%d.json" % (v, t))))["cases"]
            row.append([c for c in cases if c.get("mode") == "prefill"][0])
        except Exception as e:
            print("%s t%d: no JSON (%s)" % (v, t, e))
            row.append(None)
    f = [c["tflops_std"] if c else nan for c in row]
    print("%-24s" % ("tile %d TFLOP/s" % t) + "".join("%11.2f" % x for x in f))
    print("%-24s" % ("tile %d us" % t) + "".join("%11.1f" % (c["us"] if c else nan) for c in row))
    print("%-24s" % ("tile %d x %s" % (t, variants[0])) + "".join("%11.3f" % (x / f[0] if f[0] == f[0] and f[0] else nan) for x in f))
unit = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
durs, name = {}, None
try:
    for line in open(os.path.join(out, ncu)):
        m = re.match(r"^\s+(?:void )?(lin_\w+(?:<[^>]*>)?)\(", line)
        if m:
            name = re.sub(r"\(int\)|\s", "", m.group(1))
            continue
        m = re.search(r"gpu__time_duration\.sum\s+(\w+)\s+([\d.,]+)", line)
        if m and name:
            durs.setdefault(name, []).append(float(m.group(2).replace(",", "")) * unit.get(m.group(1), nan))
            name = None
except Exception as e:
    print("%s: no ncu output (%s)" % (ncu, e))
print(heading)
for k in sorted(durs):
    print("  %-64s %8.3f" % (k, sum(durs[k]) / len(durs[k])))
