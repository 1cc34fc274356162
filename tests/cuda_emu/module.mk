# tests/cuda_emu - cuda_attn's SM 8.x kernels and launchers, built by g++ for
# the CPU emulator of CUDA (tests/emu/), in a plugin .so the harness checks
# against cpu_ref's float64 reference, here, with no GPU:
#   $(CUDA_EMU_SO)      cuda_attn with its kernels emulated (the emulated device reports SM 8.0, so the
#                       sm_90a wgmma/TMA kernels are absent: wgmma_absent.cpp)
#   make cuda-attn-emu  a step of `make test`: attnctl check on it, over the cases of CUDA_EMU_FILTER
#   make cuda-attn-emu-full  every case of the harness's matrix on it (slow: not a step)
# Each .cu is rewritten by tests/emu/emu_cu.py (its <<<>>> launches and extern
# __shared__ arrays) and compiled as is; the inline PTX has its emulated twin
# under #ifdef LK_EMU in the headers (mma_sm80.cuh, gpu_compat.h) and decode_reg.cu.

ifeq ($(HAVE_CUDA),1)
include tests/emu/emu.mk
CUDA_EMU_OBJ := $(OBJDIR)/tests/cuda_emu
CUDA_EMU_PLUGDIR := $(BUILD)/emu-plugins
CUDA_EMU_SO := $(CUDA_EMU_PLUGDIR)/cuda_attn.so
CUDA_EMU_CU := $(filter-out extend_wgmma_sm90.cu,$(CUDA_ATTN_CU))
CUDA_EMU_KERNELS := $(addprefix $(CUDA_EMU_OBJ)/,$(CUDA_EMU_CU:.cu=.emu.o))
CUDA_EMU_DEPS := $(wildcard plugins/cuda/mha/*.cuh plugins/cuda/mha/*.h plugins/sdk/attn_kernels/*.cuh \
                            plugins/sdk/attn_kernels/*.h) plugins/sdk/gpu_compat.h plugins/sdk/gpu_fault.h \
                 $(EMU_DIR)/emu_prelude.h

$(CUDA_EMU_OBJ)/%.emu.cpp: plugins/cuda/mha/%.cu $(EMU_DIR)/emu_cu.py
	@mkdir -p $(@D)
	python3 $(EMU_DIR)/emu_cu.py $< $@
$(CUDA_EMU_OBJ)/%.emu.o: $(CUDA_EMU_OBJ)/%.emu.cpp $(CUDA_EMU_DEPS)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mha -c $< -o $@
$(CUDA_EMU_OBJ)/wgmma_absent.o: tests/cuda_emu/wgmma_absent.cpp plugins/cuda/mha/cuda_launch.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mha -c $< -o $@
.SECONDARY: $(CUDA_EMU_KERNELS:.o=.cpp)

# The plugin's C objects are cuda_attn.so's own (they call the runtime API,
# which emu_cudart provides here).
$(CUDA_EMU_SO): $(filter-out %.cu.o,$(CUDA_ATTN_OBJS)) $(CUDA_EMU_KERNELS) $(CUDA_EMU_OBJ)/wgmma_absent.o \
                $(EMU_SIMT_OBJ) $(EMU_CUDART_SM80_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_EMU_SO)
cuda_attn_emu: $(CUDA_EMU_SO)

# The step's cases: small shapes of every family cuda_attn serves.
CUDA_EMU_FILTER ?= .
CUDA_EMU_CHECK = $(ATTNCTL) check --no-conf --plugin-path $(CUDA_EMU_PLUGDIR) --plugin cuda_attn
cuda-attn-emu: $(ATTNCTL) $(CUDA_EMU_SO)
	$(CUDA_EMU_CHECK) --quick --filter '$(CUDA_EMU_FILTER)'
cuda-attn-emu-full: $(ATTNCTL) $(CUDA_EMU_SO)
	$(CUDA_EMU_CHECK)
TEST_STEPS += cuda-attn-emu
else
SKIPPED += cuda_attn_emu
SKIP_WHY_cuda_attn_emu := $(NO_NVCC_WHY) (the emulated cuda_attn reuses the plugin's build)
cuda_attn_emu cuda-attn-emu cuda-attn-emu-full:
	@echo "cuda_attn_emu skipped: $(SKIP_WHY_cuda_attn_emu)"
endif
.PHONY: cuda_attn_emu cuda-attn-emu cuda-attn-emu-full
