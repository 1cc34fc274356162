#!/usr/bin/env bash
# bench/gpu/python_e2e.sh - the Python package end to end on the GPU (issue 17):
# overhead (the Python cost of a layer forward), stub (the sglang adapter through
# the stub sglang: prefill, prefix extend, 64 decode steps against torch SDPA,
# CUDA-graph replay against eager, times), models (transformers generate_batch,
# paged|sdpa against paged|sglattn on Llama and Qwen3), hybrid (a Qwen3-Next-shaped
# stack through the package; what could not run).  Each part writes
# $OUT/<part>.json (GPU, date, commit) and $OUT/<part>.log; a part that fails or
# runs past its cap reports and the next one runs.  hybrid_vgraph (not a default
# part): the adapter's verify graphs on a hybrid model against an eager twin
# (tests/python/sgl_hybrid.py), PARTS="hybrid_vgraph:180".
#   bash bench/gpu/run.sh python_e2e            (from the repo root, prebuilt build/ carried over)
#   PARTS="stub hybrid" bash bench/gpu/run.sh python_e2e
# Off the GPU (a dry run of the script on cpu_ref): E2E_ARGS=--cpu PYTHON=/usr/bin/python3
. "$(dirname "$0")/common.sh"
export SGLATTN_LIB="$PWD/build/lib/libsglattn.so.1"
export PYTHONPATH="$PWD/python:$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
py=${PYTHON:-python3}
plugins="$PWD/build/tests/python/plugins"
# noop.so for the overhead part: from the carried build, else built here
if [ ! -f "$plugins/noop.so" ]; then
    plugins=$(mktemp -d /tmp/sglattn_py_plugins.XXXXXX)
    cc -std=c11 -D_GNU_SOURCE -O2 -fPIC -fvisibility=hidden -Iabi -Itests/host/fakes -shared -o "$plugins/noop.so" \
        tests/host/fakes/noop.c -ldl 2>"$OUT/noop_build.log" || echo "noop.so: could not build it (overhead will fail)"
fi
$py -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())
try:
    import transformers; print("transformers", transformers.__version__)
except ImportError as e: print("transformers: not installed:", e)' 2>&1 | tee "$OUT/env.txt"
# part:cap in seconds, most important first
# the four fit one 10-minute device call; PARTS runs a subset (e.g. "models:500")
for pc in ${PARTS:-stub:150 overhead:60 models:270 hybrid:90}; do
    part=${pc%%:*}; cap=${pc#*:}; [ "$cap" = "$pc" ] && cap=300
    echo "======== $part [$SECONDS s]"
    timeout "$cap" $py bench/gpu/python_e2e.py "$part" --out "$OUT" --test-plugins "$plugins" ${E2E_ARGS:-} \
        > "$OUT/$part.log" 2>&1
    rc=$?
    [ $rc = 124 ] && echo "{\"part\": \"$part\", \"ok\": false, \"error\": \"ran past its cap of $cap s\"}" > "$OUT/$part.json"
    echo "$part rc=$rc"; grep -m1 "^== $part" "$OUT/$part.log" || tail -5 "$OUT/$part.log"
    if type pack > /dev/null 2>&1; then pack; fi
done
echo "python_e2e: done [$SECONDS s]"
