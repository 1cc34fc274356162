#!/usr/bin/env bash
# bench/gpu/run.sh - one call on the GPU machine: run the named parts
# (mha, mla, linear, wgmma, anchors) one after another from the repo root,
# with a prebuilt build/ carried over, and pack every log and JSON into
# $OUT/results.tgz (the device tool returns at most 8 files).
#   bash bench/gpu/run.sh mha mla
set -u
FINAL_OUT=${OUT:?OUT must be set}
WORK=$(mktemp -d /tmp/sglattn_gpu.XXXXXX)
export SGL_ATTN_COMMIT=${SGL_ATTN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown)}
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
date -u +%FT%TZ > "$WORK/date.txt"
# pack what is there so far: a later part that runs past the call's limit
# loses only itself
pack() { tar czf "$FINAL_OUT/results.tgz" -C "$WORK" .; }
export -f pack; export FINAL_OUT WORK
nvidia-smi > "$WORK/nvidia-smi.txt" 2>&1
for part in "$@"; do
  mkdir -p "$WORK/$part"
  echo "======== $part ($(date -u +%T))"
  case $part in
    anchors) timeout 300 python3 bench/anchors/anchors_torch.py "$WORK/anchors/anchors_torch.json" > "$WORK/anchors/log.txt" 2>&1; echo "anchors rc=$?";;
    *) OUT="$WORK/$part" bash "bench/gpu/$part.sh" 2>&1 | tee "$WORK/$part/console.txt" | tail -40;;
  esac
  pack
done
pack
ls -la "$FINAL_OUT"
