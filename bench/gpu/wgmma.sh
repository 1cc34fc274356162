#!/usr/bin/env bash
# bench/gpu/wgmma.sh - the sm_90a wgmma extend path of cuda_attn on the H200,
# in one go (~4 minutes; every step is capped, ~9 minutes if all hit their caps).
# Builds nothing: run `make` here first (cuda_attn.so, attnctl and
# build/tests/test_wgmma_primitives) and carry build/.
#   0. device; SASS summary of the wgmma kernels (if cuobjdump is there)
#   1. the self-test, block by block (test_wgmma_primitives), twice (fresh seeds:
#      an error that moves between runs is a race)
#   2. attnctl check --plugin cuda_attn --filter extend with SGL_ATTN_CUDA_KERNEL=wgmma;
#      on a failure, again without pingpong, then without the overlap (bisects)
#   3. compute-sanitizer memcheck and racecheck on one small extend case
#   4. attnctl bench: issue-6 prefill shapes with wgmma and with mma (+ page 1 at 4k,
#      + wgmma without pingpong / overlap on two shapes)
#   5. summary: TFLOP/s, wgmma / mma, against the torch anchors of this H200
# Run from the repo root:  OUT=/some/dir bash bench/gpu/wgmma.sh
# Logs and JSON go to $OUT; the summary is printed last.
set -u
OUT=${OUT:-/tmp/wgmma_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
ST=build/tests/test_wgmma_primitives
step() { echo; echo "### $*"; }
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s]"; }
# Did the plugin really run wgmma (create logs a warning when it falls back)?
fellback() { grep -h "using mma" "$@" 2>/dev/null | head -1; }

step "0. device and SASS"; el
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$OUT/gpu.txt"
echo "commit $SGL_ATTN_COMMIT" | tee -a "$OUT/gpu.txt"
for f in "$SO" "$A" "$ST"; do [ -e "$f" ] || echo "MISSING $f (run make here and carry build/)"; done
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$SO" > "$OUT/cuda_attn.sass" 2>&1
  # per wgmma kernel: warpgroup MMAs, async copies, mbarrier ops, named barriers, local memory
  awk '/Function :/{f=$3} /arch = /{a=$3}
       /HGMMA/{g[f]++} /LDGSTS/{c[f]++} /SYNCS/{y[f]++} /BAR\./{b[f]++} /LDL|STL/{x[f]++} /WARPSYNC|WARPGROUP/{w[f]++}
       /Function :/{if ($3 ~ /wgmma/) k[$3]=1}
       END{for(i in k) printf "%-70s HGMMA %3d LDGSTS %3d SYNCS %3d BAR %3d WARPGROUP %3d LDL/STL %d\n", i, g[i], c[i], y[i], b[i], w[i], x[i]}' \
       "$OUT/cuda_attn.sass" | sort > "$OUT/sass_wgmma.txt"
  cat "$OUT/sass_wgmma.txt"
  # expected: HGMMA 32 per overlapped kernel (8 S + 8 P.V, twice: loop body and edges), LDL/STL 0
else
  echo "no cuobjdump on this machine: no SASS summary"
fi

step "1. self-test (block by block)"; el
for run in 1 2; do
  timeout 120 "$ST" > "$OUT/selftest_$run.log" 2>&1
  echo "self-test run $run: rc=$? $(grep -c '^PASS' "$OUT/selftest_$run.log") PASS, $(grep -c '^FAIL' "$OUT/selftest_$run.log") FAIL"
  grep -E '^(FAIL|CUDA ERROR|SKIP)|watchdog|first:' "$OUT/selftest_$run.log" | head -20
done
grep -E '^(PASS|FAIL)' "$OUT/selftest_1.log" | awk '{print $1, $2}' | sort | uniq -c

step "2. conformance, extend, wgmma"; el
SGL_ATTN_CUDA_KERNEL=wgmma timeout 100 "$A" check --plugin cuda_attn --filter extend --json \
  > "$OUT/check_wgmma.json" 2> "$OUT/check_wgmma.log"
rc=$?
echo "check wgmma: rc=$rc $(tail -1 "$OUT/check_wgmma.log")"
fb=$(fellback "$OUT/check_wgmma.log"); [ -n "$fb" ] && echo "note: some creates fell back to mma (d64/d256 do by design): $fb"
if [ $rc -ne 0 ]; then
  SGL_ATTN_CUDA_KERNEL=wgmma SGL_ATTN_WGMMA_PINGPONG=0 timeout 60 "$A" check --plugin cuda_attn --filter extend \
    --json > "$OUT/check_wgmma_nopp.json" 2> "$OUT/check_wgmma_nopp.log"
  echo "check wgmma, no pingpong: rc=$? $(tail -1 "$OUT/check_wgmma_nopp.log")"
  SGL_ATTN_CUDA_KERNEL=wgmma SGL_ATTN_WGMMA_OVERLAP=0 timeout 60 "$A" check --plugin cuda_attn --filter extend \
    --json > "$OUT/check_wgmma_plain.json" 2> "$OUT/check_wgmma_plain.log"
  echo "check wgmma, plain consumer: rc=$? $(tail -1 "$OUT/check_wgmma_plain.log")"
