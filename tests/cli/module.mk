# tests/cli - attnctl as a user meets it: help and suggestions, exit codes,
# text from plugins escaped, tables that fit, every --json against the
# schema (docs/attnctl.schema.json), machine files (--caps-from), name
# claims, the CPU fallback warning; the fakes are tests/cli/fakes/cli_fake.c
# built under several names.
#
#   make test-cli   build attnctl and the fakes, then pytest tests/cli

CLI_FAKES := $(TESTDIR)/cli
CLI_FAKE_SOS :=
# $(call cli_fake,dir,name,cflags)
define cli_fake
$(CLI_FAKES)/$(1)/$(2).so: tests/cli/fakes/cli_fake.c abi/sgl_attn_abi.h tests/cli/module.mk
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_COMMON) -shared -o $$@ $$< -DFAKE_NAME='"$(2)"' $(3) $$(LDFLAGS_COMMON)
CLI_FAKE_SOS += $(CLI_FAKES)/$(1)/$(2).so
endef
$(eval $(call cli_fake,evil,evil,-DFAKE_EVIL -DFAKE_GPU))
$(eval $(call cli_fake,claims,fa3,))
$(eval $(call cli_fake,claims,claim_fa3,-DFAKE_ALIAS1='"fa3"'))
$(eval $(call cli_fake,claims,dup_one,-DFAKE_ALIAS1='"my_fast"'))
$(eval $(call cli_fake,claims,dup_two,-DFAKE_ALIAS1='"my_fast"'))
$(eval $(call cli_fake,claims,alias_name,-DFAKE_ALIAS1='"cpu_ref"'))
$(eval $(call cli_fake,gpu_here,fake_gpu,-DFAKE_GPU))
$(eval $(call cli_fake,gpu_absent,fake_gpu,-DFAKE_GPU -DFAKE_ABSENT))

CLI_TEST_PYTHON ?= /usr/bin/python3

test-cli: $(ATTNCTL) $(CLI_FAKE_SOS) $(if $(HELP2MAN),$(ATTNCTL_MAN)) $(ATTNCTL_COMPLETION)
	ATTNCTL=$(abspath $(ATTNCTL)) CLI_FAKES=$(abspath $(CLI_FAKES)) SGLATTN_SRC=$(abspath .) \
	SGLATTN_BUILD=$(abspath $(BUILD)) PYTHONDONTWRITEBYTECODE=1 \
	    $(CLI_TEST_PYTHON) -m pytest -q -p no:cacheprovider tests/cli

TEST_STEPS += test-cli

.PHONY: test-cli

# attnctl's own paths under the sanitizers (tests/sanitize runs these in its
# ASan and valgrind steps): escaped text and claims, a machine file written
# and read back, the CPU fallback refused, report.  $(1): the wrapper or
# environment of the run.
CLI_SAN_MODEL := examples/models/llama-3.1-8b.json
define cli_san_run
	@echo "== $(2) attnctl: list-plugins -v with fakes, devices --json, select --caps-from, --no-cpu-fallback, report"
	env $(SAN_ENV) $(1) $(ATTNCTL) list-plugins -v --all --no-isolate --plugin-path $(CLI_FAKES)/evil:$(CLI_FAKES)/claims > /dev/null
	env $(SAN_ENV) $(1) $(ATTNCTL) devices --json --no-isolate --plugin-path $(CLI_FAKES)/gpu_here > $(BUILD)/cli-san-machine.json
	env $(SAN_ENV) $(1) $(ATTNCTL) select --model $(CLI_SAN_MODEL) --caps-from $(BUILD)/cli-san-machine.json \
	    --plugin-path $(CLI_FAKES)/gpu_absent --explain --json > /dev/null
	env $(SAN_ENV) $(1) $(ATTNCTL) select --model $(CLI_SAN_MODEL) --plugin-path $(CLI_FAKES)/claims --backend my_fast \
	    --explain > /dev/null
	env $(SAN_ENV) $(1) $(ATTNCTL) select --model examples/models/minimax-m3-sparse.json \
	    --caps-from tests/cli/data/h200-synthetic.json --explain > /dev/null
	env $(SAN_ENV) $(1) $(ATTNCTL) select --model examples/models/gemma-2-9b.json --plugin-path $(CLI_FAKES)/gpu_here \
	    --no-cpu-fallback --json > /dev/null; test $$? = 1
	env $(SAN_ENV) $(1) $(ATTNCTL) report --no-isolate --plugin-path $(CLI_FAKES)/evil > /dev/null
endef

# attnctl bench's timing loop on a simulated device with a launch queue
# (counts on the simulation's clock, not seconds of this machine).
CLI_TEST_TIMING := $(TESTDIR)/test_bench_timing
CFLAGS_tests_cli_ := -Iattnctl/harness
$(CLI_TEST_TIMING): $(OBJDIR)/tests/cli/test_bench_timing.o $(OBJDIR)/attnctl/harness/timing.o \
                    $(OBJDIR)/attnctl/harness/device.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lm
TESTS += $(CLI_TEST_TIMING)
CLI_TEST_VERDICT := $(TESTDIR)/test_call_verdict
$(CLI_TEST_VERDICT): $(OBJDIR)/tests/cli/test_call_verdict.o $(OBJDIR)/attnctl/harness/call_verdict.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka -lm
TESTS += $(CLI_TEST_VERDICT)
