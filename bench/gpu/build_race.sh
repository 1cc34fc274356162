#!/usr/bin/env bash
# bench/gpu/build_race.sh - here, before packing: the five CUDA linear plugins
# with chunk_state.cu built -DLK_RACECHECK_SYNC_ONLY (every bar.arrive a
# bar.sync) into build/race/plugins, for racecheck of the chunked extend's
# state pass (bench/gpu/race_chunk_state.sh).  Needs a built tree (make
# cuda_linear); the tree is the first argument (default: the current directory).
set -e
cd "${1:-.}"
O=build/obj/plugins/cuda/linear; R=build/race; mkdir -p $R/plugins
/usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
  -Werror all-warnings -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -Iabi -Ihost -Iplugins/cuda/common \
  -Iplugins/cuda/linear -DLK_RACECHECK_SYNC_ONLY -c plugins/cuda/linear/chunk_state.cu -o $R/chunk_state.race.o
# plugins/cuda/linear/module.mk's LIN_C and LIN_CU, chunk_state left out
objs=$(for f in lin_dims lin_sizing lin_check lin_probe lin_create lin_plan lin_forward lin_state; do echo $O/$f.o; done
       for f in batch_plan state_commit token_step decode_fused decode_prep decode_stream chunk_extend chunk_prep_ut \
                chunk_fused_ut chunk_output chunk_fused_state; do echo $O/$f.cu.o; done)
for k in gdn kda mamba2 short_conv lightning; do
  g++ -shared -Wl,--no-undefined -Wl,-z,defs -Wl,--exclude-libs,ALL -pthread -o $R/plugins/${k}_cuda.so \
    $O/lin_plugin.$k.o $objs $R/chunk_state.race.o build/obj/plugins/cuda/common/cuda_error.o \
    build/obj/plugins/cuda/common/cuda_probe.o build/obj/plugins/cuda/common/cuda_device_ops.o \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread
done
rm -f $R/chunk_state.race.o
strip --strip-debug $R/plugins/*.so
ls -la $R/plugins
