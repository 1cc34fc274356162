#!/usr/bin/env bash
# bench/gpu/mha_defaults.sh - cuda_attn after a default changed (2026-12-03:
# the TMA K/V producer): the whole check matrix against float64 with the new
# default and with the old one through its switch, the graph test, and
# compute-sanitizer memcheck / racecheck on the quick matrix.  ~60 s.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
unset SGL_ATTN_WGMMA_TMA SGL_ATTN_WGMMA_L2SEC SGL_ATTN_CUDA_KERNEL
( timeout 45 $A check --plugin cuda_attn --json > "$OUT/check_default.json" 2> "$OUT/check_default.log"; echo "check default: rc=$? $(tail -1 "$OUT/check_default.log")" > "$OUT/a.rc" ) &
( SGL_ATTN_WGMMA_TMA=0 timeout 45 $A check --plugin cuda_attn --json > "$OUT/check_notma.json" 2> "$OUT/check_notma.log"; echo "check TMA=0: rc=$? $(tail -1 "$OUT/check_notma.log")" > "$OUT/b.rc" ) &
( SGL_ATTN_DEBUG=1 timeout 30 $T/test_cuda_graph $P > "$OUT/graph.log" 2>&1; echo "graph: rc=$? $(grep -E 'PASSED|FAILED' "$OUT/graph.log" | tr '\n' ' ') tma-creates=$(grep -c 'extend: TMA' "$OUT/graph.log")" > "$OUT/c.rc" ) &
for tool in memcheck racecheck; do
  ( timeout 55 compute-sanitizer --tool $tool --error-exitcode 9 $A check --plugin cuda_attn --quick > "$OUT/attn_$tool.log" 2>&1
    echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/attn_$tool.log" | tail -1) $(tail -1 "$OUT/attn_$tool.log")" > "$OUT/san_$tool.rc" ) &
done
wait
cat "$OUT"/*.rc
echo "mha_defaults: done [$SECONDS s]"
