# plugins/validate - the validation layer (ROLE_LAYER).  Embedded in libsglattn
# like cpu_ref: host/module.mk links $(VALIDATE_OBJS) and compiles
# host/embedded.c with -DSGL_ATTN_EMBED_VALIDATE.  `make validate-layer`
# builds only these objects.
VALIDATE_SRCS := $(sort $(wildcard plugins/validate/*.c))
VALIDATE_OBJS := $(VALIDATE_SRCS:%.c=$(OBJDIR)/%.o)

validate-layer: $(VALIDATE_OBJS)
.PHONY: validate-layer
