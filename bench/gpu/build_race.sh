#!/usr/bin/env bash
# bench/gpu/build_race.sh - here, before packing (bench/gpu/pack_build.sh): the
# five CUDA linear plugins with chunk_state.cu built -DLK_RACECHECK_SYNC_ONLY
# (every bar.arrive a bar.sync) into build/race/plugins, for racecheck of the
# chunked extend's state pass (bench/gpu/race_chunk_state.sh).  The compile and
# link commands are make's own (make -n, as if chunk_state.cu had changed), with
# the race object in place of chunk_state.cu.o and build/race/plugins in place
# of the plugin directory; only chunk_state.cu is compiled again.  The tree is
# the first argument (default: the current directory).
set -e
cd "${1:-.}"
O=build/obj/plugins/cuda/linear
R=build/race
make -s -j2 cuda_linear
cc=$(make -s -n -W plugins/cuda/linear/chunk_state.cu $O/chunk_state.cu.o | grep -F -- "-o $O/chunk_state.cu.o")
links=$(make -s -n -W $O/chunk_state.cu.o cuda_linear | grep -F -- " -shared " | grep -F -- "$O/chunk_state.cu.o")
if [ -z "$cc" ] || [ -z "$links" ]; then
  echo "build_race.sh: make prints no compile of $O/chunk_state.cu.o or no link of the plugins with it"
  exit 1
fi
mkdir -p $R/plugins
eval "${cc//$O\/chunk_state.cu.o/$R/chunk_state.race.o} -DLK_RACECHECK_SYNC_ONLY"
links=${links//$O\/chunk_state.cu.o/$R/chunk_state.race.o}
eval "${links//build\/lib\/sglattn\/plugins\//$R/plugins/}"
rm -f $R/chunk_state.race.o $R/chunk_state.race.o.d
# LT_QUICK=7 runs gdn's configs only, but test_lin_gpu loads all five plugins:
# the other four are links to the normal build, which keeps the device call's
# carry under its limit
for so in $R/plugins/*.so; do
  case $so in */gdn_cuda.so) ;; *) ln -sf ../../lib/sglattn/plugins/$(basename $so) $so;; esac
done
strip --strip-debug $R/plugins/gdn_cuda.so
ls -la $R/plugins
