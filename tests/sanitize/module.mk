# tests/sanitize - the whole suite under sanitizers, as `make test` steps:
#
#   make sanitize-asan      build everything with SAN=asan (ASan+UBSan, build-asan/), run every
#                           unit test and a cpu_ref conformance subset there
#   make sanitize-valgrind  memcheck (leak check full) over the unit tests, `attnctl
#                           list-plugins` and a small check, on the normal build
#   make sanitize-tsan      SAN=tsan (build-tsan/): 8 threads opening hosts, listing, selecting,
#                           creating, running cpu_ref and destroying at once
#
# Every run sets SGL_ATTN_NO_UNLOAD=1 (never dlclose, so reports keep the
# plugins' stack frames).  Third-party leaks (PoCL's JIT, glibc's dlopen
# bookkeeping) are suppressed by the files here, each entry with its reason.
# SAN_TESTS_SKIP names test binaries (file names) a module runs under a
# sanitizer by its own step instead; SAN_QUICK_ENV holds the variables that
# make a test take its quick path under the slow tools.

SAN_SUPP_DIR := $(abspath tests/sanitize)
SAN_ENV := SGL_ATTN_NO_UNLOAD=1 OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd
# SGL_ATTN_TEST_QUICK=1: a test may shrink its matrix under the slow tools.
SAN_QUICK_ENV += SGL_ATTN_TEST_QUICK=1 XPU_TEST_QUICK=1
ASAN_RUN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_odr_violation=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$(SAN_SUPP_DIR)/lsan.supp:print_suppressions=0
VALGRIND := valgrind --quiet --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite --track-fds=no --suppressions=$(SAN_SUPP_DIR)/valgrind.supp \
    $(addprefix --suppressions=,$(abspath $(wildcard tests/xpu/pocl.supp)))
TSAN_RUN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=66
# cpu_ref's conformance subset (quick matrix, a few shapes), bare and under the layer.
SAN_CHECK_FILTER ?= b=(1|2|3),
# ABI 1.2's decode and verify cases of the paged12 family (lse, fp8, ropesplit) run there too.
SAN_VALGRIND_CHECK_FILTER ?= ^((decode|verify|sparse_decode|sparse_verify|indexer_decode|indexer_verify):|(lse|fp8|ropesplit):op=(decode|verify),)b=(1|2|3),
SAN_TESTS = $(filter-out $(addprefix %/,$(SAN_TESTS_SKIP)),$(TESTS))
# Not under valgrind: tests/xpu runs its test there itself (xpu-valgrind, PoCL
# suppressions); cpu_ref's naive-reference and invariance matrices (8.6 and
# 5.3 min there), cuda_mla's planner sweep (82 s) and the CUDA linear kernels
# on the CPU emulator (15.5 min) are arithmetic loops that the ASan step
# covers; they rejoin when they honour SGL_ATTN_TEST_QUICK.
SAN_VALGRIND_SKIP += test_xpu_ocl test_cpu_ref_naive test_cpu_ref_invariance test_mla_plan test_lin_emu
SAN_VALGRIND_TESTS = $(filter-out $(addprefix %/,$(SAN_TESTS_SKIP) $(SAN_VALGRIND_SKIP)),$(TESTS))

# Runs each test binary in $(1) with the environment $(2) and wrapper $(3),
# printing its wall time; the first failure stops the step.
define san_run_tests
	@set -e; for t in $(1); do \
	  s=$$(date +%s%N); echo "== $(4) $$t"; \
	  env $(SAN_ENV) $(SAN_QUICK_ENV) $(2) $(3) $$t > $(BUILD)/san-last.log 2>&1 || \
	    { cat $(BUILD)/san-last.log; echo "FAILED under $(4): $$t"; exit 1; }; \
	  grep -hE '^# ' $(BUILD)/san-last.log || true; \
	  echo "   ok ($$(( ($$(date +%s%N) - s) / 1000000 )) ms)"; done
endef

# The conformance subset needs the harness's `attnctl check` (attnctl/check.c).
ifneq ($(wildcard attnctl/check.c),)
SAN_CHECK_ASAN = @echo "== asan attnctl check: cpu_ref and validate/cpu_ref, filter '$(SAN_CHECK_FILTER)'"; \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(ATTNCTL) check --plugin cpu_ref --quick --filter '$(SAN_CHECK_FILTER)' && \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(ATTNCTL) check --plugin validate/cpu_ref --quick --filter '$(SAN_CHECK_FILTER)'
SAN_CHECK_VALGRIND = @echo "== valgrind attnctl check: cpu_ref, filter '$(SAN_VALGRIND_CHECK_FILTER)'"; \
  env $(SAN_ENV) $(VALGRIND) $(ATTNCTL) check --plugin cpu_ref --quick --filter '$(SAN_VALGRIND_CHECK_FILTER)' > /dev/null
