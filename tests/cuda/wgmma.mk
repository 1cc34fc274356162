# tests/cuda/wgmma.mk - the sm_90a wgmma extend path's tests.
#   make wgmma-selftest   builds $(TESTDIR)/test_wgmma_primitives (sm_90a only):
#                         wgmma, S tile, P.V, producer ring, the whole kernel,
#                         each against a host reference.  It needs an SM 9.0 GPU
#                         (bench/gpu/mha_defaults.sh runs it there) and prints SKIP
#                         elsewhere, so it is built with everything, not run by
#                         `make unit`.
#   make wgmma-model      replays the kernel's barrier protocol on the host under
#                         random interleavings (deadlocks, stage/Q hazards); no
#                         GPU, a step of `make test`.

wgmma-model:
	python3 tests/cuda/wgmma_protocol_model.py 1000
TEST_STEPS += wgmma-model
.PHONY: wgmma-model

ifeq ($(HAVE_CUDA),1)
WGMMA_SELFTEST := $(TESTDIR)/test_wgmma_primitives
# Hangs become a trap with a message after 5 s (wgmma_sm90.cuh watchdog).
WGMMA_SELFTEST_FLAGS := -std=c++17 -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a -Werror all-warnings \
                        -Xcompiler -Wall,-Wextra $(INC_PLUGIN) \
                        -DATTN_WG_DEBUG -DATTN_WG_WATCHDOG_NS=5000000000ull
$(WGMMA_SELFTEST): tests/cuda/test_wgmma_primitives.cu $(wildcard plugins/cuda/mha/*.cuh plugins/cuda/mha/*.h plugins/sdk/attn_kernels/*) \
                   plugins/sdk/gpu_compat.h
	@mkdir -p $(@D)
	$(NVCC) $(WGMMA_SELFTEST_FLAGS) -o $@ $<
ALL += $(WGMMA_SELFTEST)
wgmma-selftest: $(WGMMA_SELFTEST)
else
SKIPPED += wgmma_selftest
SKIP_WHY_wgmma_selftest := $(NO_NVCC_WHY)
wgmma-selftest:
	@echo "wgmma-selftest skipped: $(NO_NVCC_WHY)"
endif
.PHONY: wgmma-selftest
