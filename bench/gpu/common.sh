# shellcheck shell=bash
# bench/gpu/common.sh - sourced by every GPU script (bench/gpu/README.md): the
# repo root as working directory, the carried build/ on the library path, the
# build's commit for the JSON files, $OUT made, no plugin option inherited from
# the caller's environment (the scripts measure the defaults unless they set one
# themselves), and run_part, which run.sh and final.sh share.
set -u
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
A=build/bin/attnctl
T=build/tests
P=build/lib/sglattn/plugins
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the commit the build was made from (pack_build.sh writes it; the device copy's
# git metadata can be stale), else the checkout's
if [ -z "${SGL_ATTN_COMMIT:-}" ]; then
  SGL_ATTN_COMMIT=$(cat build/commit.txt 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
export SGL_ATTN_COMMIT PYTHONUNBUFFERED=1
# every plugin option's environment form, and a conf named by the environment
unset $(compgen -v SGL_ATTN_LIN_) $(compgen -v SGL_ATTN_MLA_) SGL_ATTN_CONF 2>/dev/null

step() { echo; echo "### $* [$SECONDS s]"; }

# need FILE...: say what is missing (the step that uses it then reports its own failure)
need() {
  local f
  for f; do [ -e "$f" ] || echo "MISSING $f (build here, bench/gpu/pack_build.sh, carry .carry)"; done
}

# kernel_confs KERNEL...: $OUT/conf_KERNEL.json for each, a conf that sets cuda_attn's kernel
# option (the host reads options from a conf: attnctl --conf FILE, SGL_ATTN_CONF)
kernel_confs() {
  local k
  for k; do
    printf '{"sglattn_conf": 1, "plugin_options": {"cuda_attn": {"kernel": "%s"}}}\n' "$k" > "$OUT/conf_$k.json"
  done
}

# sanitize TOOL CAP NAME CMD...: compute-sanitizer TOOL (memcheck, racecheck) over CMD, cut after
# CAP seconds, its output in $OUT/NAME.log, no plugin unloaded (SGL_ATTN_NO_UNLOAD=1: reports keep
# their symbols); prints "TOOL rc=N", the summary line and attnctl's "plugin checked" line
sanitize() {
  local tool=$1 cap=$2 log=$OUT/$3.log sum=ERROR
  shift 3
  [ "$tool" = racecheck ] && sum=RACECHECK
  SGL_ATTN_NO_UNLOAD=1 timeout "$cap" compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$log" 2>&1
  echo "$tool rc=$? $(grep -E "$sum SUMMARY" "$log" | tail -1) | $(grep -E 'plugin checked' "$log" | tail -1)"
}

# part_script SPEC: the command line of a part, "NAME[:CAP]" (bench/gpu/NAME.sh)
# or "lever=NAME[:CAP]" (bench/gpu/lever.sh bench/gpu/levers/NAME.conf), or
# nothing when it does not exist.
part_script() {
  local name=${1%%:*}
  case $name in
    lever=*) [ -f "bench/gpu/levers/${name#lever=}.conf" ] && echo "bench/gpu/lever.sh bench/gpu/levers/${name#lever=}.conf";;
    */*|common|run|lever|pack_build|build_race) ;;
    *) [ -f "bench/gpu/$name.sh" ] && echo "bench/gpu/$name.sh";;
  esac
}

# run_part SPEC: one part under $OUT/<name>/ (console.txt: what it printed),
# cut after CAP seconds (default 600); the last lines go to the console and the
# pack (run.sh's) is refreshed, so a later part past the call's limit loses
# only itself.  Appends "name rc seconds" to $OUT/parts.txt.
run_part() {
  local spec=$1 name=${1%%:*} cap=${1#*:} cmd dir t0 rc
  [ "$cap" = "$spec" ] && cap=600
  dir=${name/=/_}
  cmd=$(part_script "$spec")
  mkdir -p "$OUT/$dir"
  echo "======== $name (cap $cap s) [$SECONDS s]"
  if [ -z "$cmd" ]; then
    echo "no such part: $name" | tee "$OUT/$dir/console.txt"
    echo "$name 127 0" >> "$OUT/parts.txt"
    return
  fi
  t0=$SECONDS
  OUT="$OUT/$dir" timeout -k 10 "$cap" bash $cmd > "$OUT/$dir/console.txt" 2>&1
  rc=$?
  [ $rc = 124 ] || [ $rc = 137 ] && echo "$name: cut at its cap of $cap s" >> "$OUT/$dir/console.txt"
  tail -n "${PART_TAIL:-40}" "$OUT/$dir/console.txt"
  echo "$name $rc $((SECONDS - t0))" >> "$OUT/parts.txt"
  if type pack > /dev/null 2>&1; then pack; fi
}

# prefill_anchored PART PLUGIN FILTER: a part of issue 23's prefills timed beside PyTorch
# (prefill_dims.sh: PART dims; mla_extend.sh: PART mla), every step capped:
#   1. attnctl check of PLUGIN against float64: the matrix's cases that match FILTER, and the part's
#      own cases (bench/cuda/shapes.py PART --check: the benched head counts, quick references);
#   2. attnctl bench on the part's shapes (bench/cuda/shapes.py PART), --min-time 0.2: bench_PART.json;
#   3. PyTorch on the same shapes in the same call (bench/cuda/prefill_torch.py PART): torch_PART.json;
#   4. the table (bench/cuda/prefill_summary.py PART): summary_PART.txt and .json.
# A dry run here: PREFILL_PLUGIN=cpu_ref (or PREFILL_PLUGIN_PATH=build/emu-plugins for the emulated
# CUDA plugins) PREFILL_SMALL=1 (tiny shapes; torch on the CPU).
prefill_anchored() {
  local part=$1 plug=${PREFILL_PLUGIN:-$2} filter=$3 small="" dev=cuda pp=()
  [ "${PREFILL_SMALL:-0}" = 1 ] && small=--small dev=cpu
  [ -n "${PREFILL_PLUGIN_PATH:-}" ] && pp=(--plugin-path "$PREFILL_PLUGIN_PATH" --no-conf)
  need "$A"
  step "1. attnctl check --plugin $plug: the matrix's '$filter' cases, then the part's own"
  timeout 120 "$A" check "${pp[@]}" --plugin "$plug" ${small:+--quick} --filter "$filter" --json \
    > "$OUT/check_matrix.json" 2> "$OUT/check_matrix.log"
  echo "check matrix: rc=$? $(tail -1 "$OUT/check_matrix.log")"
  # shellcheck disable=SC2046 # the case list is words
  timeout 120 "$A" check "${pp[@]}" --plugin "$plug" $(python3 bench/cuda/shapes.py "$part" --check $small) --json \
    > "$OUT/check_$part.json" 2> "$OUT/check_$part.log"
  echo "check $part: rc=$? $(tail -1 "$OUT/check_$part.log")"
  grep -hE "^  (FAIL|ERROR|fail|error|not supported)" -A1 "$OUT/check_matrix.log" "$OUT/check_$part.log" | head -12
  step "2. attnctl bench --plugin $plug, the part's shapes"
  # shellcheck disable=SC2046
  timeout 150 "$A" bench "${pp[@]}" --plugin "$plug" $(python3 bench/cuda/shapes.py "$part" $small) \
    --min-time "${PREFILL_MIN_TIME:-0.2}" --json > "$OUT/bench_$part.json" 2> "$OUT/bench_$part.log"
  echo "bench: rc=$?"; grep -E '^  extend' "$OUT/bench_$part.log"
  step "3. PyTorch, same shapes, same call"
  timeout 200 python3 bench/cuda/prefill_torch.py "$part" "$OUT/torch_$part.json" --device $dev $small \
    > "$OUT/torch_$part.log" 2>&1
  echo "torch: rc=$?"; tail -2 "$OUT/torch_$part.log" | cut -c1-300
  step "4. table"
  python3 bench/cuda/prefill_summary.py "$part" "$OUT" $small | tee "$OUT/summary_$part.txt"
}
