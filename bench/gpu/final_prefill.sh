#!/usr/bin/env bash
# bench/gpu/final_prefill.sh - cuda_attn's prefill part of the record run on the
# H200 (~75 s, capped at PREFILL_BUDGET_S, default 88).  Prebuilt build/, run from
# the repo root, OUT=dir.  Builds nothing.
#   1. attnctl check --filter extend, for the default and each new variant, all
#      at once (the check is host-bound: its float64 reference);
#   2. attnctl bench on the issue-6 prefill shapes (bench/cuda/shapes.py: causal,
#      d128, 16 heads, 16k tokens, bf16, page 16; --min-time 0.2): the default
#      (+ page 1 at 4k), then each variant that passed its check, in order of
#      interest, while the budget lasts; then the default without the save-KV
#      launch at 1k and 16k (save=0: how much of the time that launch is);
#   3. meanwhile, on the CPU: the SASS order of version 2's overlapped loop
#      (does the P.V wait stay behind the EX2s?), if cuobjdump is there;
#   4. the table: variant x S -> TFLOP/s, ratio to torch flash and to cuDNN
#      (bench/results/anchors_torch_h200_2026-12-02.json, the same shapes), and
#      summary.json.
# Variants (docs/cuda.md, "Prefill performance"); none is a default:
#   default      auto: wgmma, plain consumer (SM 9.0, d128), version 1
#   wg2ovl       SGL_ATTN_WGMMA_V2=1 SGL_ATTN_WGMMA_OVERLAP=1 (FA3 order + pingpong)
#   wg2          SGL_ATTN_WGMMA_V2=1                          (plain consumer, v2)
#   mma2         SGL_ATTN_CUDA_KERNEL=mma SGL_ATTN_MMA_EXTEND=v2
#   default_save0  the default with save=0 in the case (no save-KV launch; 1k and 16k)
#   noload       probe, WRONG outputs, not checked: wg2 whose producer copies no K/V
#                (SGL_ATTN_WGMMA_PROBE=noload): the time without the gather (2 shapes)
#   wg2ovl_nopp  wg2ovl with SGL_ATTN_WGMMA_PINGPONG=0 (2 shapes)
#   mma          SGL_ATTN_CUDA_KERNEL=mma (the SM 8.x default, same-run base for mma2; 2 shapes)
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
A=build/bin/attnctl
SO=build/lib/sglattn/plugins/cuda_attn.so
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BUDGET=${PREFILL_BUDGET_S:-88}
T0=$SECONDS
el() { echo $(( SECONDS - T0 )); }
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo; echo "### $* [$(el) s]"; }
for f in "$A" "$SO"; do [ -e "$f" ] || echo "MISSING $f (build here first and carry build/)"; done

# name|environment|shapes (all: the 5 prefill shapes; two: 1k and 16k)
VARIANTS="default||all
wg2ovl|SGL_ATTN_WGMMA_V2=1 SGL_ATTN_WGMMA_OVERLAP=1|all
wg2|SGL_ATTN_WGMMA_V2=1|all
mma2|SGL_ATTN_CUDA_KERNEL=mma SGL_ATTN_MMA_EXTEND=v2|all
noload|SGL_ATTN_WGMMA_V2=1 SGL_ATTN_WGMMA_PROBE=noload|two
wg2ovl_nopp|SGL_ATTN_WGMMA_V2=1 SGL_ATTN_WGMMA_OVERLAP=1 SGL_ATTN_WGMMA_PINGPONG=0|two
mma|SGL_ATTN_CUDA_KERNEL=mma|two"
shapes() { python3 - "$1" <<'PY'
import sys; sys.path.insert(0, "bench/cuda")
from shapes import PREFILL, prefill_case
w = sys.argv[1]
if w == "all": c = [prefill_case(b, s) for b, s in PREFILL]
elif w == "default": c = [prefill_case(b, s) for b, s in PREFILL] + [prefill_case(4, 4096, 1)]
elif w == "two": c = [prefill_case(16, 1024), prefill_case(1, 16384)]
else: c = [prefill_case(16, 1024) + ",save=0", prefill_case(1, 16384) + ",save=0"]
print(" ".join("--case " + x for x in c))
PY
}

