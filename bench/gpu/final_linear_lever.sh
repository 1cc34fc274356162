#!/usr/bin/env bash
# bench/gpu/final_linear_lever.sh - final_linear.sh (the linear wrappers' record:
# tests, e2e, check, memcheck, bench, plain PyTorch in the same call) with
# SGL_ATTN_LIN_CSTATE=$LEVER (v5, v6), run only when lever_cstate<N> ran before
# it in this call, its test set passed and the lever beat the default on the
# 64k prefill (LEVER=v6 bash bench/gpu/run.sh lever_cstate6 final_linear_lever).
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
LEVER=${LEVER:-v5}; N=${LEVER#v}
L="$OUT/../lever_cstate$N"
if ! grep -q "^0 failures" "$L/test_lin_gpu_cs$N.log" 2>/dev/null; then
  echo "final_linear_lever: skipped (the $LEVER test set did not pass)"; exit 0
fi
if ! python3 - "$L" "$LEVER" <<'PY'
import json, sys, os
d, lever = sys.argv[1], sys.argv[2]
us = lambda v: [c for c in json.load(open(os.path.join(d, "bench_pre_%s_t16.json" % v)))["cases"] if c.get("mode") == "prefill"][0]["us"]
sys.exit(0 if us(lever) < us("default") else 1)
PY
then
  echo "final_linear_lever: skipped ($LEVER did not beat the default at 64k, or no bench JSON)"; exit 0
fi
export SGL_ATTN_LIN_CSTATE=$LEVER
bash bench/gpu/final_linear.sh
