# tests/policy - the host's policy half: conf, model readers, selection.
# Selection tests use fake candidates only (no plugin is loaded); they link
# the policy objects directly, with core's log/paths/names.
#
#   make policy         build the policy objects and these tests
#   make test-policy    build and run these tests alone

POLICY_HOST_OBJS := $(addprefix $(OBJDIR)/host/,json_util.o conf.o conf_rows_policy.o names_policy.o names.o \
    log.o paths.o model.o model_finish.o model_json.o model_hf.o hf_fields.o hf_hybrid_policy.o resolve_policy.o checks_policy.o \
    select.o select_api.o)
POLICY_TEST_NAMES := $(basename $(notdir $(wildcard tests/policy/test_policy_*.c)))
POLICY_TESTS := $(POLICY_TEST_NAMES:%=$(TESTDIR)/%)
# The corpus of real config.json files (tests/data/hf-configs/README.md):
# third-party data, kept in the workplace's shared/ folder beside the checkout.
HF_CORPUS_DIR ?= $(abspath ../shared/hf-configs)
CFLAGS_tests_policy_ := -DPOLICY_SRC_DIR='"$(abspath .)"' -DHF_CORPUS_DIR='"$(HF_CORPUS_DIR)"'

$(TESTDIR)/test_policy_%: $(OBJDIR)/tests/policy/test_policy_%.o $(OBJDIR)/tests/policy/pt.o $(POLICY_HOST_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lcjson -ldl -lm

TESTS += $(POLICY_TESTS)

policy: $(POLICY_TESTS)

test-policy: $(POLICY_TESTS)
	@set -e; for t in $(POLICY_TESTS); do echo "== $$t"; $$t; done

.PHONY: policy test-policy

# Valgrind over the policy tests (ASan runs come with `make SAN=asan test-policy`).
policy-valgrind: $(POLICY_TESTS)
	@set -e; for t in $(POLICY_TESTS); do echo "== valgrind $$t"; \
	    valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 $$t >/dev/null; done
	@echo "policy-valgrind: $(words $(POLICY_TESTS)) test binaries clean"

TEST_STEPS += policy-valgrind
.PHONY: policy-valgrind
