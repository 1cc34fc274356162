# tests/npu - npu_ascend against no CANN and against a fake CANN built here:
# libascendcl.so / libnnopbase.so / libopapi.so in $(TESTDIR)/npu-fake/,
# found by the plugin through SGL_ATTN_ASCEND_LIB_DIR (fake_acl.h says what
# the fake does).  Uses the shared reference in tests/xpu/.

NPU_FAKE_DIR := $(TESTDIR)/npu-fake
NPU_FAKE_LIBS := $(NPU_FAKE_DIR)/libascendcl.so $(NPU_FAKE_DIR)/libnnopbase.so $(NPU_FAKE_DIR)/libopapi.so
NPU_TEST_SHARED := $(OBJDIR)/tests/xpu/attn_ref.o $(OBJDIR)/tests/xpu/attn_case.o $(OBJDIR)/tests/xpu/plugin_harness.o
CFLAGS_tests_npu_ := -Itests/xpu -Itests/npu -DNPU_PLUGIN_PATH='"$(abspath $(PLUGDIR))/npu_ascend.so"' \
                     -DNPU_FAKE_DIR='"$(abspath $(NPU_FAKE_DIR))"'

$(NPU_FAKE_DIR)/libascendcl.so: $(OBJDIR)/tests/npu/fake_ascendcl.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libascendcl.so $(LDFLAGS_COMMON) -o $@ $^

$(NPU_FAKE_DIR)/libnnopbase.so: $(OBJDIR)/tests/npu/fake_nnopbase.o $(NPU_FAKE_DIR)/libascendcl.so
	$(CC) -shared -Wl,-soname,libnnopbase.so -Wl,-rpath,'$$ORIGIN' $(LDFLAGS_COMMON) -o $@ $^

$(NPU_FAKE_DIR)/libopapi.so: $(OBJDIR)/tests/npu/fake_opapi.o $(NPU_FAKE_DIR)/libascendcl.so
	$(CC) -shared -Wl,-soname,libopapi.so -Wl,-rpath,'$$ORIGIN' $(LDFLAGS_COMMON) -o $@ $^ -lm

$(TESTDIR)/test_npu_ascend: $(OBJDIR)/tests/npu/test_npu_ascend.o $(NPU_TEST_SHARED) | $(NPU_SO) $(NPU_FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) $^ -lcmocka -lm -ldl -o $@

TESTS += $(TESTDIR)/test_npu_ascend
npu: $(TESTDIR)/test_npu_ascend $(NPU_FAKE_LIBS)

