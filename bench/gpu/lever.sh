#!/usr/bin/env bash
# bench/gpu/lever.sh - one lever: a switch checked against the float64
# reference, sanitized and timed beside the default in the same call, from a
# small config (bench/gpu/levers/NAME.conf; the format: bench/gpu/README.md).
#   OUT=dir bash bench/gpu/lever.sh CONFIG       on the GPU (or: bash bench/gpu/run.sh lever=NAME)
#   bash bench/gpu/lever.sh --dry-run CONFIG     check the config, print the commands; no GPU
#   bash bench/gpu/lever.sh --example            an example config
# Steps: the tests and checks with the lever's switch, compute-sanitizer on
# one of them, then the timing: default and lever alternately, `rounds` times,
# the same binary and cases.  $OUT/lever.json: GPU, date, commit, the config,
# each step's exit status and summary line, and per case the default's and the
# lever's median times and the lever's speed over the default's (default time /
# lever time; above 1: the lever is faster), with the geomean, minimum and
# maximum over the cases: the ratio of a docs/lab/levers.md row.
# default_plugins=DIR (bench_lin, or attnctl bench through --plugin-path,
# whose plugin of the timed name shadows the build's) times the default side
# with another build's plugins (a directory the call carries) and this
# build's as the lever: an adopted default re-timed against the one it
# replaced, in place of a switch; lever_plugins=DIR puts a third build on the
# lever side (two changes of one call, each against the build before it).
set -u

example() {
  cat <<'EOF'
# bench/gpu/levers/state_v7.conf - an example: no such lever exists
what=the chunked extend's state pass with 8 producer warps
plugin=gdn_cuda
env=SGL_ATTN_LIN_STATE_V7=1
test=test_lin_gpu LT_QUICK=3
check=--plugin gdn_cuda/cuda_attn
check=--plugin kda_cuda/cuda_attn
sanitize=memcheck racecheck
sanitize_run=test test_lin_gpu LT_QUICK=7
bench=bench_lin BENCH_QUICK=1 BENCH_FILTER=T=65536 BENCH_VARIANT=fast
rounds=2
EOF
}

DRY=0
case ${1:-} in
  --example) example; exit 0;;
  --dry-run) DRY=1; shift;;
