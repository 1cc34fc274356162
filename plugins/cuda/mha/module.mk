# plugins/cuda/mha - the cuda_attn plugin (paged MHA/GQA/MQA/cross attention).
#   make cuda_attn            the plugin .so
#   make cuda_attn_resources  ptxas resource report -> $(BUILD)/cuda_attn_resources.txt
# Needs nvcc (plugins/cuda/common/module.mk finds it); skipped with the reason otherwise.

CUDA_ATTN_SO := $(PLUGDIR)/cuda_attn.so
CUDA_ATTN_C := cuda_attn_plugin.c cuda_attn_backend.c cuda_attn_forward.c cuda_attn_check.c \
               cuda_attn_choice.c attn_dispatch.c attn_tmap.c
# One kernel role per .cu (docs/cuda.md); portable.cu launches the kernels
# shared with hip_attn (plugins/sdk/attn_kernels/, sized by its sizing.c).
CUDA_ATTN_CU := portable.cu decode_reg.cu decode_mma.cu extend_mma.cu extend_wgmma_sm90.cu
CUDA_ATTN_OBJS := $(addprefix $(OBJDIR)/plugins/cuda/mha/,$(CUDA_ATTN_C:.c=.o) $(CUDA_ATTN_CU:.cu=.cu.o)) \
                  $(OBJDIR)/plugins/sdk/attn_kernels/sizing.o
# The pure-C parts tests/cuda/ links without CUDA.
CUDA_ATTN_PURE_OBJS := $(OBJDIR)/plugins/cuda/mha/cuda_attn_check.o $(OBJDIR)/plugins/cuda/mha/cuda_attn_choice.o \
                       $(OBJDIR)/plugins/sdk/attn_kernels/sizing.o

ifeq ($(HAVE_CUDA),1)
CFLAGS_plugins_cuda_mha_ := $(CUDA_CFLAGS) -Iplugins/cuda/mha -Iplugins/sdk
NVCCFLAGS_plugins_cuda_mha_ := -Iplugins/cuda/mha -Iplugins/sdk

ALL += $(CUDA_ATTN_SO)
PLUGINS += $(CUDA_ATTN_SO)

$(CUDA_ATTN_SO): $(CUDA_ATTN_OBJS) $(CUDA_COMMON_OBJS)
	@mkdir -p $(@D)
	$(CUDA_LINK) -o $@ $^ $(CUDA_LDLIBS)

cuda_attn: $(CUDA_ATTN_SO)

cuda_attn_resources: $(CUDA_ATTN_CU:%=plugins/cuda/mha/%)
	@mkdir -p $(BUILD)
	@for f in $^; do echo "== $$f"; \
	  $(NVCC) $(NVCC_FLAGS) -Iplugins/cuda/mha -Iplugins/sdk -Xptxas -v -c $$f -o /dev/null 2>&1 | \
	  grep -E "Compiling entry|registers|spill" | sed -e 's/ptxas info    : //'; done > $(BUILD)/cuda_attn_resources.txt
	@echo "wrote $(BUILD)/cuda_attn_resources.txt"
else
CFLAGS_plugins_cuda_mha_ := -Iplugins/cuda/mha -Iplugins/sdk
SKIPPED += cuda_attn
SKIP_WHY_cuda_attn := $(NO_NVCC_WHY)
cuda_attn cuda_attn_resources:
	@echo "cuda_attn skipped: $(SKIP_WHY_cuda_attn)"
endif
.PHONY: cuda_attn cuda_attn_resources
