# plugins/sdk/cuda - the CUDA toolchain and the SDK's CUDA runtime glue
# (sdk_cuda.h: error text, probe, device query, device ops).  The top Makefile
# reads this fragment before every module.mk, because theirs test HAVE_CUDA as
# they are read.  A CUDA plugin compiles with the include paths every plugin
# has (-Iabi -Iplugins/sdk, for C and for nvcc) and links
# $(SDK_CUDA_OBJS) $(SDK_LIB) last among its objects.  Exposes:
#   HAVE_CUDA          1 when nvcc was found (else every CUDA part is skipped)
#   CUDA_HOME          the toolkit root nvcc lives in
#   NVCC_GENCODE       sm_80 SASS, sm_90a SASS (wgmma/setmaxnreg), compute_90 PTX
#   NVCC_FLAGS         flags for every .cu
#   CUDA_CFLAGS        for C files that include cuda_runtime_api.h
#   SDK_CUDA_OBJS      the glue's objects, to link into a CUDA plugin
#   CUDA_LDLIBS        the static cudart (never -lcuda: it loads with no driver)
#   CUDA_LINK          command prefix that links a CUDA plugin .so
#   cuda_resources     $(call cuda_resources,FLAGS,NAME[,GREP]): the recipe of a
#                      `make NAME_resources` target, ptxas's registers, spills
#                      and smem of each kernel of its .cu prerequisites (and
#                      lines matching GREP) -> $(BUILD)/NAME_resources.txt
# and the rule $(OBJDIR)/<path>.cu.o from <path>.cu.
#
#   make sdk_cuda      the glue's objects alone

SDK_CUDA_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(sort $(wildcard plugins/sdk/cuda/*.c)))

ifneq ($(NVCC),)
HAVE_CUDA := 1
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90a,code=sm_90a \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS := -std=c++17 -O3 -lineinfo $(NVCC_GENCODE) -Werror all-warnings \
              -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra $(INC_PLUGIN)
CUDA_CFLAGS := -I$(CUDA_HOME)/include
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -pthread
# --exclude-libs: the static cudart's symbols stay inside the plugin.
CUDA_LINK = $(CXX) -shared -Wl,--no-undefined -Wl,-z,defs -Wl,--exclude-libs,ALL $(LDFLAGS_COMMON)
CFLAGS_plugins_sdk_cuda_ := $(CUDA_CFLAGS)

$(OBJDIR)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -MF $@.d -c $< -o $@

define cuda_resources
	@mkdir -p $(BUILD)
	@for f in $^; do echo "== $$f"; \
	  $(NVCC) $(1) -Xptxas -v -c $$f -o /dev/null 2>&1 | \
	  grep -E "Compiling entry|registers|spill$(if $(3),|$(3))" | sed -e 's/ptxas info    : //'; \
	done > $(BUILD)/$(2)_resources.txt
	@echo "wrote $(BUILD)/$(2)_resources.txt"
endef

sdk_cuda: $(SDK_CUDA_OBJS)
else
HAVE_CUDA :=
sdk_cuda:
	@echo "sdk_cuda skipped: $(NO_NVCC_WHY)"
endif
.PHONY: sdk_cuda