step "SASS of version 2 (background, CPU only)"
(
  if command -v cuobjdump >/dev/null; then
    for k in _Z24attn_extend_wgmma_kernelILi1ELi128ELb1ELi1EEv8attn_fwdi _Z24attn_extend_wgmma_kernelILi1ELi128ELb1ELi0EEv8attn_fwdi \
             _Z24attn_extend_wgmma_kernelILi1ELi128ELb0ELi0EEv8attn_fwdi _Z25attn_extend_mma_v2_kernelILi1ELi128EEv8attn_fwd; do
      timeout 40 cuobjdump --dump-sass --function "$k" "$SO" > "$OUT/sass_$k.txt" 2>&1
    done
    # In order, the loop's wgmma issues, waits and EX2s, run-length encoded.  Version 1's
    # overlapped loop reads: HGMMA x16, DEPBAR gsb0 0x1, EX2 x64 (the soft-cap path's tanh),
    # DEPBAR gsb0 0x0, then the softmax's EX2s mixed with F2FP (the wait hoisted above them).
    # Version 2 should read: HGMMA x8 (S), WARPGROUP.ARRIVE, HGMMA x8 (P.V), DEPBAR 0x1, ...,
    # the softmax's EX2 x64 (plus 2 for the rescale), then DEPBAR 0x0, then F2FP x32.
    for f in "$OUT"/sass_*wgmma*.txt; do
      echo "== $(basename "$f")"
      grep -oE 'HGMMA[^ ]*|WARPGROUP\.(DEPBAR[^;]*|ARRIVE)|MUFU\.EX2|F2FP[^ ]*|BAR\.(SYNC|ARV)[^;]*|SYNCS\.ARRIVE[^ ]*|LDL|STL' "$f" |
        sed -E 's/HGMMA\.[^ ]*/HGMMA/; s/F2FP.*/F2FP/' | uniq -c | awk '{printf "%s x%d  ", $2 ($3 != "" ? " " $3 : "") ($4 != "" ? " " $4 : ""), $1} END{print ""}'
    done > "$OUT/sass_order.txt"
    awk '/Function/{f=$3} /LDG\.E/{g[f]++} /LDGSTS/{c[f]++} /BSSY/{b[f]++} /MUFU.EX2/{x[f]++} /HMMA/{h[f]++} /LDL|STL/{l[f]++}
         END{for(i in g) printf "%s LDG %d LDGSTS %d BSSY %d EX2 %d HMMA %d LDL/STL %d\n", i, g[i], c[i], b[i], x[i], h[i], l[i]}' \
      "$OUT"/sass_*mma_v2*.txt >> "$OUT/sass_order.txt"
  else
    echo "no cuobjdump here" > "$OUT/sass_order.txt"
  fi
) &
SASS_PID=$!

step "1. check --filter extend, every variant at once"
pids=()
while IFS='|' read -r name envs which; do
  case $name in mma|noload) continue;; esac # mma: checked on 2026-12-02; noload: a probe (wrong outputs)
  ( env $envs timeout 60 "$A" check --plugin cuda_attn --filter extend --json \
      > "$OUT/check_$name.json" 2> "$OUT/check_$name.log"; echo $? > "$OUT/check_$name.rc" ) &
  pids+=($!)
done <<< "$VARIANTS"
wait "${pids[@]}"
ok() { # the check passed: rc 0 and a summary line with 0 failed, 0 errors
  [ "$(cat "$OUT/check_$1.rc" 2>/dev/null)" = 0 ] && tail -1 "$OUT/check_$1.log" | grep -q " 0 failed, .* 0 errors"
}
while IFS='|' read -r name envs which; do
  [ -f "$OUT/check_$name.rc" ] || continue
  echo "check $name ($envs): rc=$(cat "$OUT/check_$name.rc") $(tail -1 "$OUT/check_$name.log")"
  ok "$name" || grep -E "^  (FAIL|ERROR)" -A1 "$OUT/check_$name.log" | head -8
done <<< "$VARIANTS"

step "2. bench"
bench() { # name envs which timeout
  env $2 timeout "$4" "$A" bench --plugin cuda_attn $(shapes "$3") --min-time 0.2 --json \
    > "$OUT/bench_$1.json" 2> "$OUT/bench_$1.log"
  echo "bench $1 ($2): rc=$? [$(el) s]"
}
while IFS='|' read -r name envs which; do
  case $name in
    default|mma) ;;
    noload) ok wg2 || { echo "skip $name: wg2's check failed"; continue; };;
    *) ok "$name" || { echo "skip $name: its check failed"; continue; };;
  esac
  [ "$name" = default ] && which=default
  case $which in default) need=18;; all) need=15;; two) need=7;; esac
  if [ "$(left)" -lt "$need" ]; then echo "skip $name: $(left) s left of the budget"; continue; fi
  bench "$name" "$envs" "$which" $(( need + 12 ))
  if [ "$name" = mma2 ] && [ "$(left)" -ge 7 ]; then bench default_save0 "" save0 20; fi
done <<< "$VARIANTS"

