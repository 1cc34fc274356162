# plugins/hip - the hip_attn plugin: AMD GPUs through the HIP runtime, with the
# kernels and the pure-C sizing shared with cuda_attn (plugins/sdk/attn_kernels/,
# written over plugins/sdk/gpu_compat.h).
# `make hip` builds the plugin and its test alone; without hipcc both are
# skipped with the reason.
#
# hipcc always gets the explicit --offload-arch list: without one ROCm 5.2's
# hipcc silently targets gfx803 (which these kernels were never meant for).
# gfx942 / gfx1100 need a newer ROCm than Debian's 5.2.

HIP_ARCHS := gfx90a gfx940 gfx1030
HIP_SO := $(PLUGDIR)/hip_attn.so
HIP_C := hip_plugin.c hip_backend.c hip_check.c hip_runtime.c
HIP_OBJS := $(addprefix $(OBJDIR)/plugins/hip/,$(HIP_C:.c=.o)) $(OBJDIR)/plugins/hip/hip_launch.hip.o \
            $(OBJDIR)/plugins/sdk/attn_kernels/sizing.o $(SDK_LIB)
# hipcc sees what every plugin sees: abi/ and the SDK (the shared kernels,
# gpu_compat.h).
HIP_INC := $(INC_PLUGIN)

ifneq ($(HIPCC),)
HIPCC_FLAGS := -std=c++17 -O3 $(addprefix --offload-arch=,$(HIP_ARCHS)) -fPIC -fvisibility=hidden \
               -Wall -Wextra -Werror $(HIP_INC)
CFLAGS_plugins_hip_ := -D__HIP_PLATFORM_AMD__

ALL += $(HIP_SO)
PLUGINS += $(HIP_SO)

$(OBJDIR)/plugins/hip/%.hip.o: plugins/hip/%.hip
	@mkdir -p $(@D)
	$(HIPCC) $(HIPCC_FLAGS) -MMD -MP -MF $@.d -c $< -o $@

$(HIP_SO): $(HIP_OBJS)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined -Wl,-z,defs $(LDFLAGS_COMMON) -o $@ $^ -lamdhip64

hip: $(HIP_SO)
else
SKIPPED += hip_attn
SKIP_WHY_hip_attn := hipcc not found (Debian: apt install hipcc libamdhip64-dev)
hip:
	@echo "hip_attn skipped: $(SKIP_WHY_hip_attn)"
endif
.PHONY: hip
