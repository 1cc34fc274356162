# plugins/xpu - the xpu_ocl plugin: paged attention in OpenCL C (Intel GPUs
# through Intel's compute runtime; any OpenCL 1.2+ device, PoCL on the CPU in
# CI).  `make xpu` builds the plugin and its tests alone.
#
# The kernels (xpu_attn.cl) are embedded as a C string generated at build
# time; the plugin links libOpenCL (the ICD loader) and dlopens Level Zero.

XPU_SO := $(PLUGDIR)/xpu_ocl.so
XPU_SRCS := $(filter-out %_cl.c,$(sort $(wildcard plugins/xpu/*.c)))
XPU_OBJS := $(XPU_SRCS:%.c=$(OBJDIR)/%.o) $(OBJDIR)/plugins/xpu/gen/xpu_attn_cl.o $(SDK_LIB)

ifeq ($(HAVE_OPENCL),1)
ALL += $(XPU_SO)
PLUGINS += $(XPU_SO)
CFLAGS_plugins_xpu_ := $(if $(HAVE_ZE),-DSGL_XPU_HAVE_ZE)

# The .cl file as one C string: escape backslashes and quotes, one literal per line.
$(OBJDIR)/plugins/xpu/gen/xpu_attn_cl.c: plugins/xpu/xpu_attn.cl plugins/xpu/module.mk
	@mkdir -p $(@D)
	{ echo '/* generated from plugins/xpu/xpu_attn.cl - do not edit */'; \
	  echo 'const char xpu_attn_cl_source[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

$(OBJDIR)/plugins/xpu/gen/xpu_attn_cl.o: $(OBJDIR)/plugins/xpu/gen/xpu_attn_cl.c
	$(CC) $(CFLAGS_COMMON) -c $< -o $@

$(XPU_SO): $(XPU_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -Wl,-z,defs $(LDFLAGS_COMMON) -o $@ $^ -lOpenCL -ldl

xpu: $(XPU_SO)
else
SKIPPED += xpu_ocl
SKIP_WHY_xpu_ocl := no OpenCL headers (CL/cl.h): install ocl-icd-opencl-dev opencl-headers
xpu:
	@echo "xpu_ocl skipped: $(SKIP_WHY_xpu_ocl)"
endif
.PHONY: xpu
