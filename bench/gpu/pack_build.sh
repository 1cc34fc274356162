#!/usr/bin/env bash
# bench/gpu/pack_build.sh - here, after `make`: build/ packed for the GPU machine
# into .carry/build-gpu.tgz (the device call carries .carry; bench/gpu/run.sh
# unpacks it into build/).  The binaries the GPU scripts run, the libraries
# and plugins (no hip_attn), build/race/ when bench/gpu/build_race.sh made it,
# libcjson / libcmocka (the GPU machine has neither), debug info stripped, and
# build/commit.txt: the commit the build is of (-dirty: with uncommitted
# changes), which the scripts put in their JSON.  The tree is the first
# argument (default: the checkout this script is in).
# With FLA_SRC and EINOPS_SRC set (git directories of flash-linear-attention
# and einops, e.g. from the tool library's fetch), it also packs
# .carry/fla-src.tgz: issue 22's same-call anchor for linear_prefill.sh, FLA's
# fla/ package without its layers and models (the ops need neither) and
# einops, with a COMMIT file.  It is carried, never committed.
set -e
cd "${1:-$(dirname "$0")/../..}"
[ -d build ] && [ ! -L build ] || { echo "pack_build.sh: no build/ directory in $PWD"; exit 1; }
keep="bench_lin mla_gpu_bench test_lin_e2e test_lin_gpu test_lin_load test_mla_gpu test_cuda_graph test_cuda_badidx
      test_wgmma_primitives test_tree_mask_pack test_gauntlet_counts python"
# `make` builds no test binary: build the ones that travel, so none is stale
make -s -j2 all $(for b in $keep; do [ "$b" = python ] || echo "build/tests/$b"; done) \
  build/tests/python/plugins/recorder.so build/tests/python/plugins/noop.so
rm -rf build-gpu && cp -a build build-gpu
rm -rf build-gpu/obj
for f in build-gpu/tests/*; do
  b=$(basename "$f")
  case " $(echo $keep) " in *" $b "*) ;; *) rm -rf "$f";; esac
done
rm -f build-gpu/lib/sglattn/plugins/hip_attn.so
for l in libcjson.so.1 libcmocka.so.0; do
  p=$(ldconfig -p | awk -v l=$l '$1==l{print $NF; exit}')
  cp -L "$p" build-gpu/lib/
done
echo "$(git rev-parse --short=7 HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo -dirty)" > build-gpu/commit.txt
find build-gpu -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-debug {} \; 2>/dev/null || true
mkdir -p .carry && tar czf .carry/build-gpu.tgz build-gpu && rm -rf build-gpu
if [ -n "${FLA_SRC:-}" ]; then
  fla=$(mktemp -d)
  git --git-dir="$FLA_SRC" archive HEAD fla | tar -x -C "$fla"
  git --git-dir="${EINOPS_SRC:?set EINOPS_SRC beside FLA_SRC}" archive HEAD einops | tar -x -C "$fla"
  rm -rf "$fla/fla/layers" "$fla/fla/models"
  echo "fla $(git --git-dir="$FLA_SRC" rev-parse HEAD) einops $(git --git-dir="$EINOPS_SRC" rev-parse HEAD)" > "$fla/COMMIT"
  tar czf .carry/fla-src.tgz -C "$fla" . && rm -rf "$fla"
  echo "$(wc -c < .carry/fla-src.tgz) bytes .carry/fla-src.tgz"
fi
ls -la .carry/build-gpu.tgz
size=$(cat .carry/*.tgz | wc -c)
[ "$size" -le $((64 * 1024 * 1024)) ] || echo "pack_build.sh: $size bytes, over the device call's 64 MiB carry"
echo "commit $(tar xzOf .carry/build-gpu.tgz build-gpu/commit.txt)"
