# plugins/cuda/mla - the cuda_mla plugin (absorbed MLA decode / verify / extend).
#   make cuda_mla             the plugin .so
#   make cuda_mla_resources   ptxas resource report -> $(BUILD)/cuda_mla_resources.txt
# Needs nvcc (plugins/cuda/common/module.mk finds it); skipped with the reason otherwise.

CUDA_MLA_SO := $(PLUGDIR)/cuda_mla.so
CUDA_MLA_C := mla_plugin.c mla_backend.c mla_forward.c mla_check.c mla_plan.c mla_tmap.c
CUDA_MLA_CU := mla_decode_simple.cu mla_decode_mma.cu mla_decode_wide_sm90.cu mla_combine.cu mla_save.cu mla_launch.cu
CUDA_MLA_OBJS := $(addprefix $(OBJDIR)/plugins/cuda/mla/,$(CUDA_MLA_C:.c=.o) $(CUDA_MLA_CU:.cu=.cu.o))
# The pure-C parts tests/cuda_mla/ links without CUDA.
CUDA_MLA_PURE_OBJS := $(OBJDIR)/plugins/cuda/mla/mla_check.o $(OBJDIR)/plugins/cuda/mla/mla_plan.o

ifeq ($(HAVE_CUDA),1)
CFLAGS_plugins_cuda_mla_ := $(CUDA_CFLAGS) -Iplugins/cuda/mla
NVCCFLAGS_plugins_cuda_mla_ := -Iplugins/cuda/mla

ALL += $(CUDA_MLA_SO)
PLUGINS += $(CUDA_MLA_SO)

$(CUDA_MLA_SO): $(CUDA_MLA_OBJS) $(CUDA_COMMON_OBJS)
	@mkdir -p $(@D)
	$(CUDA_LINK) -o $@ $^ $(CUDA_LDLIBS)

cuda_mla: $(CUDA_MLA_SO)

cuda_mla_resources: $(CUDA_MLA_CU:%=plugins/cuda/mla/%)
	@mkdir -p $(BUILD)
	@for f in $^; do echo "== $$f"; \
	  $(NVCC) $(NVCC_FLAGS) -Iplugins/cuda/mla -Xptxas -v -c $$f -o /dev/null 2>&1 | \
	  grep -E "Compiling entry|registers|spill|C75" | sed -e 's/ptxas info    : //'; done > $(BUILD)/cuda_mla_resources.txt
	@echo "wrote $(BUILD)/cuda_mla_resources.txt"
else
CFLAGS_plugins_cuda_mla_ := -Iplugins/cuda/mla -Iplugins/cuda/common
SKIPPED += cuda_mla
SKIP_WHY_cuda_mla := $(NO_NVCC_WHY)
cuda_mla cuda_mla_resources:
	@echo "cuda_mla skipped: $(SKIP_WHY_cuda_mla)"
endif
.PHONY: cuda_mla cuda_mla_resources
