#!/usr/bin/env bash
# Install the Debian packages sglattn builds and tests with.  Run as root, or
# as a user with sudo.  Idempotent.
set -euo pipefail
pkgs=(
  build-essential pkg-config
  libltdl-dev libcjson-dev libcmocka-dev libdlpack-dev      # host, tests, tensors
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo  # XPU plugin on OpenCL (PoCL runs it on the CPU)
  libze-dev                                                 # Level Zero probe
  hipcc libamdhip64-dev                                     # HIP plugin (compiled for gfx90a/gfx940/gfx1030)
  valgrind clang libclang-rt-14-dev lld                     # sanitizers, valgrind, libFuzzer, a foreign-ELF test plugin
  dpkg-dev                                                  # apt-get source (cJSON for the fuzzers)
  python3 python3-pytest python3-numpy python3-torch python3-mypy  # the layout table's generator; the Python package's tests
  python3-jsonschema help2man                               # attnctl's --json schema test; its man page
)
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#pkgs[@]} packages present"
