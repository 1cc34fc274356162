#!/usr/bin/env bash
# bench/gpu/build_race.sh - here, before packing (bench/gpu/pack_build.sh): the
# five CUDA linear plugins with chunk_state.cu built -DLK_RACECHECK_SYNC_ONLY
# (every bar.arrive a bar.sync) into build/race/plugins, for racecheck of the
# chunked extend's state pass (bench/gpu/race_chunk_state.sh).  The objects,
# flags and link line are the build's own (plugins/cuda/linear/module.mk, read
# through make); only chunk_state.cu is compiled again.  The tree is the first
# argument (default: the current directory).
set -e
cd "${1:-.}"
make -s -j2 cuda_linear
var() { make -s --no-print-directory --eval 'print-%: ; @echo $($*)' "print-$1"; }
O=$(var OBJDIR)/plugins/cuda/linear
R=build/race
mkdir -p $R/plugins
$(var NVCC) $(var LIN_NVCC_FLAGS) -DLK_RACECHECK_SYNC_ONLY -c plugins/cuda/linear/chunk_state.cu -o $R/chunk_state.race.o
objs=$(for o in $(var LIN_OBJS); do [ "$o" = $O/chunk_state.cu.o ] || echo "$o"; done)
[ "$(echo "$objs" | wc -l)" -lt "$(var LIN_OBJS | wc -w)" ] || { echo "build_race.sh: $O/chunk_state.cu.o not in LIN_OBJS"; exit 1; }
for k in $(var LIN_KINDS); do
  $(var CUDA_LINK) -o $R/plugins/${k}_cuda.so $O/lin_plugin.$k.o $objs $R/chunk_state.race.o $(var CUDA_COMMON_OBJS) \
    $(var CUDA_LDLIBS)
done
rm -f $R/chunk_state.race.o
strip --strip-debug $R/plugins/*.so
ls -la $R/plugins
