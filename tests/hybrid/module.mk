# tests/hybrid - cmocka tests of the hybrid wrappers (numeric forms, each kind
# against the float64 reference, state pool, routing), the test-only custom
# wrapper plugin and the third-party selection test (needs the host).

HYBT_DIR := tests/hybrid
CFLAGS_tests_hybrid_ := -Iplugins/hybrid -Iattnctl/harness
HYBT_UTIL := $(OBJDIR)/$(HYBT_DIR)/hyb_test_util.o $(OBJDIR)/$(HYBT_DIR)/hyb_scen.o $(OBJDIR)/attnctl/harness/linear_ref.o
HYBT_NAMES := test_hybrid_forms test_hybrid_kinds test_hybrid_state test_hybrid_routing test_hybrid_sparse \
              test_hybrid_caller_state
HYBT_BINS := $(addprefix $(TESTDIR)/,$(HYBT_NAMES))

$(TESTDIR)/test_hybrid_%: $(OBJDIR)/$(HYBT_DIR)/test_hybrid_%.o $(HYBT_UTIL) $(HYB_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lm

# The changed-batch test also stacks the validation layer over each wrapper.
$(OBJDIR)/$(HYBT_DIR)/test_hybrid_changed.o: CFLAGS_tests_hybrid_ += -Itests/gauntlet
$(TESTDIR)/test_hybrid_changed: $(OBJDIR)/$(HYBT_DIR)/test_hybrid_changed.o $(HYBT_UTIL) $(GAUNTLET_FIXTURE_OBJS) \
    $(VALIDATE_OBJS) $(HYB_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lm
HYBT_BINS += $(TESTDIR)/test_hybrid_changed

TESTS += $(HYBT_BINS)
hybrid: $(HYBT_BINS)
hybrid-check: $(HYBT_BINS)
	@set -e; for t in $(HYBT_BINS); do echo "== $$t"; $$t; done

# The third-party wrapper: a plugin of its own, outside the plugin directory
# (the test copies it into a temporary SGL_ATTN_PLUGIN_PATH directory).
HYBT_CUSTOM_SO := $(TESTDIR)/plugins/toy_retention.so
$(HYBT_CUSTOM_SO): $(OBJDIR)/$(HYBT_DIR)/custom_wrapper.o
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ $(LDFLAGS_COMMON) -Wl,-z,defs

$(OBJDIR)/$(HYBT_DIR)/test_hybrid_custom.o: CFLAGS_tests_hybrid_ += \
    -DHYBT_CUSTOM_SO='"$(abspath $(HYBT_CUSTOM_SO))"' -DHYBT_SRCDIR='"$(CURDIR)"'
$(TESTDIR)/test_hybrid_custom: $(OBJDIR)/$(HYBT_DIR)/test_hybrid_custom.o $(HYBT_UTIL) $(HYB_LIB) \
                               $(LIBSGLATTN) | $(HYBT_CUSTOM_SO) $(HYB_PLUGINS)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) $(LIBSGLATTN) -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON) -lcmocka -lm

HYBT_BINS += $(TESTDIR)/test_hybrid_custom
TESTS += $(TESTDIR)/test_hybrid_custom
hybrid: $(TESTDIR)/test_hybrid_custom $(HYBT_CUSTOM_SO)

# The linear case families and the registry with the harness core (an
# archive, so only the core objects they need are linked; no attnctl).
HYBT_FAMILY_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(wildcard attnctl/harness/linear_*.c)) \
                    $(OBJDIR)/attnctl/harness/registry.o
HYBT_CORE_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(filter-out attnctl/harness/linear_% attnctl/harness/registry.c,\
                    $(wildcard attnctl/harness/*.c)))
HYBT_CORE_A := $(OBJDIR)/$(HYBT_DIR)/libharness_core.a
$(HYBT_CORE_A): $(HYBT_CORE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
$(OBJDIR)/$(HYBT_DIR)/test_hybrid_families.o: CFLAGS_tests_hybrid_ += -Iattnctl
$(TESTDIR)/test_hybrid_families: $(OBJDIR)/$(HYBT_DIR)/test_hybrid_families.o $(HYBT_FAMILY_OBJS) $(HYBT_CORE_A) \
                                 $(LIBSGLATTN) | $(HYB_PLUGINS)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) $(LIBSGLATTN) -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON) -lcmocka -lm

HYBT_BINS += $(TESTDIR)/test_hybrid_families
TESTS += $(TESTDIR)/test_hybrid_families
hybrid: $(TESTDIR)/test_hybrid_families
