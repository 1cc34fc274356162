# tests/cpu - cmocka tests of cpu_ref itself (linked against its objects, no
# host needed), and the conformance step that runs the whole matrix.
#
#   make cpu-ref-tests      build and run these tests
#   make conformance-cpu    attnctl check --plugin cpu_ref (the full matrix)

CPU_REF_TEST_NAMES := $(basename $(notdir $(wildcard tests/cpu/test_*.c)))
CPU_REF_TESTS := $(addprefix $(TESTDIR)/,$(CPU_REF_TEST_NAMES))
CPU_REF_TEST_FIXTURE := $(OBJDIR)/tests/cpu/cref_fixture.o

$(TESTDIR)/test_cpu_ref_%: $(OBJDIR)/tests/cpu/test_cpu_ref_%.o $(CPU_REF_TEST_FIXTURE) $(CPU_REF_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -lm

TESTS += $(CPU_REF_TESTS)
# keep the objects (make would delete them as intermediates)
.SECONDARY: $(CPU_REF_TEST_FIXTURE) $(patsubst %,$(OBJDIR)/tests/cpu/%.o,$(CPU_REF_TEST_NAMES))

cpu-ref-tests: $(CPU_REF_TESTS)
	@set -e; for t in $(CPU_REF_TESTS); do echo "== $$t"; $$t; done

# The conformance matrix of the reference itself, without sanitizers (it must
# stay within a few minutes on 2 cores).
conformance-cpu: $(ATTNCTL)
	$(ATTNCTL) check --plugin cpu_ref

# The harness judging plugins it must fail: a layer plugin that breaks the
# reference's results on purpose, one way per run (tests/cpu/harness_victim.c).
HARNESS_VICTIM := $(TESTDIR)/victim/harness_victim.so
$(HARNESS_VICTIM): $(OBJDIR)/tests/cpu/harness_victim.o
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS_COMMON) -o $@ $^

harness-selftest: $(ATTNCTL) $(HARNESS_VICTIM)
	tests/cpu/harness_selftest.sh $(ATTNCTL) $(dir $(HARNESS_VICTIM))

TEST_STEPS += conformance-cpu harness-selftest
.PHONY: cpu-ref-tests conformance-cpu harness-selftest