esac
CONF=${1:-}
[ $# = 1 ] && [ -f "$CONF" ] || { echo "usage: OUT=dir bash bench/gpu/lever.sh [--dry-run] CONFIG | --example" >&2; exit 2; }
case $CONF in /*) ;; *) CONF=$PWD/$CONF;; esac
[ -z "${OUT:-}" ] || case $OUT in /*) ;; *) OUT=$PWD/$OUT;; esac
cd "$(dirname "$0")/../.." || exit 2
CONF_NAME=${CONF#"$PWD"/}

# ------------------------------------------------------------------ the config
# binaries of build/tests that the GPU pack carries (bench/gpu/pack_build.sh); those that load a
# plugin themselves, without the host, see no conf option (env= reaches them)
TESTS="test_lin_gpu test_lin_e2e test_lin_load test_mla_gpu test_cuda_graph test_wgmma_primitives"
HOSTLESS="test_lin_gpu test_mla_gpu test_cuda_graph test_wgmma_primitives bench_lin mla_gpu_bench"
what="" plugin="" sanitize="" sanitize_run="" bench="" rounds=2 default_plugins="" lever_plugins=""
cap_test=60 cap_check=60 cap_sanitize=120 cap_bench=60
options=() envs=() tests=() checks=()
errors=0
bad() { echo "$CONF_NAME: $*" >&2; errors=$((errors + 1)); }
n=0
while IFS= read -r line || [ -n "$line" ]; do
  n=$((n + 1))
  line=${line%%#*}
  line=$(echo "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  [ -n "$line" ] || continue
  case $line in *=*) ;; *) bad "line $n: '$line': expected KEY=value"; continue;; esac
  k=${line%%=*} v=${line#*=}
  case $k in
    what|plugin|sanitize|sanitize_run|bench|rounds|cap_test|cap_check|cap_sanitize|cap_bench|default_plugins|lever_plugins) printf -v "$k" '%s' "$v";;
    option) options+=("$v");;
    env) envs+=("$v");;
    test) tests+=("$v");;
    check) checks+=("$v");;
    *) bad "line $n: unknown key '$k' (expected what, plugin, option, env, test, check, sanitize, sanitize_run, bench, rounds, cap_test, cap_check, cap_sanitize, cap_bench, default_plugins, lever_plugins)";;
  esac
done < "$CONF"

[ -n "$what" ] || bad "what= is missing (one line: what the lever tries)"
[[ $plugin =~ ^[a-z0-9_]+$ ]] || bad "plugin='$plugin': expected the plugin the switch belongs to ([a-z0-9_]+)"
[ ${#options[@]} -gt 0 ] || [ ${#envs[@]} -gt 0 ] || [ -n "$default_plugins" ] ||
  bad "no switch: give option=KEY=VALUE (a conf plugin option), env=NAME=VALUE or default_plugins=DIR"
[[ -z $default_plugins || $default_plugins =~ ^[A-Za-z0-9_./-]+$ ]] ||
  bad "default_plugins='$default_plugins': expected a directory under the repo root"
[[ -z $lever_plugins || $lever_plugins =~ ^[A-Za-z0-9_./-]+$ ]] ||
  bad "lever_plugins='$lever_plugins': expected a directory under the repo root"
[ -z "$lever_plugins" ] || [ -n "$default_plugins" ] || bad "lever_plugins= without default_plugins="
for o in "${options[@]}"; do [[ $o =~ ^[a-z0-9_]+=[^[:space:]]+$ ]] || bad "option='$o': expected KEY=VALUE"; done
for e in "${envs[@]}"; do [[ $e =~ ^SGL_ATTN_[A-Z0-9_]+=[^[:space:]]+$ ]] || bad "env='$e': expected SGL_ATTN_NAME=VALUE"; done
[ ${#tests[@]} -gt 0 ] || [ ${#checks[@]} -gt 0 ] || bad "no correctness step: give test= or check="
# split "BINARY VAR=value ... args ..." into $bin, $vars (array) and $args (array)
split_cmd() {
  local t
  read -ra _t <<< "$1"
  bin=${_t[0]:-} vars=() args=()
  for t in "${_t[@]:1}"; do
    if [[ $t =~ ^[A-Z][A-Z0-9_]*= ]]; then vars+=("$t"); else args+=("$t"); fi
  done
}
for t in "${tests[@]}"; do
  split_cmd "$t"
  case " $TESTS " in *" $bin "*) ;; *) bad "test='$t': '$bin' is not a GPU test the pack carries (one of: $TESTS)";; esac
done
for c in "${checks[@]}"; do
  case " $c " in *" --plugin "*) ;; *) bad "check='$c': name the plugin or stack (--plugin NAME)";; esac
  case " $c " in *" --conf"*|*" --json "*) bad "check='$c': the runner adds --conf and --json";; esac
done
for s in ${sanitize//,/ }; do
  case $s in memcheck|racecheck) ;; *) bad "sanitize='$sanitize': expected memcheck and/or racecheck";; esac
done
if [ -n "$sanitize" ] && [ -z "$sanitize_run" ]; then
  if [ ${#tests[@]} -gt 0 ]; then sanitize_run="test ${tests[0]}"; else sanitize_run="check ${checks[0]} --quick"; fi
fi
if [ -n "$sanitize_run" ]; then
  case $sanitize_run in
    "test "*) split_cmd "${sanitize_run#test }"
              case " $TESTS " in *" $bin "*) ;; *) bad "sanitize_run='$sanitize_run': '$bin' is not a GPU test";; esac;;
    "check "*) case " $sanitize_run " in *" --plugin "*) ;; *) bad "sanitize_run='$sanitize_run': name the plugin (--plugin)";; esac;;
    *) bad "sanitize_run='$sanitize_run': expected 'test BINARY [VAR=value ...]' or 'check ARGS'";;
  esac
  [ -n "$sanitize" ] || bad "sanitize_run= without sanitize="
fi
split_cmd "$bench"
case $bin in
  attnctl)
    case " ${args[*]} " in *" --plugin "*) ;; *) bad "bench='$bench': name the plugin (--plugin NAME)";; esac
    case " ${args[*]} " in *" --conf"*|*" --json "*) bad "bench='$bench': the runner adds --conf and --json";; esac;;
  bench_lin|mla_gpu_bench) ;;
  *) bad "bench='$bench': expected 'attnctl ARGS', 'bench_lin [VAR=value ...]' or 'mla_gpu_bench [VAR=value ...] [MEM CMP]'";;
esac
[ -z "$default_plugins" ] || [ "$bin" = bench_lin ] || [ "$bin" = attnctl ] ||
  bad "default_plugins= with bench='$bench': only bench_lin and attnctl bench take a plugin directory"
if [ ${#envs[@]} = 0 ] && [ -z "$default_plugins" ]; then
  case " $HOSTLESS " in *" $bin "*) bad "bench='$bench': $bin loads the plugin without the host, so a conf option does not reach it: give env= or time with attnctl bench";; esac
fi
for e in "${envs[@]}"; do
  case $bin:${e%%=*} in
    bench_lin:SGL_ATTN_LIN_KERNEL|bench_lin:SGL_ATTN_LIN_VT|mla_gpu_bench:SGL_ATTN_MLA_KERNEL|mla_gpu_bench:SGL_ATTN_MLA_MMA)
      bad "env='$e': $bin sets ${e%%=*} itself for each case; time this switch with attnctl bench";;
  esac
done
for k in rounds cap_test cap_check cap_sanitize cap_bench; do
  [[ ${!k} =~ ^[1-9][0-9]{0,3}$ ]] || bad "$k='${!k}': expected a whole number of $([ $k = rounds ] && echo rounds || echo seconds)"
done
[ "$rounds" -le 5 ] 2> /dev/null || bad "rounds=$rounds: at most 5"
if [ $errors -gt 0 ]; then
  echo "lever.sh: $errors error(s) in $CONF_NAME; nothing run" >&2
  exit 2
fi
NAME=$(basename "$CONF" .conf)

# ------------------------------------------------------------------ running
if [ $DRY = 1 ]; then
  OUT=${OUT:-out}
  A=build/bin/attnctl T=build/tests P=build/lib/sglattn/plugins
else
  . bench/gpu/common.sh
  need "$A" "$P/$plugin.so"
  [ -z "$default_plugins" ] || need "$default_plugins/$plugin.so"
  [ -z "$lever_plugins" ] || need "$lever_plugins/$plugin.so"
fi
# the switch: the environment forms, and the conf made from the build's with the options added
sw_env=("${envs[@]}")
unset_env=()
for e in "${envs[@]}"; do unset_env+=(-u "${e%%=*}"); done
if [ ${#options[@]} -gt 0 ]; then
  sw_env+=("SGL_ATTN_CONF=$OUT/conf_lever.json")
  def_env=("SGL_ATTN_CONF=$OUT/conf_default.json")
  conf_args=(--conf "$OUT/conf_lever.json") def_conf=(--conf "$OUT/conf_default.json")
else
  def_env=() conf_args=() def_conf=()
fi
make_confs() {
  python3 - "$OUT" "$plugin" "${options[@]}" <<'PY'
import json, os, sys
out, plugin, opts = sys.argv[1], sys.argv[2], sys.argv[3:]
base = next((p for p in ("build/etc/sglattn/sglattn.json", "conf/sglattn.json") if os.path.exists(p)), None)
conf = json.load(open(base)) if base else {"sglattn_conf": 1}
json.dump(conf, open(os.path.join(out, "conf_default.json"), "w"), indent=1)
po = conf.setdefault("plugin_options", {}).setdefault(plugin, {})
for o in opts:
    k, v = o.split("=", 1)
    po[k] = v
json.dump(conf, open(os.path.join(out, "conf_lever.json"), "w"), indent=1)
print(f"conf: {base or 'none'} + plugin_options.{plugin} = {json.dumps(po)}")
PY
}
# run LABEL CAP STDOUT STDERR|- CMD...: capped, timed, recorded in steps.tsv (dry: printed)
run() {
  local label=$1 cap=$2 o=$3 e=$4 t0=$SECONDS rc
  shift 4
  if [ $DRY = 1 ]; then
    printf '  %-16s ' "$label"
    local a
    for a; do [[ $a =~ ^[][A-Za-z0-9_./:=,+@%-]+$ ]] && printf '%s ' "$a" || printf '%q ' "$a"; done
    printf '> %s' "$o"; [ "$e" = - ] && echo " 2>&1" || echo " 2> $e"
    return 0
  fi
  if [ "$e" = - ]; then timeout -k 5 "$cap" "$@" > "$o" 2>&1; else timeout -k 5 "$cap" "$@" > "$o" 2> "$e"; fi
  rc=$?
  local f=$o; [ "$e" = - ] || f=$e
  local s
  case $label in
    memcheck|racecheck) s=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1);;
    *) s=$(tail -1 "$f");;
  esac
  printf '%s\t%d\t%d\t%s\t%s\n' "$label" "$rc" $((SECONDS - t0)) "${s//$'\t'/ }" "$(basename "$f")" >> "$OUT/steps.tsv"
  echo "$label: rc=$rc $s [$SECONDS s]"
}

echo "lever $NAME ($plugin): $what"
echo "switch:${envs[*]:+ env ${envs[*]}}${options[*]:+ options ${options[*]}}"
if [ $DRY = 1 ]; then
  [ ${#options[@]} = 0 ] ||
    echo "  conf_default.json: the build's conf (conf/sglattn.json); conf_lever.json: the same + plugin_options.$plugin: ${options[*]}"
else
  cp "$CONF" "$OUT/lever.conf"
  : > "$OUT/steps.tsv"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2> /dev/null | head -1
  [ ${#options[@]} = 0 ] || make_confs
fi
[ $DRY = 1 ] && echo "correctness, with the switch:"
i=0
for t in "${tests[@]}"; do
  i=$((i + 1)); split_cmd "$t"
  run "test_$i" "$cap_test" "$OUT/test_$i.log" - env "${sw_env[@]}" "${vars[@]}" "$T/$bin" "${args[@]}"
done
i=0
for c in "${checks[@]}"; do
  i=$((i + 1)); read -ra cargs <<< "$c"
  run "check_$i" "$cap_check" "$OUT/check_$i.json" "$OUT/check_$i.log" \
    env "${sw_env[@]}" "$A" check "${cargs[@]}" "${conf_args[@]}" --json
done
for s in ${sanitize//,/ }; do
  case $sanitize_run in
    "test "*) split_cmd "${sanitize_run#test }"; cmd=(env "${sw_env[@]}" "${vars[@]}");;
    *) read -ra cargs <<< "${sanitize_run#check }"; cmd=(env "${sw_env[@]}" SGL_ATTN_NO_UNLOAD=1);;
  esac
  cmd+=(compute-sanitizer --tool "$s" --error-exitcode 9)
  case $sanitize_run in
    "test "*) cmd+=("$T/$bin" "${args[@]}");;
    *) cmd+=("$A" check "${cargs[@]}" "${conf_args[@]}");;
  esac
  run "$s" "$cap_sanitize" "$OUT/$s.log" - "${cmd[@]}"
done

[ $DRY = 1 ] && echo "timing, default then lever, $rounds round(s):"
split_cmd "$bench"
for r in $(seq 1 "$rounds"); do
  for side in default lever; do
    if [ $side = default ]; then e=(env "${unset_env[@]}" "${def_env[@]}"); c=("${def_conf[@]}"); else e=(env "${sw_env[@]}"); c=("${conf_args[@]}"); fi
    j="$OUT/bench_${side}_$r.json" l="$OUT/bench_${side}_$r.log"
    case $bin in
      attnctl) d=$lever_plugins; [ $side = lever ] || d=$default_plugins
               pp=(); [ -z "$d" ] || pp=(--plugin-path "$d")
               run "bench_${side}_$r" "$cap_bench" "$j" "$l" "${e[@]}" "${vars[@]}" "$A" bench "${args[@]}" "${pp[@]}" "${c[@]}" --json;;
      bench_lin) d=${lever_plugins:-$P}; [ $side = lever ] || d=${default_plugins:-$P}
                 run "bench_${side}_$r" "$cap_bench" "$l" - "${e[@]}" "${vars[@]}" "$T/bench_lin" "$j" "$d";;
      mla_gpu_bench) ml=("${args[@]}" auto auto) # the variant lists, memory- and compute-bound (default: auto)
                     run "bench_${side}_$r" "$cap_bench" "$l" - "${e[@]}" "${vars[@]}" "$T/mla_gpu_bench" "$j" \
                       "${ml[0]}" "${ml[1]}";;
    esac
  done
done
[ $DRY = 1 ] && { echo "then $OUT/lever.json (per case: default time / lever time)"; exit 0; }

step "summary"
LEVER_GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1) \
LEVER_DEFAULT_PLUGINS=$default_plugins \
LEVER_DEFAULT_COMMIT=$([ -n "$default_plugins" ] && cat "$default_plugins/commit.txt" 2> /dev/null) \
LEVER_LEVER_PLUGINS=$lever_plugins \
LEVER_LEVER_COMMIT=$([ -n "$lever_plugins" ] && cat "$lever_plugins/commit.txt" 2> /dev/null) \
python3 - "$OUT" "$NAME" "$what" "$plugin" "$rounds" "$bench" "${options[*]:-}" "${envs[*]:-}" <<'PY'
import csv, datetime, json, math, os, statistics, sys
sys.path.insert(0, "bench/cuda")
from vs_last import case_key, case_us, label, load  # noqa: E402
out, name, what, plugin, rounds, bench, options, envs = sys.argv[1:9]
rounds = int(rounds)
steps = [{"step": r[0], "rc": int(r[1]), "seconds": int(r[2]), "summary": r[3], "log": r[4]}
         for r in csv.reader(open(os.path.join(out, "steps.tsv")), delimiter="\t") if len(r) == 5]
times, labels = {}, {}
for side in ("default", "lever"):
    for r in range(1, rounds + 1):
        for c in (load(os.path.join(out, f"bench_{side}_{r}.json")) or {}).get("cases", []):
            if case_us(c):
                k = case_key(c)
                labels.setdefault(k, label(c))
                times.setdefault(k, {"default": [], "lever": []})[side].append(case_us(c))
cases = []
for k, t in times.items():
    row = {"case": labels[k], "default_us": t["default"], "lever_us": t["lever"]}
    if t["default"] and t["lever"]:
        row["ratio"] = statistics.median(t["default"]) / statistics.median(t["lever"])
    cases.append(row)
xs = [c["ratio"] for c in cases if "ratio" in c]
res = {"tool": "bench/gpu/lever.sh", "lever": name, "what": what, "plugin": plugin,
       "correct": all(s["rc"] == 0 for s in steps if not s["step"].startswith("bench_")),
       "option": options.split(), "env": envs.split(), "gpu": os.environ.get("LEVER_GPU") or None,
       "default_plugins": os.environ.get("LEVER_DEFAULT_PLUGINS") or None,
       "default_commit": os.environ.get("LEVER_DEFAULT_COMMIT") or None,
       "lever_plugins": os.environ.get("LEVER_LEVER_PLUGINS") or None,
       "lever_commit": os.environ.get("LEVER_LEVER_COMMIT") or None,
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "commit": os.environ.get("SGL_ATTN_COMMIT"), "config": open(os.path.join(out, "lever.conf")).read(),
       "steps": steps, "bench": {"command": bench, "rounds": rounds, "cases": cases,
       "ratio_geomean": math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None,
       "ratio_min": min(xs, default=None), "ratio_max": max(xs, default=None)}}
json.dump(res, open(os.path.join(out, "lever.json"), "w"), indent=1)
print("step            rc  seconds  summary" + ("" if res["correct"] else "   (a correctness step failed)"))
for s in steps:
    print(f"{s['step']:<15} {s['rc']:>2} {s['seconds']:>8}  {s['summary'][:100]}")
w = max([len(c["case"]) for c in cases] + [10])
print(f"{'case':<{w}} {'default us':>11} {'lever us':>11} {'lever/default speed':>20}")
for c in cases:
    d = statistics.median(c["default_us"]) if c["default_us"] else None
    v = statistics.median(c["lever_us"]) if c["lever_us"] else None
    print(f"{c['case']:<{w}} " + (f"{d:11.1f}" if d else f"{'-':>11}") + " " + (f"{v:11.1f}" if v else f"{'-':>11}") +
          " " + (f"{c['ratio']:19.3f}x" if "ratio" in c else f"{'-':>20}"))
b = res["bench"]
if xs:
    print(f"lever speed / default speed: geomean {b['ratio_geomean']:.3f}x, min {b['ratio_min']:.3f}x, max {b['ratio_max']:.3f}x "
          f"over {len(xs)} cases, {rounds} round(s)")
else:
    print("no case timed on both sides")
print(f"wrote {os.path.join(out, 'lever.json')}")
PY
echo "lever $NAME: done [$SECONDS s]"
