# plugins/cuda/linear - the CUDA linear-attention wrappers, one .so per kind
# (gdn_cuda, kda_cuda, mamba2_cuda, short_conv_cuda, lightning_cuda), all from
# the same sources; only lin_plugin.c is compiled once per kind.
#   make cuda_linear             the five plugins
#   make cuda_linear_resources   ptxas registers / smem / spills -> $(BUILD)/cuda_linear_resources.txt
# Needs nvcc (plugins/sdk/cuda/cuda.mk finds it); skipped with the reason otherwise.

LIN_DIR := plugins/cuda/linear
LIN_KINDS := gdn kda mamba2 short_conv lightning
LIN_C := lin_sizing lin_check lin_probe lin_create lin_instance lin_plan lin_forward lin_state
LIN_CU := batch_plan state_commit token_step decode_fused decode_prep decode_stream chunk_extend chunk_prep_ut chunk_prep_stream \
          chunk_fused_ut chunk_state chunk_segment chunk_output chunk_fused_state chunk_fused_cp
LIN_OBJS := $(addprefix $(OBJDIR)/$(LIN_DIR)/,$(addsuffix .o,$(LIN_C)) $(addsuffix .cu.o,$(LIN_CU)))
# The pure-C parts tests/cuda_linear links without CUDA.
LIN_PURE_OBJS := $(addprefix $(OBJDIR)/$(LIN_DIR)/,lin_sizing.o lin_check.o)
LIN_SOS := $(foreach k,$(LIN_KINDS),$(PLUGDIR)/$(k)_cuda.so)

ifeq ($(HAVE_CUDA),1)
CFLAGS_plugins_cuda_linear_ := $(CUDA_CFLAGS)
# Without -lineinfo: its line tables triple the SASS, and each of the five
# .so files carries all the kernels (they travel to the GPU machine in a
# 64 MiB budget).  `make LIN_LINEINFO=1` puts it back (compute-sanitizer
# source lines); rebuild the .cu objects after changing it.
LIN_NVCC_FLAGS = $(filter-out -lineinfo,$(NVCC_FLAGS)) $(if $(LIN_LINEINFO),-lineinfo)

# More specific than the common %.cu.o rule, so it wins for this directory.
$(OBJDIR)/$(LIN_DIR)/%.cu.o: $(LIN_DIR)/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(LIN_NVCC_FLAGS) -MMD -MP -MF $@.d -c $< -o $@

# lin_plugin.c once per kind: -DLIN_KIND_GDN ...
$(OBJDIR)/$(LIN_DIR)/lin_plugin.%.o: $(LIN_DIR)/lin_plugin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_plugins_cuda_linear_) -DLIN_KIND_$(shell echo $* | tr a-z A-Z) -MMD -MP -c $< -o $@

$(PLUGDIR)/%_cuda.so: $(OBJDIR)/$(LIN_DIR)/lin_plugin.%.o $(LIN_OBJS) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CUDA_LINK) -o $@ $^ $(CUDA_LDLIBS)

# Objects of the pattern rules above are intermediates to make, which deletes them after linking: kept, so
# that a second make rebuilds nothing and bench/gpu/build_race.sh finds them.
.SECONDARY: $(LIN_OBJS) $(foreach k,$(LIN_KINDS),$(OBJDIR)/$(LIN_DIR)/lin_plugin.$(k).o)

ALL += $(LIN_SOS)
PLUGINS += $(LIN_SOS)

cuda_linear: $(LIN_SOS)

cuda_linear_resources: $(LIN_CU:%=$(LIN_DIR)/%.cu)
	$(call cuda_resources,$(LIN_NVCC_FLAGS),cuda_linear)
else
SKIPPED += cuda_linear
SKIP_WHY_cuda_linear := $(NO_NVCC_WHY)
cuda_linear cuda_linear_resources:
	@echo "cuda_linear skipped: $(SKIP_WHY_cuda_linear)"
endif
.PHONY: cuda_linear cuda_linear_resources

# No two files of this folder call each other (make layout-cycles).
LAYOUT_CYCLE_DIRS += plugins/cuda/linear
