"""The record run's figures beside the last record's (bench/gpu/final.sh).

usage: vs_last.py PART OUT_DIR     the table for one part, written to OUT_DIR/vs_last.json
       vs_last.py summary OUT_DIR  final.sh's summary: every OUT_DIR/*/vs_last.json, one line
                                   each, then every default more than 2% slower than its last record
       vs_last.py path PART        the last record's JSON files for PART, one a line

PART: decode, prefill (cuda_attn; attnctl bench JSON), mla (cuda_mla; attnctl bench JSON),
linear (the linear wrappers; bench_lin JSON), anchors (the card's ceilings).  The last records
are the files below, in bench/results/ (bench/results/README.md, "the last record"): when a run
becomes the new record, point these at it.  LAST_<PART>=file[:file...] overrides them.  Where a
part lists several files, each case is taken from the first that has it.

x last = the last record's time / this one's: above 1 is faster now.  A case is a default when
it runs the plugin's defaults (the rows of non-default options are shown, not judged).
"""
import glob
import json
import math
import os
import sys

R = "bench/results/"
LAST = {
    "decode": [R + "h200-2026-12-04/run1-7c4a619/final/final_decode/bench_default.json"],
    "prefill": [R + "h200-2026-12-04/run1-7c4a619/final/final_prefill/bench_default.json"],
    "mla": [R + "h200-2026-12-04/run1-7c4a619/final/final_mla/bench_default.json"],
    "linear": [R + "h200-2026-12-04/run1-7c4a619/final/final_linear/bench_default.json"],
    "anchors": [R + "h200-2026-12-04/run1-7c4a619/final/anchors/ceilings.json"],
}
NEW = {"decode": "bench_default.json", "prefill": "bench_default.json", "mla": "bench_default.json",
       "linear": "bench_default.json", "anchors": "ceilings.json"}
SLOWER = 0.98  # issue 16: no default may get slower by more than 2%


def last_files(part):
    env = os.environ.get("LAST_" + part.upper())
    return env.split(":") if env else LAST[part]


