# tests/cuda_linear - the CUDA linear-attention wrappers' tests (plain C: the
# GPU machine has no cmocka).
#   test_lin_pure   pure C (dims, state sizes, device layout, paths, checks): everywhere
#   test_lin_load   the five built plugins: load, descriptor, probe, create refusals (no GPU needed)
#   test_lin_gpu    every kind and kernel against the float64 reference, graph
#                   capture/replay, bad inputs (GPU; prints SKIP with the probe's reason elsewhere)
#   test_lin_emu    test_lin_gpu's configs with the real kernels on a CPU emulator of CUDA (here)
#   test_lin_e2e    a tiny hybrid model, gdn_cuda/cuda_attn against gdn/cpu_ref (GPU; SKIP elsewhere)
#   bench_lin       the issue-9 decode / prefill timings (GPU; bench/gpu/final_linear.sh runs it)
#   make cuda-linear-tests   build and run the tests

LINT_DIR := tests/cuda_linear
LINT_OBJ = $(addprefix $(OBJDIR)/$(LINT_DIR)/,$(addsuffix .o,$(1)))
CFLAGS_tests_cuda_linear_ := -Iplugins/cuda/linear -Iattnctl/harness

LINT_PURE := $(TESTDIR)/test_lin_pure
$(LINT_PURE): $(call LINT_OBJ,test_lin_pure lt_check) $(LIN_PURE_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^
TESTS += $(LINT_PURE)
LINT_TESTS := $(LINT_PURE)

ifeq ($(HAVE_CUDA),1)
CFLAGS_tests_cuda_linear_ += $(CUDA_CFLAGS)
LINT_LOAD := $(TESTDIR)/test_lin_load
LINT_GPU := $(TESTDIR)/test_lin_gpu
LINT_E2E := $(TESTDIR)/test_lin_e2e
LINT_BENCH := $(TESTDIR)/bench_lin
LINT_UTIL := $(call LINT_OBJ,lt_util lt_check)

$(LINT_LOAD): $(call LINT_OBJ,test_lin_load lt_check) | $(LIN_SOS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -ldl
$(LINT_GPU): $(call LINT_OBJ,test_lin_gpu lt_scen) $(LINT_UTIL) $(OBJDIR)/attnctl/harness/linear_ref.o | $(LIN_SOS)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -ldl -lm $(CUDA_LDLIBS)
$(LINT_E2E): $(call LINT_OBJ,test_lin_e2e) $(LINT_UTIL) $(LIBSGLATTN) | $(LIN_SOS) $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $(filter %.o,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    -ldl -lm $(CUDA_LDLIBS)
$(LINT_BENCH): $(call LINT_OBJ,bench_lin) $(LINT_UTIL) | $(LIN_SOS)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -ldl -lm $(CUDA_LDLIBS)

# test_lin_emu: test_lin_gpu's scenarios with the real kernels and launchers
# built for the CPU emulator of CUDA (tests/emu/: fibers for threads, warp
# collectives, ldmatrix / mma.sync semantics, a host-memory runtime), so they run here.
include tests/emu/emu.mk
LINE_OBJ := $(OBJDIR)/$(LINT_DIR)/emu
# The kernels' emulator objects are named .emu.o, not .cu.o: the sanitizer step copies the normal build's
# *.cu.o (nvcc's, the same bytes in both trees) into the ASan tree, and these must be built with ASan.
LINE_KERNELS := $(addprefix $(LINE_OBJ)/,$(addsuffix .emu.o,$(LIN_CU)))
LINE_PLUGINS := $(foreach k,$(LIN_KINDS),$(LINE_OBJ)/lin_plugin.$(k).o)
$(LINE_OBJ)/%.emu.o: $(LIN_DIR)/%.cu $(wildcard $(LIN_DIR)/*.cuh $(LIN_DIR)/*.h) $(EMU_DIR)/emu_prelude.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -x c++ -c $< -o $@
$(LINE_OBJ)/lin_plugin.%.o: $(LIN_DIR)/lin_plugin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_plugins_cuda_linear_) -DLIN_KIND_$(shell echo $* | tr a-z A-Z) \
	    -Dsgl_attn_plugin_entry=emu_entry_$*_cuda -c $< -o $@
$(LINE_OBJ)/lt_util.o: $(LINT_DIR)/lt_util.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_tests_cuda_linear_) -DLT_EMU -c $< -o $@
LINT_EMU := $(TESTDIR)/test_lin_emu
$(LINT_EMU): $(call LINT_OBJ,test_lin_gpu lt_scen lt_check) $(LINE_OBJ)/lt_util.o $(OBJDIR)/attnctl/harness/linear_ref.o \
             $(LINE_PLUGINS) $(filter-out %.cu.o,$(LIN_OBJS)) $(LINE_KERNELS) $(EMU_SIMT_OBJ) \
             $(EMU_CUDART_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -lm

# bench_lin on the emulator, for `BENCH_SMOKE=1 build/tests/bench_lin_emu` (the tool's own check)
LINT_BENCH_EMU := $(TESTDIR)/bench_lin_emu
$(LINT_BENCH_EMU): $(call LINT_OBJ,bench_lin lt_check) $(LINE_OBJ)/lt_util.o $(LINE_PLUGINS) \
                   $(filter-out %.cu.o,$(LIN_OBJS)) $(LINE_KERNELS) $(EMU_SIMT_OBJ) \
                   $(EMU_CUDART_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(LINT_BENCH_EMU)

TESTS += $(LINT_LOAD) $(LINT_GPU) $(LINT_E2E) $(LINT_EMU)
LINT_TESTS += $(LINT_EMU) $(LINT_LOAD) $(LINT_GPU) $(LINT_E2E)
ALL += $(LINT_BENCH)
else
SKIPPED += cuda_linear_tests
SKIP_WHY_cuda_linear_tests := $(NO_NVCC_WHY); only the pure-C test of the CUDA linear wrappers is built
endif

cuda-linear-tests: $(LINT_TESTS)
	@set -e; for t in $(LINT_TESTS); do echo "== $$t"; $$t; done
.PHONY: cuda-linear-tests
