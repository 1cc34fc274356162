#!/usr/bin/env bash
# bench/gpu/capture_machine.sh - capture this machine's devices as a machine
# file (attnctl devices --json, --json schema 1) for examples/machines/, and
# check it reads back: run on the GPU machine from the repo root, with a
# build/ that has the CUDA plugins.
#
#   OUT=/some/dir bash bench/gpu/capture_machine.sh [NAME]     (NAME: h200)
#
# Writes $OUT/NAME.json (indented), and beside it what it was checked with:
# NAME.devices.txt (attnctl devices -v), NAME.report.txt (attnctl report),
# NAME.select.txt (the choice, read back with --caps-from, for the example
# models: it must equal the choice made on the machine itself).
# Passing: the script exits 0 and prints "capture_machine: ok".
# Then commit $OUT/NAME.json as examples/machines/NAME.json.
set -euo pipefail
OUT=${OUT:?OUT must be set}
name=${1:-h200}
A=build/bin/attnctl
[ -x "$A" ] || { echo "capture_machine: $A missing: build first (make)"; exit 1; }
for p in cuda_attn cuda_mla; do
    [ -f "build/lib/sglattn/plugins/$p.so" ] || { echo "capture_machine: $p.so not built (nvcc missing?)"; exit 1; }
done
mkdir -p "$OUT"
unset SGL_ATTN_PLUGIN_PATH SGL_ATTN_CONF
nvidia-smi > "$OUT/$name.nvidia-smi.txt" 2>&1 || true
"$A" devices --json | python3 -c 'import json, sys; json.dump(json.load(sys.stdin), sys.stdout, indent=1); print()' \
    > "$OUT/$name.json"
"$A" devices -v > "$OUT/$name.devices.txt"
"$A" report > "$OUT/$name.report.txt"
python3 - "$OUT/$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cuda = [x for x in d["devices"] if x["platform"] == "cuda"]
assert d["schema"] == 1 and d["command"] == "devices", "not a machine file"
assert cuda, "no CUDA device in the capture: is the GPU visible (CUDA_VISIBLE_DEVICES)?"
for x in cuda:
    use = [p["name"] for p in x["plugins"] if p["available"]]
    print("capture_machine: cuda %d: %s %s, %s bytes, %s SMs; usable by %s" % (
        x["index"], x["name"], x["arch"], x["memory_bytes"], x["compute_units"], ", ".join(use) or "none"))
    assert "cuda_attn" in use, "cuda_attn cannot use %s" % x["name"]
PY
: > "$OUT/$name.select.txt"
fail=0
for m in examples/models/*.json; do
    here=$("$A" select --model "$m" 2>/dev/null | head -1 || true)
    there=$("$A" select --model "$m" --caps-from "$OUT/$name.json" 2>/dev/null | head -1 | sed 's/ on the machine of .*//' || true)
    printf '%-40s here: %-32s from the file: %s\n' "$(basename "$m")" "${here:-(refused)}" "${there:-(refused)}" \
        | tee -a "$OUT/$name.select.txt"
    [ "$here" = "$there" ] || fail=1
done
[ $fail = 0 ] || { echo "capture_machine: FAIL: a choice read from the file differs from the machine's own"; exit 1; }
echo "capture_machine: ok: commit $OUT/$name.json as examples/machines/$name.json"
