# tests/cuda - cuda_attn's tests.
#   test_cuda_attn_plan   pure C (sizing, bounds, checks): builds and runs everywhere
#   test_cuda_attn_load   the built plugin: loads, descriptor, probe, create refusals (no GPU needed)
#   test_cuda_graph       graph capture / replay on a GPU; skipped with the probe's reason elsewhere
#   test_tree_mask_pack   tree verify's mask packing kernel on a GPU (SKIP elsewhere; not in cuda-tests)
#   make cuda-tests       build and run them

CUDA_TEST_PLAN := $(TESTDIR)/test_cuda_attn_plan
$(CUDA_TEST_PLAN): $(OBJDIR)/tests/cuda/test_cuda_attn_plan.o $(CUDA_ATTN_PURE_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -lm
# Relative to the repo root (where make and bench/gpu/*.sh run), so a tree built
# in one clone also runs from another copy.
CFLAGS_tests_cuda_ := -Iplugins/cuda/mha -Itests/xpu -DCUDA_ATTN_SO='"$(PLUGDIR)/cuda_attn.so"'
TESTS += $(CUDA_TEST_PLAN)
CUDA_TESTS := $(CUDA_TEST_PLAN)

ifeq ($(HAVE_CUDA),1)
CFLAGS_tests_cuda_ += $(CUDA_CFLAGS)
CUDA_TEST_LOAD := $(TESTDIR)/test_cuda_attn_load
CUDA_TEST_GRAPH := $(TESTDIR)/test_cuda_graph
$(CUDA_TEST_LOAD): $(OBJDIR)/tests/cuda/test_cuda_attn_load.o $(OBJDIR)/tests/xpu/plugin_harness.o | $(CUDA_ATTN_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl
$(CUDA_TEST_GRAPH): $(OBJDIR)/tests/cuda/test_cuda_graph.o | $(CUDA_ATTN_SO)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl -lm $(CUDA_LDLIBS)
TESTS += $(CUDA_TEST_LOAD) $(CUDA_TEST_GRAPH)
CUDA_TESTS += $(CUDA_TEST_LOAD) $(CUDA_TEST_GRAPH)
# tree_mask_pack.cu's kernel against a host reference: needs a GPU (SKIP
# without one), so it is built with everything and run by bench/gpu/tree_verify.sh.
CUDA_TEST_TMASK := $(TESTDIR)/test_tree_mask_pack
$(CUDA_TEST_TMASK): tests/cuda/test_tree_mask_pack.cu plugins/cuda/mha/tree_mask_pack.cu plugins/cuda/mha/cuda_launch.h \
                    $(wildcard plugins/sdk/attn_kernels/*)
	@mkdir -p $(@D)
	$(NVCC) -std=c++17 -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=compute_90 \
	        -Werror all-warnings -Xcompiler -Wall,-Wextra $(INC_PLUGIN) -Iplugins/cuda/mha -o $@ $<
ALL += $(CUDA_TEST_TMASK)
tree-mask-test: $(CUDA_TEST_TMASK)
else
SKIPPED += cuda_tests
SKIP_WHY_cuda_tests := $(NO_NVCC_WHY); only the pure-C cuda_attn test is built
endif
.SECONDARY: $(patsubst $(TESTDIR)/%,$(OBJDIR)/tests/cuda/%.o,$(CUDA_TESTS))

cuda-tests: $(CUDA_TESTS)
	@set -e; for t in $(CUDA_TESTS); do echo "== $$t"; $$t; done
.PHONY: cuda-tests tree-mask-test

# The sm_90a wgmma self-test has its own fragment (the top Makefile includes only module.mk files).
include tests/cuda/wgmma.mk
