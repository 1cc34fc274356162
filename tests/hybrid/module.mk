# tests/hybrid - cmocka tests of the hybrid wrappers (numeric forms, each kind
# against the float64 reference, state pool, routing), the test-only custom
# wrapper plugin and the third-party selection test (needs the host).

HYBT_DIR := tests/hybrid
CFLAGS_tests_hybrid_ := -Iplugins/hybrid -Iattnctl/harness
HYBT_UTIL := $(OBJDIR)/$(HYBT_DIR)/hyb_test_util.o $(OBJDIR)/$(HYBT_DIR)/hyb_scen.o $(OBJDIR)/attnctl/harness/linear_ref.o
HYBT_NAMES := test_hybrid_forms test_hybrid_kinds test_hybrid_state test_hybrid_routing test_hybrid_sparse
HYBT_BINS := $(addprefix $(TESTDIR)/,$(HYBT_NAMES))

$(TESTDIR)/test_hybrid_%: $(OBJDIR)/$(HYBT_DIR)/test_hybrid_%.o $(HYBT_UTIL) $(HYB_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lm

TESTS += $(HYBT_BINS)
hybrid: $(HYBT_BINS)
hybrid-check: $(HYBT_BINS)
	@set -e; for t in $(HYBT_BINS); do echo "== $$t"; $$t; done
