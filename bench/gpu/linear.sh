#!/usr/bin/env bash
# bench/gpu/linear.sh - the CUDA linear-attention wrappers (gdn_cuda, kda_cuda,
# mamba2_cuda, short_conv_cuda, lightning_cuda) on the GPU machine, in one go
# (~4 minutes expected; every step is capped, 8.5 minutes if all hit their caps):
#   0. device, plugins, the load test, SASS summary (when cuobjdump is there)
#   1. test_lin_gpu: every config (every kind and kernel; SGL_ATTN_LIN_KERNEL
#      simple / fast, SGL_ATTN_LIN_VT 16 / 32) against the float64 reference,
#      graph capture / replay, bad inputs
#   2. test_lin_e2e: a tiny hybrid model, gdn_cuda/cuda_attn vs gdn/cpu_ref
#   3. attnctl check --plugin <kind>_cuda/cuda_attn per variant (needs the
#      harness's linear families; logged either way)
#   4. compute-sanitizer memcheck and racecheck on a quick subset
#   5. bench_lin: GDN decode (Qwen3-Next) and chunked prefill (Qwen3.5 TP8, 64k)
#   6. the plain PyTorch GDN in the same run
#   7. the ratio table, printed last
# Run from the repo root with a prebuilt build/ (libcjson.so.1 in build/lib):
#   OUT=/some/dir bash bench/gpu/linear.sh
# Logs and JSON go to $OUT; the script goes on after a failure.
set -u
OUT=${OUT:-/tmp/linear_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
unset $(compgen -v SGL_ATTN_LIN_)
A=build/bin/attnctl
T=build/tests
P=build/lib/sglattn/plugins
KINDS="gdn kda mamba2 short_conv lightning"
step() { echo; echo "### $*"; }
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s]"; }

