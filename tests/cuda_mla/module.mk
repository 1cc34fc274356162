# tests/cuda_mla - cuda_mla's tests.
#   test_mla_plan    the planner and kernel choice (pure C): everywhere
#   test_mla_check   the input checks and batch lengths (pure C): everywhere
#   test_mla_indexer_check  indexer_topk's checks (pure C): everywhere
#   test_mla_load    the built plugin: loads, descriptor, probe, refusals, options (no GPU needed)
#   test_mla_gpu     every kernel against a float64 reference, fp8, graph replay (GPU only;
#                    skipped with the probe's reason elsewhere)
#   mla_gpu_bench    times the kernels on issue 7's shapes (GPU only; bench/gpu/final_mla.sh runs it)
#   make cuda_mla_tests   build and run them

MLA_TEST_PLAN := $(TESTDIR)/test_mla_plan
MLA_TEST_CHECK := $(TESTDIR)/test_mla_check
# The plugin is found at run time (mla_plugin_path.h), never by a built-in path.
CFLAGS_tests_cuda_mla_ := -Iplugins/cuda/mla
$(MLA_TEST_PLAN): $(OBJDIR)/tests/cuda_mla/test_mla_plan.o $(OBJDIR)/plugins/cuda/mla/mla_plan.o $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka
$(MLA_TEST_CHECK): $(OBJDIR)/tests/cuda_mla/test_mla_check.o $(OBJDIR)/plugins/cuda/mla/mla_check.o $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -lm
MLA_TEST_IDX_CHECK := $(TESTDIR)/test_mla_indexer_check
$(MLA_TEST_IDX_CHECK): $(OBJDIR)/tests/cuda_mla/test_mla_indexer_check.o $(OBJDIR)/plugins/cuda/mla/mla_indexer_check.o \
                       $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -lm
TESTS += $(MLA_TEST_PLAN) $(MLA_TEST_CHECK) $(MLA_TEST_IDX_CHECK)
MLA_TESTS := $(MLA_TEST_PLAN) $(MLA_TEST_CHECK) $(MLA_TEST_IDX_CHECK)

ifeq ($(HAVE_CUDA),1)
CFLAGS_tests_cuda_mla_ += $(CUDA_CFLAGS)
MLA_TEST_LOAD := $(TESTDIR)/test_mla_load
MLA_TEST_GPU := $(TESTDIR)/test_mla_gpu
MLA_GPU_BENCH := $(TESTDIR)/mla_gpu_bench
$(MLA_TEST_LOAD): $(OBJDIR)/tests/cuda_mla/test_mla_load.o | $(CUDA_MLA_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl
$(MLA_TEST_GPU): $(OBJDIR)/tests/cuda_mla/test_mla_gpu.o $(OBJDIR)/tests/cuda_mla/mla_gpu_util.o | $(CUDA_MLA_SO)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl -lm $(CUDA_LDLIBS)
$(MLA_GPU_BENCH): $(OBJDIR)/tests/cuda_mla/mla_gpu_bench.o $(OBJDIR)/tests/cuda_mla/mla_gpu_util.o | $(CUDA_MLA_SO)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -ldl -lm $(CUDA_LDLIBS)
TESTS += $(MLA_TEST_LOAD) $(MLA_TEST_GPU)
ALL += $(MLA_GPU_BENCH)
MLA_TESTS += $(MLA_TEST_LOAD) $(MLA_TEST_GPU)
else
SKIPPED += cuda_mla_tests
SKIP_WHY_cuda_mla_tests := $(NO_NVCC_WHY); only the pure-C cuda_mla tests are built
endif
.SECONDARY: $(patsubst $(TESTDIR)/%,$(OBJDIR)/tests/cuda_mla/%.o,$(MLA_TESTS))

cuda_mla_tests: $(MLA_TESTS) $(MLA_GPU_BENCH)
	@set -e; for t in $(MLA_TESTS); do echo "== $$t"; $$t; done
.PHONY: cuda_mla_tests
