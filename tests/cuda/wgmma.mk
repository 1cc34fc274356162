# tests/cuda/wgmma.mk - the sm_90a wgmma extend path's self-test
# (tests/cuda/test_wgmma_primitives.cu: wgmma, S tile, P.V, producer ring, the
# whole kernel, each against a host reference).
#   make wgmma-selftest   builds $(TESTDIR)/test_wgmma_primitives (sm_90a only)
# It needs an SM 9.0 GPU (bench/gpu/wgmma.sh runs it there) and prints SKIP on
# any other machine, so it is built with everything but not run by `make unit`.

ifeq ($(HAVE_CUDA),1)
WGMMA_SELFTEST := $(TESTDIR)/test_wgmma_primitives
# Hangs become a trap with a message after 5 s (kern_wgmma_sm90.cuh watchdog).
WGMMA_SELFTEST_FLAGS := -std=c++17 -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a -Werror all-warnings \
                        -Xcompiler -Wall,-Wextra -Iabi -Ihost -Iplugins/cuda/common -Iplugins/cuda/mha \
                        -DATTN_WG_DEBUG -DATTN_WG_WATCHDOG_NS=5000000000ull
$(WGMMA_SELFTEST): tests/cuda/test_wgmma_primitives.cu $(wildcard plugins/cuda/mha/*.cuh plugins/cuda/mha/*.h) \
                   plugins/cuda/common/gpu_compat.h
	@mkdir -p $(@D)
	$(NVCC) $(WGMMA_SELFTEST_FLAGS) -o $@ $<
ALL += $(WGMMA_SELFTEST)
wgmma-selftest: $(WGMMA_SELFTEST)
else
SKIPPED += wgmma_selftest
SKIP_WHY_wgmma_selftest := nvcc not found
wgmma-selftest:
	@echo "wgmma-selftest skipped: nvcc not found"
endif
.PHONY: wgmma-selftest
