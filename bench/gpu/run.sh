#!/usr/bin/env bash
# bench/gpu/run.sh - one call on the device machine: the named parts one after
# another, every log and JSON packed into $OUT/results.tgz (the device tool
# brings back a few files; the pack is refreshed after each part, so a part cut
# by the call's limit loses only itself).
#   bash bench/gpu/run.sh PART[:CAP] ...   PART: bench/gpu/PART.sh, cut after CAP s (default 600)
#   bash bench/gpu/run.sh lever=NAME       bench/gpu/lever.sh bench/gpu/levers/NAME.conf
# From the repo root.  build/ comes from .carry/build-gpu.tgz
# (bench/gpu/pack_build.sh; carry .carry), unpacked here when build/ is not
# that pack's.  Every part name is checked before anything runs.
# results.tgz: one folder per part (console.txt and the part's files),
# nvidia-smi.txt, date.txt, meta.json (GPU, date, commit, command line, each
# part's exit status and seconds).
set -u
FINAL_OUT=${OUT:?OUT must be set}
mkdir -p "$FINAL_OUT" && FINAL_OUT=$(cd "$FINAL_OUT" && pwd) || exit 2
cd "$(dirname "$0")/../.." || exit 2
if [ $# = 0 ]; then
  echo "usage: OUT=dir bash bench/gpu/run.sh PART[:CAP] ... (parts: bench/gpu/README.md)"
  exit 2
fi
if [ -f .carry/build-gpu.tgz ]; then
  sum=$(md5sum < .carry/build-gpu.tgz)
  if [ "$(cat build/.carried 2>/dev/null)" != "$sum" ]; then
    rm -rf build build-gpu && tar xzf .carry/build-gpu.tgz && mv build-gpu build && echo "$sum" > build/.carried ||
      { echo "run.sh: cannot unpack .carry/build-gpu.tgz"; exit 2; }
  fi
fi
WORK=$(mktemp -d /tmp/sglattn_gpu.XXXXXX)
export OUT=$WORK
. bench/gpu/common.sh
bad=0
for spec; do
  cmd=$(part_script "$spec")
  [ -n "$cmd" ] || { echo "run.sh: no such part: ${spec%%:*} (bench/gpu/README.md)"; bad=1; continue; }
  case $cmd in *lever.sh*) bash ${cmd/lever.sh/lever.sh --dry-run} > /dev/null || bad=1;; esac
done
[ $bad = 0 ] || exit 2

RUN_ARGS="$*"
GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/, /, driver /')
date -u +%FT%TZ > "$WORK/date.txt"
nvidia-smi > "$WORK/nvidia-smi.txt" 2>&1
write_meta() {
  {
    printf '{\n "gpu": "%s",\n "date": "%s",\n "commit": "%s",\n "script": "bash bench/gpu/run.sh %s",\n "parts": [' \
      "${GPU_NAME:-none}" "$(cat "$WORK/date.txt")" "$SGL_ATTN_COMMIT" "$RUN_ARGS"
    awk 'BEGIN { s = "" } { printf "%s\n  {\"part\": \"%s\", \"rc\": %d, \"seconds\": %d}", s, $1, $2, $3; s = "," }' \
      "$WORK/parts.txt" 2>/dev/null
    printf '\n ]\n}\n'
  } > "$WORK/meta.json"
}
pack() { write_meta; tar czf "$FINAL_OUT/results.tgz" -C "$WORK" .; }
export -f pack write_meta
export FINAL_OUT WORK RUN_ARGS GPU_NAME
echo "run.sh: ${GPU_NAME:-no GPU found}, commit $SGL_ATTN_COMMIT, parts: $RUN_ARGS"
for spec; do run_part "$spec"; done
pack
echo "======== parts (name, exit status, seconds)"
cat "$WORK/parts.txt"
ls -la "$FINAL_OUT"