def load(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    for tail in ("", "\n]}\n"):  # a tool cut by its timeout leaves the case list open
        try:
            return json.loads(text + tail)
        except ValueError:
            pass
    return None


def case_key(c):
    """attnctl: the mode and the key=value set of the case string (mla_gpu_bench: and the variant
    timed); bench_lin: the case name with its variant, tile and state dtype."""
    if "variant" in c:
        return (c["case"], c["variant"], c.get("vt", ""), c.get("state", ""))
    mode, _, kv = c.get("case", "").partition(":")
    return (mode,) + tuple(sorted(x for x in kv.split(",") if x)) + ((c["kernel"],) if "kernel" in c else ())


def case_us(c):
    return c.get("median_us") or c.get("us")


def is_default(part, c):
    # bench_lin also times the token-by-token variant (kernel=simple) and the 64k prefill at both
    # state-pass tiles; the defaults are the fast kernels at the tile auto picks (16 at 64k: one
    # request's rows fill fewer blocks than the SMs)
    if part == "linear":
        return c.get("variant") == "fast" and c.get("vt") != "32"
    return True


def label(c):
    if "variant" in c:
        return f"{c['case']} {c['variant']} vt={c.get('vt', '')}"
    return c.get("case", "") + (f" {c['kernel']}" if "kernel" in c else "")


def compare(part, out):
    new = load(os.path.join(out, NEW[part]))
    lasts = [(p, load(p)) for p in last_files(part)]
    res = {"part": part, "new": os.path.join(out, NEW[part]),
           "last": [{"file": p, "commit": (j or {}).get("commit"), "date": (j or {}).get("date")} for p, j in lasts],
           "rows": []}
    if new is None:
        res["error"] = f"no JSON at {res['new']}"
        return res
    if part == "anchors":
        last = next((j for _, j in lasts if j), {})
        for k in ("copy_TBps", "gemm_bf16_TFLOPs"):
            if new.get(k) and last.get(k):
                res["rows"].append({"case": k, "now": new[k], "last": last[k], "x_last": new[k] / last[k],
                                    "default": False})
        return res
    old = {}
    for p, j in lasts:
        for c in (j or {}).get("cases", []):
            if case_us(c):
                old.setdefault(case_key(c), (c, os.path.relpath(os.path.dirname(p), R)))
    for c in new.get("cases", []):
        k, us = case_key(c), case_us(c)
        o, src = old.get(k, (None, None))
        row = {"case": label(c), "now_us": us, "last_us": case_us(o) if o else None, "from": src,
               "default": is_default(part, c)}
        if us and row["last_us"]:
            row["x_last"] = row["last_us"] / us
        res["rows"].append(row)
    return res


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def print_part(res):
    print(f"== {res['part']}: this run beside the last record " + ("(now / last)" if res["part"] == "anchors" else
          "(x last = last time / this time; > 1 faster now)"))
    for f in res["last"]:
        print(f"   last record: {f['file']} (commit {f['commit'] or '?'}, {f['date'] or '?'})")
    if res.get("error"):
        print("   " + res["error"])
        return
    if res["part"] == "anchors":
        for r in res["rows"]:
            print(f"   {r['case']:<18} {r['now']:9.2f} now {r['last']:9.2f} last  {r['x_last']:.3f}x")
        return
    w = max([len(r["case"]) for r in res["rows"]] + [10])
    many = len(res["last"]) > 1
    print(f"   {'case':<{w}} {'us':>10} {'last us':>10} {'x last':>7}" + ("  last from" if many else ""))
    for r in res["rows"]:
        x = r.get("x_last")
        flag = "" if x is None or x >= SLOWER else ("  SLOWER" if r["default"] else "  (not a default)")
        last = f"{r['last_us']:10.1f}" if r["last_us"] else f"{'-':>10}"
        src = f"  {r['from']}" if many and r["from"] else ""
        print(f"   {r['case']:<{w}} {r['now_us']:10.1f} {last} " + (f"{x:7.3f}" if x else f"{'-':>7}") + src + flag)
    xs = [r["x_last"] for r in res["rows"] if r.get("x_last") and r["default"]]
    if xs:
        print(f"   defaults: geomean {geomean(xs):.3f}x, min {min(xs):.3f}x over {len(xs)} cases")


def main(argv):
    if len(argv) == 3 and argv[1] == "path" and argv[2] in LAST:
        print("\n".join(last_files(argv[2])))
        return 0
    if len(argv) == 3 and argv[1] in LAST:
        res = compare(argv[1], argv[2])
        xs = [r["x_last"] for r in res["rows"] if r.get("x_last") and r["default"]]
        res["geomean_x_last"], res["min_x_last"] = geomean(xs), min(xs) if xs else None
        res["slower"] = [r["case"] for r in res["rows"] if r["default"] and r.get("x_last", 1) < SLOWER]
        if argv[1] == "anchors":
            res["slower"] = []
        with open(os.path.join(argv[2], "vs_last.json"), "w") as f:
            json.dump(res, f, indent=1)
        print_part(res)
        return 0
    if len(argv) == 3 and argv[1] == "summary":
        slower, n, judged_all = [], 0, 0
        print("part            cases  geomean x last  min x last")
        for p in sorted(glob.glob(os.path.join(argv[2], "*", "vs_last.json"))):
            res = load(p) or {}
            n += 1
            part = os.path.basename(os.path.dirname(p))
            if res.get("part") == "anchors":
                print(f"{part:<15} card, now / last: " + (", ".join(f"{r['case']} {r['x_last']:.3f}x" for r in res["rows"])
                                                          or res.get("error", "-")))
                continue
            g, m = res.get("geomean_x_last"), res.get("min_x_last")
            judged = sum(1 for r in res.get("rows", []) if r.get("x_last") and r.get("default"))
            judged_all += judged
            print(f"{part:<15} {judged:>5}  " + (f"{g:14.3f}  {m:10.3f}" if g else "             -           -") +
                  (f"  ({res['error']})" if res.get("error") else ""))
            slower += [f"{part}: {c}" for c in res.get("slower", [])]
        if not judged_all:
            print("nothing compared: no default timed here that the last record has" +
                  ("" if n else f" (no vs_last.json under {argv[2]})"))
        elif slower:
            print(f"more than 2% slower than the last record ({len(slower)}): re-time before judging (run-to-run spread)")
            print("\n".join("  " + s for s in slower))
        else:
            print("no default more than 2% slower than the last record")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
