# plugins/cuda/mha - the cuda_attn plugin (paged MHA/GQA/MQA/cross attention).
#   make cuda_attn            the plugin .so
#   make cuda_attn_resources  ptxas resource report -> $(BUILD)/cuda_attn_resources.txt
# Needs nvcc (plugins/sdk/cuda/cuda.mk finds it); skipped with the reason otherwise.

CUDA_ATTN_SO := $(PLUGDIR)/cuda_attn.so
CUDA_ATTN_C := cuda_attn_plugin.c cuda_attn_backend.c cuda_attn_forward.c cuda_attn_ragged.c cuda_attn_check.c \
               cuda_attn_choice.c attn_dispatch.c attn_tmap.c
# One kernel role per .cu (docs/cuda.md); portable.cu launches the kernels
# shared with hip_attn (plugins/sdk/attn_kernels/, sized by its sizing.c).
CUDA_ATTN_CU := portable.cu decode_reg.cu decode_mma.cu extend_mma.cu extend_wgmma_sm90.cu save_kv_fp8.cu \
               ragged_plan.cu tree_mask_pack.cu encoder_loc_check.cu extend_fp8_split.cu save_kv_pdl.cu
CUDA_ATTN_OBJS := $(addprefix $(OBJDIR)/plugins/cuda/mha/,$(CUDA_ATTN_C:.c=.o) $(CUDA_ATTN_CU:.cu=.cu.o)) \
                  $(OBJDIR)/plugins/sdk/attn_kernels/sizing.o
# The pure-C parts tests/cuda/ links without CUDA.
CUDA_ATTN_PURE_OBJS := $(OBJDIR)/plugins/cuda/mha/cuda_attn_check.o $(OBJDIR)/plugins/cuda/mha/cuda_attn_choice.o \
                       $(OBJDIR)/plugins/sdk/attn_kernels/sizing.o

ifeq ($(HAVE_CUDA),1)
CFLAGS_plugins_cuda_mha_ := $(CUDA_CFLAGS)

ALL += $(CUDA_ATTN_SO)
PLUGINS += $(CUDA_ATTN_SO)

$(CUDA_ATTN_SO): $(CUDA_ATTN_OBJS) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CUDA_LINK) -o $@ $^ $(CUDA_LDLIBS)

cuda_attn: $(CUDA_ATTN_SO)

cuda_attn_resources: $(CUDA_ATTN_CU:%=plugins/cuda/mha/%)
	$(call cuda_resources,$(NVCC_FLAGS),cuda_attn)
else
SKIPPED += cuda_attn
SKIP_WHY_cuda_attn := $(NO_NVCC_WHY)
cuda_attn cuda_attn_resources:
	@echo "cuda_attn skipped: $(SKIP_WHY_cuda_attn)"
endif
.PHONY: cuda_attn cuda_attn_resources

# No two files of this folder call each other (make layout-cycles).
LAYOUT_CYCLE_DIRS += plugins/cuda/mha
