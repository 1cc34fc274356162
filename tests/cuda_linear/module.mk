# tests/cuda_linear - the CUDA linear-attention wrappers' tests (plain C: the
# GPU machine has no cmocka).
#   test_lin_pure   pure C (dims, state sizes, device layout, paths, checks): everywhere
#   test_lin_load   the five built plugins: load, descriptor, probe, create refusals (no GPU needed)
#   test_lin_gpu    every kind and kernel against the float64 reference, graph
#                   capture/replay, bad inputs (GPU; prints SKIP with the probe's reason elsewhere)
#   test_lin_emu    test_lin_gpu's configs with the real kernels on a CPU emulator of CUDA (here)
#   test_lin_e2e    a tiny hybrid model, gdn_cuda/cuda_attn against gdn/cpu_ref (GPU; SKIP elsewhere)
#   bench_lin       the issue-9 decode / prefill timings (GPU; bench/gpu/final_linear.sh runs it) and issue
#                   22's gdn / kda / mamba2 prefills (BENCH_SET=prefill: bench/gpu/linear_prefill.sh)
#   make cuda-linear-tests   build and run the tests
#   make cuda-linear-emu     a step of `make test`: test_lin_emu and attnctl check of the five wrappers
#                            built as emulated plugins, stacked on the emulated cuda_attn, blocks shuffled

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
LINT_STACK_GRAPH := $(TESTDIR)/test_lin_stack_graph
$(LINT_STACK_GRAPH): $(call LINT_OBJ,test_lin_stack_graph) $(LINT_UTIL) $(LIBSGLATTN) | $(LIN_SOS) $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $(filter %.o,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    -ldl -lm $(CUDA_LDLIBS)
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
$(LINE_OBJ)/%.emu.o: $(LIN_DIR)/%.cu $(wildcard $(LIN_DIR)/*.cuh $(LIN_DIR)/*.h) $(EMU_DIR)/emu_prelude.h $(EMU_DIR)/emu_pdl.h
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

# The five wrappers as plugin .so files with the same emulated kernels, beside the emulated cuda_attn
# (tests/cuda_emu), so that attnctl stacks them on it (gdn_cuda/cuda_attn) with no GPU: the plugin's
# own C objects (lin_plugin.<kind>.o keeps its real entry point), the emulator objects above, and the
# runtime that reports SM 8.0 (the wrappers' SM 8.x launches: no programmatic dependent launch);
# $(LINE_SM90_DIR) the same over the SM 9.0 runtime, beside the emulated cuda_attn with the wgmma
# extend, where the stream decode is a programmatic dependent launch of its prep.
LINE_PLUGDIR := $(BUILD)/emu-plugins
LINE_SM90_DIR := $(BUILD)/emu-plugins-sm90
LINE_SOS := $(foreach k,$(LIN_KINDS),$(LINE_PLUGDIR)/$(k)_cuda.so)
LINE_SM90_SOS := $(foreach k,$(LIN_KINDS),$(LINE_SM90_DIR)/$(k)_cuda.so)
LINE_SO_OBJS := $(filter-out %.cu.o,$(LIN_OBJS)) $(LINE_KERNELS) $(EMU_SIMT_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
$(LINE_PLUGDIR)/%_cuda.so: $(OBJDIR)/$(LIN_DIR)/lin_plugin.%.o $(LINE_SO_OBJS) $(EMU_CUDART_SM80_OBJ)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
$(LINE_SM90_DIR)/%_cuda.so: $(OBJDIR)/$(LIN_DIR)/lin_plugin.%.o $(LINE_SO_OBJS) $(EMU_CUDART_OBJ)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(LINE_SOS) $(LINE_SM90_SOS)
cuda_linear_emu: $(LINE_SOS) $(LINE_SM90_SOS)

# test_lin_stack_graph_emu: a verify graph through the stack gdn_cuda/cuda_attn of $(LINE_PLUGDIR).  The
# test links the SM 8.0 emulated runtime and exports it (-rdynamic): each emulated plugin carries its own
# copy, and the test's, found first, is the one both plugins then call, so that one stream capture records
# the launches of both (each plugin's own copy would record only its own).
LINT_STACK_GRAPH_EMU := $(TESTDIR)/test_lin_stack_graph_emu
$(LINT_STACK_GRAPH_EMU): $(call LINT_OBJ,test_lin_stack_graph) $(LINT_UTIL) $(EMU_SIMT_OBJ) $(EMU_CUDART_SM80_OBJ) \
                         $(LIBSGLATTN) | $(LINE_SOS) $(CUDA_EMU_SO) $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -rdynamic -o $@ $(filter %.o,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    -ldl -lm

# The step (about 3 minutes of one core), every grid's blocks shuffled (EMU_ORDER=shuf: a kernel may not
# depend on the order its blocks run in; `unit` runs test_lin_emu in order):
#  - test_lin_emu, every config (each kind and kernel, both state-pass tiles, f32 and bf16 state, f16 / bf16
#    / f32 activations, state carried across extend calls, ragged batches across chunk boundaries, padded
#    slots, the state pass by segments of 1-3 chunks at many chunk offsets, caller-owned state), the graphs
#    and the bad inputs;
#  - attnctl check of the five wrappers as plugins stacked on the emulated cuda_attn (SM 8.0): the whole
#    matrix, then LINE_CASES (16-bit activations: the cases cuda_attn serves) at chunk boundaries for
#    the four recurrent kinds on the tensor-core kernels, with the defaults and with conf_lin_emu_seg.json
#    (the state pass by segments of 1-3 chunks, both tiles);
#    gdn with 3 value heads (an odd head-tile count for the stream prep);
#  - the same stacks on the SM 9.0 builds (the stream decode a programmatic dependent launch of its
#    prep, cuda_attn's wgmma extend beneath): the whole matrix; gdn's LINE_CASES and a V = 128 case on
#    the fused chunk kernel (conf_lin_emu_fused.json: fused_chunk=always; SM 8.0's shared memory is too
#    small for it); gdn's and mamba2's decode / verify cases with the stream decode's L2 prefetch 3 / 1
#    blocks ahead (conf_lin_emu_l2a.json: the option through the host's conf).
# The cases: the last request of each batch has exactly the prefix and new tokens named (the others
# ragged, one padded row); chunks are 64 tokens; K = 128 and V = 64, the dims the tensor-core kernels
# take (the harness's default dims run token by token), and slowly decaying gates (decay=slow), so that
# the state a chunk or segment starts from still shows in the outputs (by default most of it fades within
# a few tokens, and a wrong start state passes).  The seeds after them once failed the one-token prefix
# call alone: its output is one q.k product times v per head, and where that product nearly cancels, the
# bf16 operands' rounding is several percent of it; the harness now judges the case's calls as one output
# (docs/harness.md, "NMSE limits").
LINE_TC_DIMS := hk=1,hv=2,dk=128,dv=64,decay=slow
LINE_CASE_SET := b=4,q=63,prefix=1 b=4,q=64,prefix=64 b=4,q=65,prefix=127 b=4,q=129,prefix=63 \
                 b=3,q=200,ragged=0 b=2,q=260,prefix=190 b=5,fwd=decode,prefix=128 b=3,fwd=verify,q=4,prefix=62 \
                 b=4,q=130,prefix=63,owner=caller b=3,fwd=verify,q=3,prefix=64,owner=caller
LINE_CASES = $(foreach c,$(LINE_CASE_SET),--case $(1):$(c),dtype=bf16,$(LINE_TC_DIMS)) \
             --case $(1):b=3,q=150,prefix=70,dtype=f16,$(LINE_TC_DIMS)
LINE_CHECK = EMU_ORDER=shuf $(ATTNCTL) check --plugin-path
cuda-linear-emu: $(LINT_EMU) $(LINT_STACK_GRAPH_EMU) $(ATTNCTL) $(LINE_SOS) $(LINE_SM90_SOS) $(CUDA_EMU_SO) \
                 $(CUDA_EMU_SM90_SO)
	@echo "== test_lin_emu, blocks shuffled (every config, the graphs, the bad inputs)"
	@out=$$(EMU_ORDER=shuf $(LINT_EMU) 2>&1); rc=$$?; printf '%s\n' "$$out" | grep -v '^ok' | tail -40; \
	  echo "$$(printf '%s\n' "$$out" | grep -c '^ok') configs ok"; \
	  if [ $$rc -ne 0 ]; then printf '%s\n' "$$out" | grep '^FAIL' | head -40; exit 1; fi; \
	  printf '%s\n' "$$out" | grep -qx '0 failures' || { echo "cuda-linear-emu: test_lin_emu did not run (SKIP?)"; exit 1; }
	@echo "== a verify graph through gdn_cuda/cuda_attn on the emulator, blocks shuffled"
	EMU_ORDER=shuf $(LINT_STACK_GRAPH_EMU) $(LINE_PLUGDIR)
	@set -e; for k in $(LIN_KINDS); do \
	  echo "== $${k}_cuda/cuda_attn on the emulator, SM 8.0, blocks shuffled (the whole matrix)"; \
	  $(LINE_CHECK) $(LINE_PLUGDIR) --plugin $${k}_cuda/cuda_attn --no-conf; done
	@set -e; for k in gdn kda mamba2 lightning; do \
	  echo "== $${k}_cuda/cuda_attn on the emulator, SM 8.0, blocks shuffled: chunk boundaries, the defaults"; \
	  $(LINE_CHECK) $(LINE_PLUGDIR) --plugin $${k}_cuda/cuda_attn --no-conf $(call LINE_CASES,$$k); \
	  echo "== $${k}_cuda/cuda_attn on the emulator, SM 8.0, blocks shuffled: chunk boundaries, by segments"; \
	  $(LINE_CHECK) $(LINE_PLUGDIR) --plugin $${k}_cuda/cuda_attn --conf tests/cuda_linear/conf_lin_emu_seg.json \
	    $(call LINE_CASES,$$k); done
	@echo "== gdn_cuda/cuda_attn on the emulator, SM 8.0, blocks shuffled: 3 value heads (the stream prep's odd tile count)"
	$(LINE_CHECK) $(LINE_PLUGDIR) --plugin gdn_cuda/cuda_attn --no-conf --case gdn:b=3,q=97,prefix=33,dtype=bf16,hk=1,hv=3,dk=128,dv=128,decay=slow
	@echo "== gdn_cuda/cuda_attn: a one-token prefix at seeds whose lone q.k nearly cancels (the case judged as one output)"
	@set -e; for s in 10 17 22 24 26 82 0x7b84f6d256919363; do \
	  $(LINE_CHECK) $(LINE_PLUGDIR) --plugin gdn_cuda/cuda_attn --no-conf --seed $$s \
	    --case gdn:b=4,q=63,prefix=1,dtype=bf16,$(LINE_TC_DIMS); done
	@set -e; for k in $(LIN_KINDS); do \
	  echo "== $${k}_cuda/cuda_attn on the emulator, SM 9.0, blocks shuffled (the whole matrix)"; \
	  $(LINE_CHECK) $(LINE_SM90_DIR) --plugin $${k}_cuda/cuda_attn --no-conf; done
	@echo "== gdn_cuda/cuda_attn on the emulator, SM 9.0, blocks shuffled: chunk boundaries, the fused chunk kernel (fused_chunk=always)"
	$(LINE_CHECK) $(LINE_SM90_DIR) --plugin gdn_cuda/cuda_attn --conf tests/cuda_linear/conf_lin_emu_fused.json \
	  $(call LINE_CASES,gdn) --case gdn:b=3,q=200,prefix=70,dtype=bf16,hk=2,hv=4,dk=128,dv=128,decay=slow
	@set -e; for k in gdn mamba2; do \
	  echo "== $${k}_cuda/cuda_attn on the emulator, SM 9.0, blocks shuffled: decode / verify with decode_l2_ahead_blocks"; \
	  $(LINE_CHECK) $(LINE_SM90_DIR) --plugin $${k}_cuda/cuda_attn --conf tests/cuda_linear/conf_lin_emu_l2a.json \
	    --case $$k:b=5,fwd=decode,prefix=128,dtype=bf16,$(LINE_TC_DIMS) --case $$k:b=3,fwd=verify,q=4,prefix=62,dtype=bf16,$(LINE_TC_DIMS) \
	    --case $$k:b=3,fwd=verify,q=3,prefix=64,owner=caller,dtype=bf16,$(LINE_TC_DIMS); done
TEST_STEPS += cuda-linear-emu

TESTS += $(LINT_LOAD) $(LINT_GPU) $(LINT_E2E) $(LINT_EMU) $(LINT_STACK_GRAPH)
LINT_TESTS += $(LINT_EMU) $(LINT_LOAD) $(LINT_GPU) $(LINT_E2E) $(LINT_STACK_GRAPH)
ALL += $(LINT_BENCH)
else
SKIPPED += cuda_linear_tests
SKIP_WHY_cuda_linear_tests := $(NO_NVCC_WHY); only the pure-C test of the CUDA linear wrappers is built
cuda_linear_emu cuda-linear-emu:
	@echo "cuda-linear-emu skipped: $(NO_NVCC_WHY) (the emulated wrappers reuse the plugins' build)"
endif

cuda-linear-tests: $(LINT_TESTS)
	@set -e; for t in $(LINT_TESTS); do echo "== $$t"; $$t; done
.PHONY: cuda-linear-tests cuda_linear_emu cuda-linear-emu
