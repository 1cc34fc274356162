# tests/xpu - the xpu_ocl plugin run for real on an OpenCL CPU device (PoCL).
# attn_ref / attn_case / plugin_harness are shared with tests/npu.
# `make xpu` builds the plugin and this test.

PLATFORM_TEST_OBJS := $(OBJDIR)/tests/xpu/attn_ref.o $(OBJDIR)/tests/xpu/attn_case.o \
                      $(OBJDIR)/tests/xpu/plugin_harness.o
CFLAGS_tests_xpu_ := -Itests/xpu -DXPU_PLUGIN_PATH='"$(abspath $(PLUGDIR))/xpu_ocl.so"'

ifeq ($(HAVE_OPENCL),1)
$(TESTDIR)/test_xpu_ocl: $(OBJDIR)/tests/xpu/test_xpu_ocl.o $(PLATFORM_TEST_OBJS) | $(XPU_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) $^ -lcmocka -lm -ldl -o $@

TESTS += $(TESTDIR)/test_xpu_ocl
xpu: $(TESTDIR)/test_xpu_ocl
endif

# The same test under valgrind, quick subset (PoCL's JIT makes the full one
# take minutes there); PoCL/LLVM's own leaks are suppressed (tests/xpu/pocl.supp).
ifeq ($(HAVE_OPENCL),1)
xpu-valgrind: $(TESTDIR)/test_xpu_ocl
	XPU_TEST_QUICK=1 SGL_ATTN_NO_UNLOAD=1 valgrind --quiet --error-exitcode=9 --leak-check=full \
	  --errors-for-leak-kinds=definite --suppressions=tests/xpu/pocl.supp $(TESTDIR)/test_xpu_ocl
TEST_STEPS += xpu-valgrind
.PHONY: xpu-valgrind
endif

# The conformance harness on PoCL: xpu_ocl against cpu_ref's float64
# reference, for real, on the CPU OpenCL device (docs/platforms.md).
XPU_POCL_ICD := $(wildcard /etc/OpenCL/vendors/pocl.icd)
ifeq ($(HAVE_OPENCL),1)
xpu-check: $(ATTNCTL) $(XPU_SO)
ifneq ($(XPU_POCL_ICD),)
	SGL_ATTN_XPU_ALLOW_CPU=1 OCL_ICD_VENDORS=$(XPU_POCL_ICD) $(ATTNCTL) check --plugin xpu_ocl
else
	@echo "xpu-check skipped: no PoCL ICD at /etc/OpenCL/vendors/pocl.icd (install pocl-opencl-icd)"
endif
TEST_STEPS += xpu-check
.PHONY: xpu-check
endif
