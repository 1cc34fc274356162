#!/usr/bin/env bash
# bench/gpu/final_linear_v5.sh - final_linear.sh (the linear wrappers' record:
# tests, e2e, check, memcheck, bench, plain PyTorch in the same call) with
# SGL_ATTN_LIN_CSTATE=v5, run only when lever_cstate5 ran before it in this
# call, its test set passed and v5 beat the default on the 64k prefill.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
L="$OUT/../lever_cstate5"
if ! grep -q "^0 failures" "$L/test_lin_gpu_cs5.log" 2>/dev/null; then
  echo "final_linear_v5: skipped (the v5 test set did not pass)"; exit 0
fi
if ! python3 - "$L" <<'PY'
import json, sys, os
d = sys.argv[1]
us = lambda v: [c for c in json.load(open(os.path.join(d, "bench_pre_%s_t16.json" % v)))["cases"] if c.get("mode") == "prefill"][0]["us"]
sys.exit(0 if us("v5") < us("default") else 1)
PY
then
  echo "final_linear_v5: skipped (v5 did not beat the default at 64k, or no bench JSON)"; exit 0
fi
export SGL_ATTN_LIN_CSTATE=v5
bash bench/gpu/final_linear.sh