else
SAN_CHECK_ASAN = @echo "skipped the conformance subset: attnctl check is not built yet (attnctl/check.c)"
SAN_CHECK_VALGRIND = $(SAN_CHECK_ASAN)
endif

# --------------------------------------------------------------- ASan+UBSan

# nvcc and hipcc get no sanitizer flags, so their objects are the same bytes
# in both trees: the ASan tree takes the normal build's (built by `make
# test`'s unit step) instead of compiling every GPU kernel a second time.
SAN_ASAN_OBJDIR := build-asan/obj
sanitize-asan:
	@if [ -d $(OBJDIR) ] && [ "$(OBJDIR)" != "$(SAN_ASAN_OBJDIR)" ]; then mkdir -p $(SAN_ASAN_OBJDIR) && \
	  (cd $(OBJDIR) && find . \( -name '*.cu.o' -o -name '*.hip.o' \) \
	    -exec cp -p -u --parents {} $(abspath $(SAN_ASAN_OBJDIR))/ \;); fi
	@$(MAKE) --no-print-directory SAN=asan sanitize-asan-run

# Prerequisites expanded late: modules read after this one add tests too.
.SECONDEXPANSION:
ifeq ($(SAN),asan)
sanitize-asan-run: $$(ALL) $$(TESTS) $$(CLI_FAKE_SOS)
	$(call san_run_tests,$(SAN_TESTS),$(ASAN_RUN_ENV),,asan)
	@echo "== asan attnctl list-plugins (probes isolated, then in process)"
	env $(SAN_ENV) $(ASAN_RUN_ENV) $(ATTNCTL) list-plugins --all > /dev/null
	env $(SAN_ENV) $(ASAN_RUN_ENV) $(ATTNCTL) list-plugins --all --no-isolate > /dev/null
	$(call cli_san_run,$(ASAN_RUN_ENV),asan)
	$(SAN_CHECK_ASAN)
	$(CUDA_EMU_ASAN)
endif

# ------------------------------------------------------------------ valgrind

sanitize-valgrind: $$(ALL) $$(TESTS) $$(CLI_FAKE_SOS)
	$(call san_run_tests,$(SAN_VALGRIND_TESTS),,$(VALGRIND),valgrind)
	@echo "== valgrind attnctl list-plugins"
	env $(SAN_ENV) $(VALGRIND) $(ATTNCTL) list-plugins --all --no-isolate > /dev/null
	$(call cli_san_run,$(VALGRIND),valgrind)
	$(SAN_CHECK_VALGRIND)

# ---------------------------------------------------------------------- TSan

SAN_CONCURRENCY := $(TESTDIR)/test_concurrency
$(SAN_CONCURRENCY): $(OBJDIR)/tests/sanitize/test_concurrency.o $(OBJDIR)/tests/gauntlet/batch_fixture.o \
    $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON) -lcmocka -lm
CFLAGS_tests_sanitize_ := -Itests/gauntlet

sanitize-tsan:
	@$(MAKE) --no-print-directory SAN=tsan sanitize-tsan-run

ifeq ($(SAN),tsan)
# The gauntlet's good plugin, alone in a directory, is on the path too:
# 8 threads dlopen one file.
SAN_TSAN_PLUGINS := $(BUILD)/tests/concurrency-plugins
sanitize-tsan-run: $(LIBSGLATTN) $(HOST_HEADERS) $(HOST_CONF) $(SAN_CONCURRENCY) $(GAUNTLET_DIR)/good.so
	@mkdir -p $(SAN_TSAN_PLUGINS) && cp $(GAUNTLET_DIR)/good.so $(SAN_TSAN_PLUGINS)/
	$(call san_run_tests,$(SAN_CONCURRENCY),$(TSAN_RUN_ENV) SGL_ATTN_PLUGIN_PATH=$(abspath $(SAN_TSAN_PLUGINS)) \
	  SGL_ATTN_CONCURRENCY_ITERATIONS=6,,tsan)
endif

# The concurrency test also runs in the plain build's unit tests (no TSan there,
# but the same threads and the same answers).
TESTS += $(SAN_CONCURRENCY)
TEST_STEPS += sanitize-asan sanitize-valgrind sanitize-tsan
sanitize: sanitize-asan sanitize-valgrind sanitize-tsan
.PHONY: sanitize sanitize-asan sanitize-asan-run sanitize-valgrind sanitize-tsan sanitize-tsan-run
