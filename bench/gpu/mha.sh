#!/usr/bin/env bash
# bench/gpu/mha.sh - cuda_attn on the GPU machine, in one go (~6 minutes; every
# step is capped, 9.5 minutes if all of them hit their caps):
#   0. device, SASS summary of the plugin (cuobjdump), the graph test
#   1. attnctl check --plugin cuda_attn for each kernel variant (JSON + log)
#   2. compute-sanitizer memcheck and racecheck on a quick subset
#   3. attnctl bench on the issue-6 decode / prefill shapes (page 1 vs 16)
#   4. PyTorch SDPA flash / cuDNN on the same shapes, same run
#   5. the summary table, printed last
# Run from the repo root with a prebuilt build/ (libcjson.so.1 in build/lib):
#   OUT=/some/dir bash bench/gpu/mha.sh
# Every step has its own timeout and the script goes on after a failure; the
# logs and JSON go to $OUT.
set -u
OUT=${OUT:-/tmp/mha_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
VARIANTS="mma simple wgmma"
step() { echo; echo "### $*"; }
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s]"; }

step "0. device and build"; el
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$OUT/gpu.txt"
echo "commit $SGL_ATTN_COMMIT" | tee -a "$OUT/gpu.txt"
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$SO" > "$OUT/cuda_attn.sass" 2>&1
  # per kernel and arch: tensor-core, ldmatrix, cp.async, 128-bit global loads, local memory
  awk '/Function :/{f=$3} /arch = /{a=$3}
       /HMMA/{h[a" "f]++} /HGMMA/{g[a" "f]++} /LDSM/{l[a" "f]++} /LDGSTS/{c[a" "f]++}
       /LDG.E.128/{v[a" "f]++} /LDL|STL/{x[a" "f]++} /Function :/{k[a" "f]=1}
       END{for(i in k) printf "%-90s HMMA %4d HGMMA %4d LDSM %4d LDGSTS %4d LDG128 %4d LDL/STL %d\n", i, h[i], g[i], l[i], c[i], v[i], x[i]}' \
       "$OUT/cuda_attn.sass" | sort > "$OUT/sass_summary.txt"
  grep -c . "$OUT/sass_summary.txt"
fi
timeout 30 "$A" list-plugins > "$OUT/list_plugins.txt" 2>&1; grep -i cuda "$OUT/list_plugins.txt"
step "graph capture test"; el
timeout 60 build/tests/test_cuda_graph 2>&1 | tee "$OUT/graph_test.log" | tail -6

step "1. conformance, per variant"; el
for v in $VARIANTS; do
  q=""; lim=90; [ "$v" = mma ] || { q="--quick"; lim=50; }
  [ "$v" = wgmma ] && lim=30  # wgmma = mma until the sm_90a kernel exists
  SGL_ATTN_CUDA_KERNEL=$v timeout $lim "$A" check --plugin cuda_attn $q --json > "$OUT/check_$v.json" 2> "$OUT/check_$v.log"
  echo "check $v: rc=$? $(tail -1 "$OUT/check_$v.log")"
done

step "2. compute-sanitizer (quick subset)"; el
for tool in memcheck racecheck; do
  SGL_ATTN_CUDA_KERNEL=mma SGL_ATTN_NO_UNLOAD=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$A" check --plugin cuda_attn --quick --filter 'b=(1|2|3|4),' > "$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool mma: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
done

step "3. attnctl bench"; el
cases=$(python3 - <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import *
c = [decode_case(b, l) for b, l in DECODE] + [decode_case(b, l, 1) for b, l in DECODE_PAGE1]
c += [prefill_case(b, s) for b, s in PREFILL]
print(" ".join("--case " + x for x in c))
PY
)
SGL_ATTN_CUDA_KERNEL=mma timeout 110 "$A" bench --plugin cuda_attn $cases --min-time 0.3 --json \
  > "$OUT/bench_mma.json" 2> "$OUT/bench_mma.log"; echo "bench mma: rc=$?"
small=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+x for x in [decode_case(64,4096), decode_case(16,1024), prefill_case(4,4096)]))')
SGL_ATTN_CUDA_KERNEL=simple timeout 30 "$A" bench --plugin cuda_attn $small --min-time 0.2 --json \
  > "$OUT/bench_simple.json" 2> "$OUT/bench_simple.log"; echo "bench simple: rc=$?"

step "4. torch side by side"; el
timeout 90 python3 bench/cuda/torch_side_by_side.py "$OUT/torch.json" > "$OUT/torch.log" 2>&1; echo "torch: rc=$?"

step "5. summary"; el
python3 bench/cuda/summarize.py "$OUT" | tee "$OUT/summary.txt"
