#!/usr/bin/env bash
# bench/gpu/record3.sh - record2.sh cut to what ~3 minutes of device time
# allow: issue 6's prefill with the TMA default beside torch SDPA flash /
# cuDNN in the same call, then the linear defaults (prep v2 + four producers)
# re-checked (test_lin_gpu quick, test_lin_e2e).  ~110 s.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP SGL_ATTN_LIN_CSTATE
unset SGL_ATTN_WGMMA_TMA SGL_ATTN_WGMMA_L2SEC SGL_ATTN_CUDA_KERNEL
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
( LT_QUICK=1 timeout 60 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu (quick, defaults) rc=$? $(tail -1 "$OUT/test_lin_gpu.log")" > "$OUT/lin.rc"
  timeout 25 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")" >> "$OUT/lin.rc" ) &
TORCH_PARTS=prefill timeout 60 python3 bench/cuda/torch_side_by_side.py "$OUT/torch_prefill.json" > "$OUT/torch_prefill.log" 2>&1
echo "torch rc=$?"
cases=$(python3 -c 'import sys; sys.path.insert(0,"bench/cuda"); from shapes import *; print(" ".join("--case "+prefill_case(b,s) for b,s in PREFILL))')
timeout 25 $A bench --plugin cuda_attn $cases --min-time 0.2 --json > "$OUT/prefill_ours.json" 2> "$OUT/prefill_ours.log"; echo "ours rc=$?"
wait
cat "$OUT/lin.rc"
python3 - "$OUT" <<'PY'
import ast, json, os, sys
out = sys.argv[1]
t = {}
for line in open(os.path.join(out, "torch_prefill.log")):
    if line.startswith("torch prefill"):
        d = ast.literal_eval(line.split("torch prefill", 1)[1].strip())
        t[d["s"]] = d
ours = {}
try:
    for c in json.load(open(os.path.join(out, "prefill_ours.json"))).get("cases", []):
        kv = dict(x.split("=", 1) for x in c["case"].partition(":")[2].split(",") if "=" in x)
        ours[int(kv["l"])] = c.get("tflops")
except Exception as e:
    print("no JSON of ours:", e)
print(f"{'S':>6} {'ours':>7} {'flash':>7} {'cuDNN':>7} {'x flash':>8} {'x cuDNN':>8}")
rows = {}
for s in sorted(set(t) | set(ours)):
    f = t.get(s, {}).get("flash_TFLOPs"); c = t.get(s, {}).get("cudnn_TFLOPs"); o = ours.get(s)
    rf = o / f if o and f else None; rc = o / c if o and c else None
    rows[s] = {"ours": o, "flash": f, "cudnn": c, "x_flash": rf, "x_cudnn": rc}
    print(f"{s:>6} {o or 0:7.1f} {f or 0:7.1f} {c or 0:7.1f} {rf or 0:8.3f} {rc or 0:8.3f}")
json.dump(rows, open(os.path.join(out, "prefill_ratios.json"), "w"), indent=1)
PY
echo "record3: done [$SECONDS s]"
