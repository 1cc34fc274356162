# plugins/cuda/mla - the cuda_mla plugin (absorbed MLA decode / verify / extend).
#   make cuda_mla             the plugin .so
#   make cuda_mla_resources   ptxas resource report -> $(BUILD)/cuda_mla_resources.txt
# Needs nvcc (plugins/sdk/cuda/cuda.mk finds it); skipped with the reason otherwise.

CUDA_MLA_SO := $(PLUGDIR)/cuda_mla.so
CUDA_MLA_C := mla_plugin.c mla_backend.c mla_forward.c mla_instance.c mla_check.c mla_plan.c mla_tmap.c \
             mla_indexer.c mla_indexer_check.c
CUDA_MLA_CU := mla_decode_simple.cu mla_decode_mma.cu mla_decode_wide_sm90.cu mla_combine.cu mla_save.cu mla_item_check.cu \
               mla_launch.cu mla_sparse.cu mla_indexer.cu
CUDA_MLA_OBJS := $(addprefix $(OBJDIR)/plugins/cuda/mla/,$(CUDA_MLA_C:.c=.o) $(CUDA_MLA_CU:.cu=.cu.o))
# The pure-C parts tests/cuda_mla/ links without CUDA.
CUDA_MLA_PURE_OBJS := $(OBJDIR)/plugins/cuda/mla/mla_check.o $(OBJDIR)/plugins/cuda/mla/mla_plan.o \
                      $(OBJDIR)/plugins/cuda/mla/mla_indexer_check.o

ifeq ($(HAVE_CUDA),1)
CFLAGS_plugins_cuda_mla_ := $(CUDA_CFLAGS)

ALL += $(CUDA_MLA_SO)
PLUGINS += $(CUDA_MLA_SO)

$(CUDA_MLA_SO): $(CUDA_MLA_OBJS) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CUDA_LINK) -o $@ $^ $(CUDA_LDLIBS)

cuda_mla: $(CUDA_MLA_SO)

cuda_mla_resources: $(CUDA_MLA_CU:%=plugins/cuda/mla/%)
	$(call cuda_resources,$(NVCC_FLAGS),cuda_mla,C75)
else
SKIPPED += cuda_mla
SKIP_WHY_cuda_mla := $(NO_NVCC_WHY)
cuda_mla cuda_mla_resources:
	@echo "cuda_mla skipped: $(SKIP_WHY_cuda_mla)"
endif
.PHONY: cuda_mla cuda_mla_resources

# No two files of this folder call each other (make layout-cycles).
LAYOUT_CYCLE_DIRS += plugins/cuda/mla
