# plugins/npu - the npu_ascend plugin: Ascend NPU attention through CANN's
# aclnnFusedInferAttentionScoreV2.  CANN is not packaged for Debian, so the
# plugin declares the calls itself (acl_min.h) and dlopens libascendcl.so,
# libnnopbase.so and libopapi.so at run time: it always builds.
# `make npu` builds the plugin, the fake CANN and the test alone.

NPU_SO := $(PLUGDIR)/npu_ascend.so
NPU_SRCS := $(sort $(wildcard plugins/npu/*.c))
NPU_OBJS := $(NPU_SRCS:%.c=$(OBJDIR)/%.o) $(SDK_LIB)

ALL += $(NPU_SO)
PLUGINS += $(NPU_SO)

$(NPU_SO): $(NPU_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -Wl,-z,defs $(LDFLAGS_COMMON) -o $@ $^ -ldl

npu: $(NPU_SO)
.PHONY: npu
