# tests/hip - hip_attn without an AMD GPU: probe / device_ops / create answer
# with HIP's error, model and tensor checks, the bundled offload archs.
# Built with `make hip` when hipcc exists.

ifneq ($(HIPCC),)
CFLAGS_tests_hip_ := -Itests/xpu -Iplugins/hip \
                     -DHIP_PLUGIN_PATH='"$(abspath $(PLUGDIR))/hip_attn.so"'

$(TESTDIR)/test_hip_attn: $(OBJDIR)/tests/hip/test_hip_attn.o $(OBJDIR)/plugins/hip/hip_check.o \
                          $(OBJDIR)/tests/xpu/plugin_harness.o $(SDK_LIB) | $(HIP_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) $^ -lcmocka -ldl -o $@

TESTS += $(TESTDIR)/test_hip_attn
hip: $(TESTDIR)/test_hip_attn
endif