step "0. device and build"; el
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$OUT/gpu.txt"
echo "commit $SGL_ATTN_COMMIT" | tee -a "$OUT/gpu.txt"
ls -la $P/*_cuda.so | tee "$OUT/plugins.txt"
timeout 30 "$A" list-plugins > "$OUT/list_plugins.txt" 2>&1; grep -E "_cuda|cuda_attn" "$OUT/list_plugins.txt"
timeout 30 $T/test_lin_load $P > "$OUT/load_test.log" 2>&1; echo "load test: rc=$? $(tail -1 "$OUT/load_test.log")"
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass $P/gdn_cuda.so > "$OUT/gdn_cuda.sass" 2>&1
  # per kernel and arch: tensor-core ops, ldmatrix, cp.async, local memory (spills)
  awk '/Function :/{f=$3} /arch = /{a=$3}
       /HMMA/{h[a" "f]++} /LDSM/{l[a" "f]++} /LDGSTS/{c[a" "f]++} /LDL|STL/{x[a" "f]++} /Function :/{k[a" "f]=1}
       END{for(i in k) printf "%-70s HMMA %4d LDSM %4d LDGSTS %4d LDL/STL %d\n", i, h[i], l[i], c[i], x[i]}' \
       "$OUT/gdn_cuda.sass" | sort > "$OUT/sass_summary.txt"
  cat "$OUT/sass_summary.txt"
fi

step "1. test_lin_gpu (every config, graphs, bad inputs)"; el
timeout 120 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu: rc=$?"
grep -E "^(ok|FAIL)|failure" "$OUT/test_lin_gpu.log" | tail -45

step "2. end-to-end hybrid stack"; el
timeout 60 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e: rc=$?"
tail -3 "$OUT/test_lin_e2e.log"

step "3. attnctl check per kind and variant"; el
for k in $KINDS; do
  for v in fast simple; do
    SGL_ATTN_LIN_KERNEL=$v timeout 40 "$A" check --plugin ${k}_cuda/cuda_attn --json \
      > "$OUT/check_${k}_$v.json" 2> "$OUT/check_${k}_$v.log"
    echo "check ${k}_cuda/cuda_attn $v: rc=$? $(tail -1 "$OUT/check_${k}_$v.log")"
  done
done

step "4. compute-sanitizer (quick subsets)"; el
if command -v compute-sanitizer >/dev/null; then
  LT_QUICK=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_lin_gpu $P \
    > "$OUT/sanitizer_memcheck.log" 2>&1
  echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_memcheck.log" | tail -1)"
  LT_QUICK=2 timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P \
    > "$OUT/sanitizer_racecheck.log" 2>&1
  echo "racecheck: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitizer_racecheck.log" | tail -1)"
else
  echo "compute-sanitizer not found"
fi

step "5. bench_lin (decode and chunked prefill)"; el
timeout 90 $T/bench_lin "$OUT/bench_linear.json" $P 2>&1 | tee "$OUT/bench_linear.log"

step "6. plain PyTorch GDN, same run"; el
timeout 70 python3 bench/cuda/linear_torch.py "$OUT/torch_linear.json" > "$OUT/torch_linear.log" 2>&1
echo "torch: rc=$?"; tail -9 "$OUT/torch_linear.log"

step "7. summary"; el
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
ours, torch = load("bench_linear.json") or {"cases": []}, load("torch_linear.json") or {"decode": [], "prefill": []}
peak = ours.get("peak_bw_tbps", 4.26)
print(f"\n== GDN decode, fp32 state (bytes = state read + written)  GPU {ours.get('gpu')}  commit {ours.get('commit', '')[:12]}")
print(f"{'shape':<34} {'ours us':>9} {'TB/s':>7} {'%peak':>6} {'torch us':>9} {'torch/ours':>10}  target")
tdec = {(r["B"], r["hv"]): r for r in torch.get("decode", [])}
for c in ours["cases"]:
    if c["mode"] != "decode" or c["variant"] != "fast" or c["state"] != "f32":
        continue
    t = tdec.get((c["B"], c["hv"]), {})
    ratio = t["us"] / c["us"] if t.get("us") else float("nan")
    tgt = ">= 75%" if c["B"] >= 256 and c["hv"] == 32 else ""
    ok = "" if not tgt else ("ok" if c["frac_bw"] >= 0.75 else "MISS")
    print(f"{'B=%d hv%d/hk%d' % (c['B'], c['hv'], c['hk']):<34} {c['us']:9.1f} {c['tbps']:7.3f} {100*c['frac_bw']:5.1f}% "
          f"{t.get('us', float('nan')):9.1f} {ratio:9.1f}x  {tgt} {ok}")
print("anchor: vLLM fused recurrent 420 us at B=1024, TP2 (hv16/hk8) on an H200")
print(f"\n== GDN chunked prefill, Qwen3.5 TP8 (hv8/hk2, d128), bf16; TFLOP/s = 4 T HV K V / t (FlashInfer's count)")
print(f"{'case':<40} {'ours us':>9} {'TFLOP/s':>8} {'chunked mm':>10} {'torch us':>9} {'torch/ours':>10}")
tpre = {r["T"]: r for r in torch.get("prefill", [])}
for c in ours["cases"]:
    if c["mode"] != "prefill":
        continue
    t = tpre.get(c["T"], {})
    ratio = t["us"] / c["us"] if t.get("us") else float("nan")
    print(f"{'T=%d %s vt=%s' % (c['T'], c['variant'], c['vt']):<40} {c['us']:9.1f} {c['tflops_std']:8.1f} "
          f"{c['tflops_chunked']:10.1f} {t.get('us', float('nan')):9.1f} {ratio:9.1f}x")
print("target >= 60 TFLOP/s at T=65536 (goal 90); anchor: FlashInfer SM90 86.1 on an H100")
print(f"torch self-check NMSE (its chunked vs its recurrent form): {torch.get('self_check_nmse')}")
PY
el
