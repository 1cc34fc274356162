#!/usr/bin/env bash
# bench/gpu/build_race.sh - here, before packing: the five CUDA linear plugins
# with lk_split2.cu built -DLK_RACECHECK_SYNC_ONLY (every bar.arrive a
# bar.sync) into build/race/plugins, for racecheck of the v4 state pass
# (bench/gpu/race_cstate4.sh).  Needs a built tree (make cuda_linear).
set -e
cd "${1:-/work/main}"
O=build/obj/plugins/cuda/linear; R=build/race; mkdir -p $R/plugins
/usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
  -Werror all-warnings -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -Iabi -Ihost -Iplugins/cuda/common \
  -Iplugins/cuda/linear -DLK_RACECHECK_SYNC_ONLY -c plugins/cuda/linear/lk_split2.cu -o $R/lk_split2.race.o
objs=$(ls $O/lin_dims.o $O/lin_sizing.o $O/lin_check.o $O/lin_probe.o $O/lin_create.o $O/lin_plan.o $O/lin_forward.o \
  $O/lin_state.o $O/lk_*.cu.o | grep -v lk_split2.cu.o)
for k in gdn kda mamba2 short_conv lightning; do
  g++ -shared -Wl,--no-undefined -Wl,-z,defs -Wl,--exclude-libs,ALL -pthread -o $R/plugins/${k}_cuda.so \
    $O/lin_plugin.$k.o $objs $R/lk_split2.race.o build/obj/plugins/cuda/common/cuda_error.o \
    build/obj/plugins/cuda/common/cuda_probe.o build/obj/plugins/cuda/common/cuda_device_ops.o \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread
done
rm -f $R/lk_split2.race.o
strip --strip-debug $R/plugins/*.so
ls -la $R/plugins