step "3. SASS (waiting at most 10 s for the background job)"
for i in $(seq 10); do kill -0 $SASS_PID 2>/dev/null || break; sleep 1; done
kill $SASS_PID 2>/dev/null
cut -c1-1500 "$OUT/sass_order.txt" 2>/dev/null

step "4. table"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
def key(case):
    _, _, kv = case.partition(":")
    d = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
    return (int(d.get("l", 0)), int(d.get("page", 16)))
order = ["default", "wg2ovl", "wg2", "mma2", "mma", "wg2ovl_nopp", "default_save0", "noload"]
res = {}
for p in glob.glob(os.path.join(out, "bench_*.json")):
    v = os.path.basename(p)[6:-5]
    for c in (load(p) or {}).get("cases", []):
        if c.get("tflops"):
            res.setdefault(v, {})[key(c["case"])] = c
anch = load("bench/results/anchors_torch_h200_2026-12-02.json") or {}
tor = {r["s"]: r for r in anch.get("prefill_TFLOPs", []) if r.get("d") == 128 and r.get("causal") and r.get("b", 0) * r.get("s", 0) == 16384}
vs = [v for v in order if v in res] + sorted(v for v in res if v not in order)
prev = {1024: 208.2, 16384: 417.4}  # 2026-12-02 run: wgmma plain (the default now)
S = [1024, 2048, 4096, 8192, 16384]
print("prefill TFLOP/s: causal, d128, 16 heads, b x s = 16k tokens, bf16, page 16 (page 1 on its own line)")
print("anchors: torch SDPA flash / cuDNN on this H200, contiguous, no save-KV (ours include the save-KV launch unless save0)")
W = max([12] + [len(v) for v in vs])
hdr = f"{'S':>6} | " + " ".join(f"{v:>{W}}" for v in vs) + " | flash  cudnn"
print(hdr); print("-" * len(hdr))
summary = {"variants": {}, "anchors": {s: {"flash": tor.get(s, {}).get("flash"), "cudnn": tor.get(s, {}).get("cudnn")} for s in S}}
for s in S:
    row = [res[v].get((s, 16), {}).get("tflops") for v in vs]
    t = tor.get(s, {})
    print(f"{s:>6} | " + " ".join(f"{x:{W}.1f}" if x else f"{'-':>{W}}" for x in row) +
          f" | {t.get('flash', 0):5.0f} {t.get('cudnn', 0):6.0f}")
for label, a in (("x flash", "flash"), ("x cuDNN", "cudnn")):
    print(f"{label}:")
    for s in S:
        t = tor.get(s, {}).get(a)
        row = [res[v].get((s, 16), {}).get("tflops") for v in vs]
        print(f"{s:>6} | " + " ".join(f"{x / t:{W - 1}.2f}x" if x and t else f"{'-':>{W}}" for x in row))
p1 = res.get("default", {}).get((4096, 1), {}).get("tflops"); p16 = res.get("default", {}).get((4096, 16), {}).get("tflops")
if p1 and p16:
    print(f"page 1 at 4k (default): {p1:.1f} TFLOP/s, {p16 / p1:.3f}x the page-16 time (target <= 1.10)")
for s in S:
    best = max(((res[v].get((s, 16), {}).get("tflops") or 0, v) for v in vs if v not in ("default_save0", "noload")),
               default=(0, ""))
    t = tor.get(s, {})
    if best[0] and t:
        print(f"best at {s:>5}: {best[1]:<12} {best[0]:6.1f}  {best[0] / t['flash']:.2f}x flash  {best[0] / t['cudnn']:.2f}x cuDNN"
              + (f"  (2026-12-02 default-to-be: {prev[s]})" if s in prev else ""))
d, z = res.get("default", {}), res.get("default_save0", {})
for s in (1024, 16384):
    a, b = d.get((s, 16), {}).get("median_us"), z.get((s, 16), {}).get("median_us")
    if a and b:
        print(f"save-KV launch at {s}: {a - b:.0f} us of {a:.0f} us ({(a - b) / a:.0%}); without it {z[(s, 16)]['tflops']:.1f} TFLOP/s")
print("targets: >= 1.0x flash at every S; >= 0.9x cuDNN at S >= 4096")
for v in vs:
    summary["variants"][v] = {f"{s}" + ("" if pg == 16 else f"_page{pg}"): {"tflops": c.get("tflops"), "median_us": c.get("median_us")}
                              for (s, pg), c in sorted(res[v].items())}
for p in glob.glob(os.path.join(out, "check_*.log")):
    v = os.path.basename(p)[6:-4]
    lines = open(p).read().strip().splitlines()
    summary.setdefault("checks", {})[v] = lines[-1] if lines else ""
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "final_prefill: done [$(el) s]"
