#!/usr/bin/env python3
"""same_results.py A.json B.json - two `attnctl check --json` reports of the same
cases and seed (a lever's option on and off): every case must have the same
verdict, NMSE and max error, to the last bit, so a lever that must not change
the results (only where or when they are computed) is held to it.  The harness
checks the pools exactly in each run; this adds the outputs' identity."""
import json
import sys


def cases(path):
    with open(path) as f:
        return json.load(f)["cases"]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = cases(argv[1]), cases(argv[2])
    if [c["case"] for c in a] != [c["case"] for c in b]:
        print(f"same_results: {argv[1]} and {argv[2]} ran different cases", file=sys.stderr)
        return 1
    bad = 0
    passed = 0
    for x, y in zip(a, b):
        key = ("verdict", "nmse", "max_abs_err")
        if any(x[k] != y[k] for k in key):
            print(f"same_results: {x['case']}: {[x[k] for k in key]} against {[y[k] for k in key]}", file=sys.stderr)
            bad += 1
        passed += x["verdict"] == "pass"
    if bad or not passed:
        print(f"same_results: {bad} cases differ, {passed} passed", file=sys.stderr)
        return 1
    print(f"same_results: {len(a)} cases, {passed} passed, the same NMSE and max error both ways")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
