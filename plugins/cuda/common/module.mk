# plugins/cuda/common - what every CUDA plugin shares (probe, device ops, error
# text, the CUDA/HIP portability header gpu_compat.h).  Not a plugin itself:
# a CUDA plugin's module.mk links $(CUDA_COMMON_OBJS) into its .so and builds
# its .cu files with the rule below.  Exposes:
#   HAVE_CUDA          1 when nvcc was found (else every CUDA part is skipped)
#   CUDA_HOME          the toolkit root nvcc lives in
#   NVCC_GENCODE       sm_80 SASS, sm_90a SASS (wgmma/setmaxnreg), compute_90 PTX
#   NVCC_FLAGS         flags for every .cu (add per-dir ones as NVCCFLAGS_<dir>)
#   CUDA_CFLAGS        for C files that include cuda_runtime_api.h
#   CUDA_COMMON_OBJS   objects to link into a CUDA plugin
#   CUDA_LDLIBS        the static cudart (never -lcuda: it loads with no driver)
#   CUDA_LINK          command prefix that links a CUDA plugin .so
# and the rule $(OBJDIR)/<path>.cu.o from <path>.cu.

ifneq ($(NVCC),)
HAVE_CUDA := 1
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90a,code=sm_90a \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS := -std=c++17 -O3 -lineinfo $(NVCC_GENCODE) -Werror all-warnings \
              -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra \
              -Iabi -Ihost -Iplugins/cuda/common
CUDA_CFLAGS := -I$(CUDA_HOME)/include -Iplugins/cuda/common
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -pthread
# --exclude-libs: the static cudart's symbols stay inside the plugin.
CUDA_LINK = $(CXX) -shared -Wl,--no-undefined -Wl,-z,defs -Wl,--exclude-libs,ALL $(LDFLAGS_COMMON)

CUDA_COMMON_SRCS := plugins/cuda/common/cuda_error.c plugins/cuda/common/cuda_probe.c \
                    plugins/cuda/common/cuda_device_ops.c
CUDA_COMMON_OBJS := $(CUDA_COMMON_SRCS:%.c=$(OBJDIR)/%.o)
CFLAGS_plugins_cuda_common_ := $(CUDA_CFLAGS)

$(OBJDIR)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCCFLAGS_$(subst /,_,$(dir $<))) -MMD -MP -MF $@.d -c $< -o $@

cuda_common: $(CUDA_COMMON_OBJS)
else
HAVE_CUDA :=
cuda_common:
	@echo "cuda_common skipped: $(NO_NVCC_WHY)"
endif
.PHONY: cuda_common
