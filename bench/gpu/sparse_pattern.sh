#!/usr/bin/env bash
# bench/gpu/sparse_pattern.sh - issue 21: is DSA sparse MLA bound by its random
# rows or by its kernel?  cuda_mla's defaults on the issue's shapes (128 heads,
# top-k 2048, bf16 pool, page 64), each twice: the rows drawn at random from
# the request's positions (the harness's default, FlashMLA's tests' pattern)
# and near=1 (the most recent positions in order: the pool read page by page,
# as the dense decode reads it).  The same kernel, grid and FLOPs on both
# sides; only the addresses differ.  Rounds alternate the two.  Then ncu's
# memory sections of the gather kernel at decode B 64 for both patterns.
# summary_pattern.txt: per shape, near / random speed.  ~2 min (cap 180).
. "$(dirname "$0")/common.sh"
need "$A"
CASES="sparse_decode:b=64,l=4096,hq=128,dtype=bf16,page=64,topk=2048,save=0
sparse_decode:b=128,l=4096,hq=128,dtype=bf16,page=64,topk=2048,save=0
sparse_extend:b=1,l=8192,q=4096,hq=128,dtype=bf16,page=64,topk=2048,save=0"
step "1. attnctl bench, random rows and near=1, 2 rounds alternated"
for r in 1 2; do
  for pat in random near; do
    n=0
    for c in $CASES; do
      n=$((n + 1))
      cc=$c; [ $pat = near ] && cc="$c,near=1"
      timeout 60 "$A" bench --plugin cuda_mla --case "$cc" --min-time 0.3 --json > "$OUT/bench_${pat}_${n}_r$r.json" 2> "$OUT/bench_${pat}_${n}_r$r.log"
      echo "round $r $pat case $n rc=$?"
    done
  done
done
python3 - "$OUT" > "$OUT/summary_pattern.txt" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "bench_*_r*.json"))):
    _, pat, n, r = os.path.basename(f)[:-5].split("_")
    try:
        c = json.load(open(f))["cases"][0]
    except Exception as e:
        print(f"{f}: unreadable ({e})"); continue
    rows.setdefault(n, {}).setdefault(pat, []).append((c["median_us"], c["tflops"], c["case"], c["verdict"]))
print("case | random us (best) | TFLOP/s | near us (best) | TFLOP/s | near / random speed")
for n in sorted(rows):
    d = rows[n]
    if "random" not in d or "near" not in d:
        print(n, "incomplete", d); continue
    br, bn = min(d["random"]), min(d["near"])
    print(f"{br[2]} | {br[0]:.1f} | {br[1]:.1f} | {bn[0]:.1f} | {bn[1]:.1f} | {br[0] / bn[0]:.3f}x"
          f" (verdicts {br[3]} / {bn[3]})")
EOF
cat "$OUT/summary_pattern.txt"
step "2. ncu: the gather kernel's memory at decode B 64, both patterns"
C=$(echo "$CASES" | head -1)
for pat in random near; do
  cc=$C; [ $pat = near ] && cc="$C,near=1"
  timeout 60 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    -k regex:mla_sparse_kernel -c 1 --launch-skip 2 "$A" bench --plugin cuda_mla --case "$cc" --min-time 0.01 \
    > "$OUT/ncu_$pat.txt" 2>&1
  echo "ncu $pat rc=$?"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Stall Long|Stall Barrier|Stall Short|Warp Cycles Per Issued" \
    "$OUT/ncu_$pat.txt" | head -14
done
echo "sparse_pattern: done [$SECONDS s]"
