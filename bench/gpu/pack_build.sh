#!/usr/bin/env bash
# pack build/ for the GPU machine into .carry/build-gpu.tgz
set -e
cd "${1:-/work/main}"
rm -rf build-gpu && cp -a build build-gpu
rm -rf build-gpu/obj
keep="bench_lin mla_gpu_bench test_lin_e2e test_lin_gpu test_lin_load test_mla_gpu test_cuda_graph python"
for f in build-gpu/tests/*; do b=$(basename "$f"); case " $keep " in *" $b "*) ;; *) rm -rf "$f";; esac; done
rm -f build-gpu/lib/sglattn/plugins/hip_attn.so
for l in libcjson.so.1 libcmocka.so.0; do p=$(ldconfig -p | awk -v l=$l '$1==l{print $NF; exit}'); cp -L "$p" build-gpu/lib/; done
find build-gpu -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-debug {} \; 2>/dev/null || true
mkdir -p .carry && tar czf .carry/build-gpu.tgz build-gpu && rm -rf build-gpu
ls -la .carry/build-gpu.tgz