fi

step "3. compute-sanitizer (one small extend case)"; el
SMALL="extend:b=3,l=300,q=150,hq=4,hkv=2,d=128,dtype=bf16,page=16,ragged=1"
for tool in memcheck racecheck; do
  SGL_ATTN_CUDA_KERNEL=wgmma SGL_ATTN_NO_UNLOAD=1 timeout 75 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$A" check --plugin cuda_attn --case "$SMALL" > "$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool wgmma: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
done

step "4. attnctl bench (prefill, causal, d128, 16 heads, 16k tokens)"; el
cases=$(python3 - <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import PREFILL, prefill_case
c = [prefill_case(b, s) for b, s in PREFILL] + [prefill_case(4, 4096, 1)]
print(" ".join("--case " + x for x in c))
PY
)
two=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+prefill_case(b,s) for b,s in [(16,1024),(1,16384)]))')
for v in wgmma mma; do
  SGL_ATTN_CUDA_KERNEL=$v timeout 90 "$A" bench --plugin cuda_attn $cases --min-time 0.3 --json \
    > "$OUT/bench_$v.json" 2> "$OUT/bench_$v.log"; echo "bench $v: rc=$?"
done
SGL_ATTN_CUDA_KERNEL=wgmma SGL_ATTN_WGMMA_PINGPONG=0 timeout 30 "$A" bench --plugin cuda_attn $two --min-time 0.2 \
  --json > "$OUT/bench_wgmmanopp.json" 2> "$OUT/bench_wgmmanopp.log"; echo "bench wgmma no pingpong: rc=$?"
SGL_ATTN_CUDA_KERNEL=wgmma SGL_ATTN_WGMMA_OVERLAP=0 timeout 30 "$A" bench --plugin cuda_attn $two --min-time 0.2 \
  --json > "$OUT/bench_wgmmaplain.json" 2> "$OUT/bench_wgmmaplain.log"; echo "bench wgmma plain: rc=$?"
fb=$(fellback "$OUT"/bench_wgmma*.log); [ -n "$fb" ] && echo "WARNING: the wgmma bench fell back to mma: $fb"

step "5. summary"; el
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
def key(case):
    mode, _, kv = case.partition(":")
    d = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
    return (int(d.get("b", 0)), int(d.get("l", 0)), int(d.get("page", 16)))
res = {}
for p in sorted(glob.glob(os.path.join(out, "bench_*.json"))):
    v = os.path.basename(p)[6:-5]
    j = load(p) or {}
    for c in j.get("cases", []):
        res.setdefault(v, {})[key(c.get("case", ""))] = c
anch = load("bench/results/anchors_torch_h200_2026-12-02.json") or {}
tor = {(r["b"], r["s"]): r for r in anch.get("prefill_TFLOPs", []) if r.get("d") == 128 and r.get("causal")}
vs = [v for v in ("wgmma", "mma", "wgmmanopp", "wgmmaplain") if v in res]
print("prefill TFLOP/s (torch flash / cuDNN: anchors measured on this H200, 2026-12-02)")
print(f"{'B':>3} {'S':>6} {'page':>4} | " + " ".join(f"{v:>10}" for v in vs) +
      " | flash cudnn | wg/mma wg/flash wg/cudnn")
for (b, s, pg) in sorted({k for v in vs for k in res[v]}, key=lambda k: (k[1], k[2])):
    vals = [res[v].get((b, s, pg), {}).get("tflops") for v in vs]
    t = tor.get((b, s), {}) if pg == 16 else {}
    wg = res.get("wgmma", {}).get((b, s, pg), {}).get("tflops")
    mm = res.get("mma", {}).get((b, s, pg), {}).get("tflops")
    fl, cu = t.get("flash"), t.get("cudnn")
    r = lambda a, c: f"{a / c:.2f}x" if a and c else "-"
    print(f"{b:>3} {s:>6} {pg:>4} | " + " ".join(f"{x:10.1f}" if x else "         -" for x in vals) +
          f" | {fl or 0:5.0f} {cu or 0:5.0f} | {r(wg, mm):>6} {r(wg, fl):>8} {r(wg, cu):>9}")
print("targets: wg/flash >= 1.0 at every S; wg/cudnn >= 0.9 at S >= 4096")
for v in vs:
    for k, c in res[v].items():
        if "verdict" in c:
            print(f"{v} {c['case']}: {c['verdict']} {c.get('message', '')}")
PY
for run in 1 2; do tail -1 "$OUT/selftest_$run.log"; done
echo "check wgmma: $(tail -1 "$OUT/check_wgmma.log")"
el
