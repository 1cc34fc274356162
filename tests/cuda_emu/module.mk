# tests/cuda_emu - cuda_attn's and cuda_mla's SM 8.x kernels and launchers,
# built by g++ for the CPU emulator of CUDA (tests/emu/), in plugin .so files
# the harness checks against cpu_ref's float64 reference, here, with no GPU:
#   $(CUDA_EMU_SO)      cuda_attn with its kernels emulated (the emulated device reports SM 8.0, so the
#                       sm_90a wgmma/TMA kernels are absent: wgmma_absent.cpp)
#   $(CUDA_EMU_FP8HW_SO)  the same with fp8's SM 8.9+ conversions (EMU_FP8_HW_CVT)
#   $(CUDA_EMU_SM90_SO) cuda_attn over the SM 9.0 runtime with the sm_90a wgmma extend emulated
#                       (wgmma, mbarriers, TMA: their twins in wgmma_sm90.cuh, tests/emu/emu_sm90.h)
#   $(WGMMA_EMU_TEST)   those Hopper primitives against double products
#   make cuda-attn-emu  a step of `make test`: attnctl check on them (kernel=auto, mma, portable; fp8 both ways;
#                       SM 9.0 with shuffled blocks) and the primitives' test
#   $(CUDA_MLA_EMU_SO)  cuda_mla with its kernels emulated (SM 8.0: the mma.sync kernels), and
#                       $(CUDA_MLA_EMU_SM90_SO) over the SM 9.0 runtime (the sm_90a wide kernel's wgmma, TMA
#                       and mbarriers, the mma kernel's bulk copies: mla_wgmma_ops.cuh, mla_mma_ops.cuh)
#   make cuda-mla-emu   a step of `make test`: attnctl check on them (auto on SM 8.0 and 9.0; mma=ring;
#                       simple; shuffled blocks)
# Each .cu is rewritten by tests/emu/emu_cu.py (its <<<>>> launches and extern
# __shared__ arrays) and compiled as is; the inline PTX has its emulated twin
# under #ifdef LK_EMU in the headers (mma_sm80.cuh, wgmma_sm90.cuh, fp8_e4m3.cuh,
# gpu_compat.h, mla_mma_ops.cuh), decode_reg.cu and mla_decode_mma.cu (and a
# header's extern __shared__ array, which emu_cu.py does not see, has its own:
# extend_wgmma_sm90.cuh).

ifeq ($(HAVE_CUDA),1)
include tests/emu/emu.mk
CUDA_EMU_OBJ := $(OBJDIR)/tests/cuda_emu
CUDA_EMU_PLUGDIR := $(BUILD)/emu-plugins
CUDA_EMU_SO := $(CUDA_EMU_PLUGDIR)/cuda_attn.so
CUDA_EMU_CU := $(filter-out extend_wgmma_sm90.cu,$(CUDA_ATTN_CU))
CUDA_EMU_KERNELS := $(addprefix $(CUDA_EMU_OBJ)/,$(CUDA_EMU_CU:.cu=.emu.o))
CUDA_EMU_DEPS := $(wildcard plugins/cuda/mha/*.cuh plugins/cuda/mha/*.h plugins/sdk/attn_kernels/*.cuh \
                            plugins/sdk/attn_kernels/*.h) plugins/sdk/gpu_compat.h plugins/sdk/gpu_fault.h \
                 $(EMU_DIR)/emu_prelude.h $(EMU_DIR)/emu_sm90.h

$(CUDA_EMU_OBJ)/%.emu.cpp: plugins/cuda/mha/%.cu $(EMU_DIR)/emu_cu.py
	@mkdir -p $(@D)
	python3 $(EMU_DIR)/emu_cu.py $< $@
$(CUDA_EMU_OBJ)/%.emu.o: $(CUDA_EMU_OBJ)/%.emu.cpp $(CUDA_EMU_DEPS)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mha -c $< -o $@
$(CUDA_EMU_OBJ)/wgmma_absent.o: tests/cuda_emu/wgmma_absent.cpp plugins/cuda/mha/cuda_launch.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mha -c $< -o $@
.SECONDARY: $(CUDA_EMU_KERNELS:.o=.cpp) $(CUDA_EMU_OBJ)/extend_wgmma_sm90.emu.cpp

# The plugin's C objects are cuda_attn.so's own (they call the runtime API,
# which emu_cudart provides here).
$(CUDA_EMU_SO): $(filter-out %.cu.o,$(CUDA_ATTN_OBJS)) $(CUDA_EMU_KERNELS) $(CUDA_EMU_OBJ)/wgmma_absent.o \
                $(EMU_SIMT_OBJ) $(EMU_CUDART_SM80_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_EMU_SO)

# The same plugin with the fp8 files built for the SM 8.9+ conversions (the
# cvt instructions' emulated twins, ATTN_FP8_UNIT 1) instead of SM 8.0's bit moves.
CUDA_EMU_FP8HW_DIR := $(BUILD)/emu-plugins-fp8hw
CUDA_EMU_FP8HW_SO := $(CUDA_EMU_FP8HW_DIR)/cuda_attn.so
CUDA_EMU_FP8HW_CU := decode_reg save_kv_fp8 extend_mma
$(CUDA_EMU_OBJ)/fp8hw/%.emu.o: $(CUDA_EMU_OBJ)/%.emu.cpp $(CUDA_EMU_DEPS)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -DEMU_FP8_HW_CVT -Iplugins/cuda/mha -c $< -o $@
$(CUDA_EMU_FP8HW_SO): $(filter-out %.cu.o,$(CUDA_ATTN_OBJS)) \
                      $(filter-out $(addprefix $(CUDA_EMU_OBJ)/,$(CUDA_EMU_FP8HW_CU:=.emu.o)),$(CUDA_EMU_KERNELS)) \
                      $(addprefix $(CUDA_EMU_OBJ)/fp8hw/,$(CUDA_EMU_FP8HW_CU:=.emu.o)) $(CUDA_EMU_OBJ)/wgmma_absent.o \
                      $(EMU_SIMT_OBJ) $(EMU_CUDART_SM80_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_EMU_FP8HW_SO)

# tests/cuda/test_cuda_graph.c over the emulated plugin (GRAPH_EMU: the
# runtime calls go to the plugin's emulated runtime, which records and
# replays the graph): decode and verify (tree and chain) capture / replay.
CUDA_EMU_GRAPH := $(TESTDIR)/test_cuda_graph_emu
$(CUDA_EMU_OBJ)/test_cuda_graph_emu.o: tests/cuda/test_cuda_graph.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CUDA_CFLAGS) -DGRAPH_EMU -DCUDA_ATTN_SO='"$(CUDA_EMU_SO)"' -MMD -MP -c $< -o $@
$(CUDA_EMU_GRAPH): $(CUDA_EMU_OBJ)/test_cuda_graph_emu.o | $(CUDA_EMU_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl -lm
ALL += $(CUDA_EMU_GRAPH)

# The same kernels plus the sm_90a wgmma extend (extend_wgmma_sm90.cu, its
# wgmma, mbarriers, TMA and setmaxnreg on their LK_EMU twins in
# wgmma_sm90.cuh) over the runtime that reports SM 9.0 with the H200's limits
# and emulates the driver's tensor map encoder: create chooses the wgmma
# extend (TMA producer for pages of a multiple of 16 tokens, cp.async for the
# rest) and forward_ragged's wgmma kernels, as on an H200.
CUDA_EMU_SM90_DIR := $(BUILD)/emu-plugins-sm90
CUDA_EMU_SM90_SO := $(CUDA_EMU_SM90_DIR)/cuda_attn.so
$(CUDA_EMU_SM90_SO): $(filter-out %.cu.o,$(CUDA_ATTN_OBJS)) $(CUDA_EMU_KERNELS) $(CUDA_EMU_OBJ)/extend_wgmma_sm90.emu.o \
                     $(EMU_SIMT_OBJ) $(EMU_CUDART_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_EMU_SM90_SO)
# The Hopper primitives' own test (SS / RS wgmma, held accumulators, TMA +
# mbarrier, the deadlock abort), before the kernel runs on them.
WGMMA_EMU_TEST := $(TESTDIR)/test_wgmma_emu
$(CUDA_EMU_OBJ)/test_wgmma_emu.o: tests/cuda_emu/test_wgmma_emu.cpp $(CUDA_EMU_DEPS)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mha -c $< -o $@
$(WGMMA_EMU_TEST): $(CUDA_EMU_OBJ)/test_wgmma_emu.o $(EMU_SIMT_OBJ) $(EMU_CUDART_OBJ)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(WGMMA_EMU_TEST)
# The graph test again over the SM 9.0 build: verify and decode graphs whose
# captured extends are the wgmma kernels (TMA producer at page 16).
CUDA_EMU_GRAPH_SM90 := $(TESTDIR)/test_cuda_graph_emu_sm90
$(CUDA_EMU_OBJ)/test_cuda_graph_emu_sm90.o: tests/cuda/test_cuda_graph.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CUDA_CFLAGS) -DGRAPH_EMU -DCUDA_ATTN_SO='"$(CUDA_EMU_SM90_SO)"' -MMD -MP -c $< -o $@
$(CUDA_EMU_GRAPH_SM90): $(CUDA_EMU_OBJ)/test_cuda_graph_emu_sm90.o | $(CUDA_EMU_SM90_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka -ldl -lm
ALL += $(CUDA_EMU_GRAPH_SM90)
cuda_attn_emu: $(CUDA_EMU_SO) $(CUDA_EMU_FP8HW_SO) $(CUDA_EMU_SM90_SO) $(WGMMA_EMU_TEST) $(CUDA_EMU_GRAPH_SM90)

# The step (about 200 s of one core): the graph test above, the harness's whole matrix with the
# defaults on SM 8.0 (the mma extend, the register-fed decode and the mma one at
# head dim 256, dual chunk, the tree mask packing, forward_ragged and its plan,
# fp8 decode, extend and verify and save_kv_fp8, the plans and save_kv), the quick matrix with
# kernel=mma (the mma decode everywhere) and kernel=portable (the kernels
# hip_attn shares), the fp8 cases on the SM 8.9+ conversions, the fp8 decode cases and
# two that the wave rule splits further (the 6-blocks-per-SM fp8 kernel) on the
# SM 9.0 build with the blocks shuffled and reversed, the decode cases on SM 9.0 with
# three whose splits the 16-bit decode merges from its weights table, shuffled and reversed
# (the matrix's decodes save their new tokens: on a 16-bit pool the register-fed decode
# saves them in its grid, the pools checked exactly), the 16-bit register-fed decode
# without a save (save=0: the kernel without it, the pool left as it was) on SM 8.0 and,
# shuffled and reversed, on SM 9.0, the Hopper
# primitives' test, and the whole matrix on the SM 9.0 build (the wgmma extend
# with its TMA and cp.async producers, tree verify with the mask words one tile
# ahead, verify on head pairs at the even GQA groups, the wgmma forward_ragged at
# qk 128 / 192; the cases it does not serve take the mma extend as on an H200)
# with every grid's blocks shuffled (about 50 s of the step), then its fp8 cases
# and quick matrix again with the driver's tensor map encoder refusing every map
# and absent (EMU_TMAP=refuse / absent: every TMA producer, the fp8 split
# extend's new rows among them, falls back to cp.async; about 35 s).  The
# SM 9.0 matrix's 16-bit d128 extends without a prefix run the direct extend
# (new tokens from k / v on the ragged wgmma, save-KV as its programmatic
# dependent), those with one the save then the paged wgmma extend.  Then the fp8 cases
# (the fp8 split's prefix on the wgmma extend's F8 form, its byte ring filled
# by cp.async) with the blocks shuffled and reversed, and a batch of 384 prefix pairs (more than
# the emulated 132 SMs: the producer's cursor crosses pairs) and a chain
# verify (causal: the split serves it) each way.  Then the direct extend's batches (two with more
# pairs than SMs), both producers.  EMU_ORDER=rev
# / shuf runs every grid's blocks in reverse / shuffled order.
CUDA_EMU_CHECK = $(ATTNCTL) check --plugin-path $(CUDA_EMU_PLUGDIR) --plugin cuda_attn
# 16-bit register-fed decodes that save nothing (save=0: the decode kernel without the save,
# no save-KV launch): d128 / d64, GQA 4 / MQA / MHA, one split and several
CUDA_EMU_DEC16_NOSAVE_CASES := --case decode:b=4,l=600,hq=8,hkv=2,d=128,dtype=bf16,page=16,save=0,ragged=1 \
  --case decode:b=3,l=500,hq=8,hkv=1,d=64,dtype=f16,page=1,save=0 \
  --case decode:b=1,l=3000,hq=8,hkv=8,d=128,dtype=f16,page=64,save=0
# fp8 decodes that the wave rule splits further on the SM 9.0 build's 132 SMs (6 splits a
# request each, where a 16-bit pool's plan gives 4)
CUDA_EMU_FP8_SPLIT_CASES := --case decode:b=16,l=2048,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16 \
                            --case decode:b=32,l=1024,hq=16,hkv=4,d=64,dtype=f16,kvdtype=fp8_e4m3,page=1
# tree verify with sglang's EAGLE mask over prefixes of several 128-column tiles (the wgmma
# extend runs the tiles before the first partial word unmasked), page 1 / 16 / 32,
# GQA groups 4 and 3, and a random tree
CUDA_EMU_EAGLE_CASES := --case verify:b=3,l=1500,q=64,hq=32,hkv=8,d=128,dtype=bf16,page=16,tree=2,ragged=1 \
                        --case verify:b=2,l=1100,q=64,hq=8,hkv=2,d=128,dtype=bf16,page=1,tree=2 \
                        --case verify:b=2,l=1000,q=48,hq=6,hkv=2,d=128,dtype=f16,page=16,tree=2 \
                        --case verify:b=3,l=900,q=32,hq=8,hkv=2,d=128,dtype=bf16,page=16,tree=1,ragged=1 \
                        --case verify:b=2,l=1300,q=64,hq=8,hkv=2,d=128,dtype=bf16,page=32,tree=2
# forward_ragged at qk 192 over several 64-column tiles: ragged lengths with a longer K, not
# causal, one long request, no LSE, a single query row at a page-offset start, and a qk 128 control
CUDA_EMU_RAGGED192_CASES := --case ragged:b=3,lq=700,lk=1500,hq=16,hkv=16,d=192,dv=128,dtype=bf16,ragged=1 \
  --case ragged:b=2,lq=1000,lk=1000,hq=16,hkv=16,d=192,dv=128,dtype=f16,causal=0,ragged=1 \
  --case ragged:b=1,lq=2048,hq=16,hkv=16,d=192,dv=128,dtype=bf16 \
  --case ragged:b=5,lq=333,lk=900,hq=16,hkv=16,d=192,dv=128,dtype=bf16,lse=0,ragged=1 \
  --case ragged:b=2,lq=1,lk=3000,hq=16,hkv=16,d=192,dv=128,dtype=bf16,idx=64 \
  --case ragged:b=4,lq=200,lk=600,hq=8,hkv=2,d=128,dtype=bf16,ragged=1
# 16-bit decodes whose splits the register-fed decode merges from a weights table on the SM 9.0
# build's 132 SMs: d128 B 16 L 2048 (4 splits a request), d64 with sinks
# (23 splits), and one request of 156 splits (over the table's 64: the loop serves it)
CUDA_EMU_DEC16_CASES := --case decode:b=16,l=2048,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=bf16,page=16 \
                        --case decode:b=2,l=3000,hq=16,hkv=2,d=64,dtype=bf16,page=16,sinks=1 \
                        --case decode:b=1,l=20000,hq=8,hkv=1,d=128,dtype=f16,page=1
# The direct extend's kinds of batch (no prefix, d128: page 1 / 16, GQA, f16 / bf16, ragged lengths,
# page table + slot map, the LSE output) and two batches of more pairs than the emulated 132 SMs
# (each block walks several pairs, so the Q buffer turns over)
CUDA_EMU_DIRECT_CASES := --case extend:b=2,l=256,q=256,hq=16,hkv=16,d=128,dtype=bf16,page=16 \
  --case extend:b=1,l=256,q=256,hq=16,hkv=16,d=128,dtype=bf16,page=1 \
  --case extend:b=3,l=300,q=300,hq=8,hkv=2,d=128,dtype=f16,page=16,ragged=1 \
  --case extend:b=2,l=200,q=200,hq=32,hkv=8,d=128,dtype=bf16,page=1 \
  --case extend:b=2,l=300,q=300,hq=8,hkv=2,d=128,dtype=bf16,page=16,smap=1,ptable=1 \
  --case lse:op=extend,b=2,l=200,q=200,hq=8,hkv=2,d=128,dtype=bf16,page=16 \
  --case extend:b=4,l=640,q=640,hq=16,hkv=16,d=128,dtype=bf16,page=16 \
  --case extend:b=6,l=520,q=520,hq=16,hkv=4,d=128,dtype=f16,page=1
# The wgmma extend at head dims 64 and 256 (the SM 9.0 build's default there;
# the whole matrix's d64 / d256 cases run it in the shuffled SM 9.0 step, and
# the SM 8.0 build's whole matrix runs the mma extend at those dims): pages
# 1 / 16 / 64, ragged lengths, GQA and MHA, causal and not, window and sinks,
# tree verify, the LSE, two batches with more pairs than the 132 emulated SMs
# (each block turns its Q tile and K/V ring over)
CUDA_EMU_WGDIMS_CASES := --case extend:b=3,l=400,q=150,hq=8,hkv=2,d=64,dtype=bf16,page=1 \
  --case extend:b=2,l=300,q=300,hq=8,hkv=2,d=64,dtype=f16,page=64 \
  --case extend:b=2,l=300,q=300,hq=8,hkv=2,d=64,dtype=bf16,page=16,attn=2 \
  --case extend:b=3,l=333,q=141,hq=4,hkv=1,d=256,dtype=bf16,page=16,ragged=1 \
  --case extend:b=2,l=200,q=200,hq=4,hkv=2,d=256,dtype=f16,page=1 \
  --case extend:b=2,l=260,q=130,hq=4,hkv=4,d=256,dtype=bf16,page=64,attn=1 \
  --case extend:b=2,l=400,q=200,hq=4,hkv=2,d=256,dtype=f16,page=16,window=100,sinks=1 \
  --case verify:b=2,l=600,q=24,hq=8,hkv=2,d=64,dtype=f16,page=16,tree=2 \
  --case verify:b=2,l=500,q=16,hq=4,hkv=2,d=256,dtype=bf16,page=16,tree=1 \
  --case lse:op=extend,b=2,l=200,q=200,hq=8,hkv=2,d=256,dtype=bf16,page=16 \
  --case extend:b=4,l=300,q=300,hq=32,hkv=8,d=64,dtype=bf16,page=16 \
  --case extend:b=3,l=300,q=300,hq=16,hkv=4,d=256,dtype=f16,page=16
# its step (a prerequisite of cuda-attn-emu; alone: make cuda-attn-emu-wgdims)
cuda-attn-emu-wgdims: $(ATTNCTL) $(CUDA_EMU_SM90_SO)
	@echo "== cuda_attn on the emulator, SM 9.0: the wgmma extend at d64 / d256 (more batches at those dims: TMA shuffled, cp.async reversed)"
	EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	  $(CUDA_EMU_WGDIMS_CASES)
	EMU_TMAP=refuse EMU_ORDER=rev $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	  $(CUDA_EMU_WGDIMS_CASES)
.PHONY: cuda-attn-emu-wgdims
cuda-attn-emu: $(ATTNCTL) $(CUDA_EMU_SO) $(CUDA_EMU_FP8HW_SO) $(CUDA_EMU_GRAPH) $(CUDA_EMU_SM90_SO) $(WGMMA_EMU_TEST) \
               $(CUDA_EMU_GRAPH_SM90) cuda-attn-emu-wgdims
	@echo "== cuda_attn on the emulator: graph capture / replay of decode and verify (test_cuda_graph_emu)"
	$(CUDA_EMU_GRAPH)
	@echo "== cuda_attn on the emulator, kernel=auto (the whole matrix)"
	$(CUDA_EMU_CHECK) --no-conf
	@set -e; for k in mma portable; do \
	  echo "== cuda_attn on the emulator, kernel=$$k (the quick matrix)"; \
	  $(CUDA_EMU_CHECK) --conf tests/cuda_emu/conf_$$k.json --quick; done
	@echo "== cuda_attn on the emulator, fp8 with the SM 8.9+ conversions (the whole matrix's fp8 cases)"
	$(ATTNCTL) check --plugin-path $(CUDA_EMU_FP8HW_DIR) --plugin cuda_attn --no-conf --filter 'fp8'
	@set -e; for o in shuf rev; do \
	  echo "== cuda_attn on the emulator, SM 9.0: the fp8 decode cases and two whose splits the wave rule sets, EMU_ORDER=$$o"; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --filter 'decode.*fp8_e4m3'; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf $(CUDA_EMU_FP8_SPLIT_CASES); done
	@set -e; for o in shuf rev; do \
	  echo "== cuda_attn on the emulator, SM 9.0: the decode cases and three whose splits the 16-bit decode merges from its weights table, EMU_ORDER=$$o"; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --filter decode; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    $(CUDA_EMU_DEC16_CASES); done
	@echo "== cuda_attn on the emulator: the 16-bit register-fed decode without a save (save=0), SM 8.0, then SM 9.0 shuffled and reversed"
	$(CUDA_EMU_CHECK) --no-conf $(CUDA_EMU_DEC16_NOSAVE_CASES)
	@set -e; for o in shuf rev; do \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    $(CUDA_EMU_DEC16_NOSAVE_CASES); done
	$(WGMMA_EMU_TEST)
	@echo "== cuda_attn on the emulator, SM 9.0: the wgmma extend, kernel=auto, blocks shuffled (the whole matrix)"
	EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf
	@set -e; for t in refuse absent; do \
	  echo "== cuda_attn on the emulator, SM 9.0, EMU_TMAP=$$t: the TMA producers' cp.async fallbacks (the fp8 cases, the split extend's among them, and the quick matrix), blocks shuffled"; \
	  EMU_TMAP=$$t EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --filter 'fp8'; \
	  EMU_TMAP=$$t EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --quick; done
	@set -e; for o in shuf rev; do \
	  echo "== cuda_attn on the emulator, SM 9.0: the fp8 split's prefix on the wgmma extend's F8 form (its byte ring), EMU_ORDER=$$o (the fp8 cases)"; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --filter fp8_e4m3; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    --case extend:b=6,l=400,q=150,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16 \
	    --case verify:b=3,l=700,q=4,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16; done
	@set -e; for o in shuf rev; do \
	  echo "== cuda_attn on the emulator, SM 9.0: forward_ragged (qk 192 on 64-column tiles, four stages), EMU_ORDER=$$o (the ragged and LSE cases and multi-tile qk 192 batches; cp.async with EMU_TMAP=refuse)"; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    --filter '^ragged:|^lse:'; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    $(CUDA_EMU_RAGGED192_CASES); \
	  EMU_TMAP=refuse EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    --filter '^ragged:'; done
	@echo "== cuda_attn on the emulator, SM 9.0: the direct extend's batches, TMA row boxes (blocks shuffled) and cp.async (reversed)"
	EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	  $(CUDA_EMU_DIRECT_CASES)
	EMU_TMAP=refuse EMU_ORDER=rev $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	  $(CUDA_EMU_DIRECT_CASES)
	@echo "== cuda_attn on the emulator, SM 9.0: decode and verify graphs over the wgmma extend (quick: kernel auto, portable)"
	SGL_ATTN_TEST_QUICK=1 $(CUDA_EMU_GRAPH_SM90)
	@set -e; for o in shuf rev; do \
	  echo "== cuda_attn on the emulator, SM 9.0: tree verify's full prefix tiles unmasked, EMU_ORDER=$$o (the verify / tree / draft / attn cases and longer EAGLE prefixes)"; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    --filter 'verify|tree|draft|attn='; \
	  EMU_ORDER=$$o $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf \
	    $(CUDA_EMU_EAGLE_CASES); done
TEST_STEPS += cuda-attn-emu
# sanitize-asan's part (tests/sanitize/module.mk): the quick matrix with the
# defaults under ASan + UBSan, cuda_attn's (SM 8.0, then the Hopper
# primitives' test and the SM 9.0 build with the wgmma extend) then
# cuda_mla's, where the runtime's
# exact-size host allocations show any read or write of a kernel past a tensor
# or scratch buffer.
CUDA_EMU_ASAN = @echo "== asan attnctl check: cuda_attn on the emulator (the quick matrix)"; \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(CUDA_EMU_CHECK) --no-conf --quick && \
  echo "== asan test_cuda_graph_emu: decode and verify graphs on the emulator (quick: kernel auto, portable)" && \
  env $(SAN_ENV) $(ASAN_RUN_ENV) SGL_ATTN_TEST_QUICK=1 $(CUDA_EMU_GRAPH) && \
  echo "== asan: the emulator's Hopper primitives (test_wgmma_emu)" && \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(WGMMA_EMU_TEST) && \
  echo "== asan attnctl check: cuda_attn on the emulator, SM 9.0: the wgmma extend (the quick matrix)" && \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(ATTNCTL) check --plugin-path $(CUDA_EMU_SM90_DIR) --plugin cuda_attn --no-conf --quick && \
  echo "== asan attnctl check: cuda_mla on the emulator (the quick matrix)" && \
  env $(SAN_ENV) $(ASAN_RUN_ENV) $(CUDA_MLA_EMU_CHECK) --no-conf --quick

# cuda_mla the same way, in the same folder: its mma.sync kernels (decode,
# verify and extend over the plan, DeepSeek sparse MLA over topk_indices), the
# simple kernel, the combine, save_kv, the item check and the sm_90a wide
# kernel, emulated (the SM 8.0 runtime never selects the wide kernel, as an
# A100 never does).  The inline PTX has its twin under #ifdef LK_EMU in
# mla_mma_ops.cuh, mla_wgmma_ops.cuh, mla_decode_mma.cu and
# mla_decode_wide_sm90.cu.
CUDA_MLA_EMU_OBJ := $(OBJDIR)/tests/cuda_emu/mla
CUDA_MLA_EMU_SO := $(CUDA_EMU_PLUGDIR)/cuda_mla.so
CUDA_MLA_EMU_CU := $(CUDA_MLA_CU)
CUDA_MLA_EMU_KERNELS := $(addprefix $(CUDA_MLA_EMU_OBJ)/,$(CUDA_MLA_EMU_CU:.cu=.emu.o))
CUDA_MLA_EMU_DEPS := $(wildcard plugins/cuda/mla/*.cuh plugins/cuda/mla/*.h) plugins/sdk/gpu_compat.h \
                     plugins/sdk/gpu_fault.h $(EMU_DIR)/emu_prelude.h $(EMU_DIR)/emu_sm90.h

$(CUDA_MLA_EMU_OBJ)/%.emu.cpp: plugins/cuda/mla/%.cu $(EMU_DIR)/emu_cu.py
	@mkdir -p $(@D)
	python3 $(EMU_DIR)/emu_cu.py $< $@
$(CUDA_MLA_EMU_OBJ)/%.emu.o: $(CUDA_MLA_EMU_OBJ)/%.emu.cpp $(CUDA_MLA_EMU_DEPS)
	$(CXX) $(EMU_CXXFLAGS) -Iplugins/cuda/mla -c $< -o $@
# (the wide kernel takes the 128-byte-aligned CUtensorMap by value: g++'s note
# on that ABI, which GCC changed in 4.6, concerns no caller here)
$(CUDA_MLA_EMU_OBJ)/mla_decode_wide_sm90.emu.o: EMU_CXXFLAGS += -Wno-psabi
.SECONDARY: $(CUDA_MLA_EMU_KERNELS:.o=.cpp)

$(CUDA_MLA_EMU_SO): $(filter-out %.cu.o,$(CUDA_MLA_OBJS)) $(CUDA_MLA_EMU_KERNELS) \
                    $(EMU_SIMT_OBJ) $(EMU_CUDART_SM80_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_MLA_EMU_SO)

# The same objects over the runtime that reports SM 9.0 with the H200's
# shared memory and the tensor map encoder: kernel=auto chooses as on an
# H200, the wide kernel (wgmma, TMA boxes, mbarriers) for 64-row tiles of a
# bf16 pool at page 16, 32 or a multiple of 64, and the mma kernel's
# bulk-copy configuration (cp.async.bulk on mbarriers) for 16-row tiles;
# with mma=ring, the page-table ring at 16-row tiles and two 32-row blocks an
# SM (MLA_MMA_TWO) fit and run, the configurations an H200 asked for ring and
# SM 10.x run (A100's opt-in fits neither).
CUDA_MLA_EMU_SM90_DIR := $(BUILD)/emu-plugins-sm90
CUDA_MLA_EMU_SM90_SO := $(CUDA_MLA_EMU_SM90_DIR)/cuda_mla.so
$(CUDA_MLA_EMU_SM90_SO): $(filter-out %.cu.o,$(CUDA_MLA_OBJS)) $(CUDA_MLA_EMU_KERNELS) \
                         $(EMU_SIMT_OBJ) $(EMU_CUDART_OBJ) $(SDK_CUDA_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,--no-undefined $(LDFLAGS_COMMON) -o $@ $^ -lm
ALL += $(CUDA_MLA_EMU_SM90_SO)
cuda_mla_emu: $(CUDA_MLA_EMU_SO) $(CUDA_MLA_EMU_SM90_SO)

# The step (about 195 s of one core): the harness's whole matrix with the
# defaults on SM 8.0 (the mma kernel's base configuration at 16- and 64-row
# tiles, split tiles and the combine, tree verify, draft extend, the rope
# split, sparse MLA and its combine, fp8 pools on the simple kernel, save_kv,
# the item check), the whole matrix on the SM 9.0 runtime with the defaults,
# blocks shuffled (the wide kernel at 64-token pages, a 16- and a 32-token
# page case after it for its smaller TMA boxes, and the mma kernel's bulk
# copies: about 45 s), the whole matrix on the SM 9.0 runtime with mma=ring
# (ring and two), the dense MLA cases with kernel=simple (its tree mask
# instantiation among them; sparse MLA has its own kernel whatever is asked),
# and the quick matrix with every grid's blocks shuffled (EMU_ORDER=shuf); the
# DSA indexer's cases (in the whole matrix above) again with a 1 MB score
# scratch, so a batch's tokens take several passes, blocks shuffled.  The
# sparse cases on SM 8.0 (the 64-row kernel), blocks shuffled; on the SM 9.0
# runtime (where 16-bit pools at > 16 heads run the 4-warp 32-row kernel, two
# CTAs an SM) that kernel's own cases shuffled and reversed: a 16-way split of topk
# 2048 (token 0's row all -1, token 1's a quarter -1), partial last tiles
# (topk 200, 333, 20), 40 heads (a second block of 8 rows), 24 heads in f16,
# 64-head verify, a 128-head extend; a record case keeps the 64-row kernel.
CUDA_MLA_EMU_CHECK = $(ATTNCTL) check --plugin-path $(CUDA_EMU_PLUGDIR) --plugin cuda_mla
CUDA_MLA_EMU_SM90_CHECK = $(ATTNCTL) check --plugin-path $(CUDA_MLA_EMU_SM90_DIR) --plugin cuda_mla --no-conf
CUDA_MLA_EMU_SPARSE_2CTA_CASES := \
  --case 'sparse_decode:b=2,l=3000,hq=128,dtype=bf16,page=64,topk=2048,neg=1' \
  --case 'sparse_decode:b=3,l=700,hq=128,dtype=bf16,page=16,topk=200,neg=1,ragged=1' \
  --case 'sparse_decode:b=2,l=500,hq=40,dtype=bf16,page=1,topk=333,neg=1' \
  --case 'sparse_decode:b=2,l=100,hq=128,dtype=bf16,page=64,topk=20,neg=1' \
  --case 'sparse_decode:b=2,l=300,hq=24,dtype=f16,page=16,topk=512' \
  --case 'sparse_verify:b=2,l=400,q=3,hq=64,dtype=bf16,page=64,topk=128' \
  --case 'sparse_extend:b=2,l=300,q=20,hq=128,dtype=bf16,page=64,topk=512,neg=1,ragged=1' \
  --case 'sparse_decode:b=2,l=500,hq=40,dtype=bf16,page=64,topk=256,neg=1,rec=1'
cuda-mla-emu: $(ATTNCTL) $(CUDA_MLA_EMU_SO) $(CUDA_MLA_EMU_SM90_SO)
	@echo "== cuda_mla on the emulator, kernel=auto (the whole matrix)"
	$(CUDA_MLA_EMU_CHECK) --no-conf
	@echo "== cuda_mla on the emulator, SM 9.0, kernel=auto as on an H200 (wide kernel, bulk-copy mma), blocks shuffled (the whole matrix)"
	EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_MLA_EMU_SM90_DIR) --plugin cuda_mla --no-conf
	@echo "== cuda_mla on the emulator, SM 9.0: the wide kernel at 16- and 32-token pages (TMA boxes of 16 / 32 rows), blocks shuffled"
	EMU_ORDER=shuf $(ATTNCTL) check --plugin-path $(CUDA_MLA_EMU_SM90_DIR) --plugin cuda_mla --no-conf \
	  --case 'extend:b=2,l=300,q=100,hq=16,mla=1,dtype=bf16,page=16,ragged=1' \
	  --case 'decode:b=2,l=500,hq=128,mla=1,dtype=bf16,page=32' --case 'verify:b=2,l=333,q=4,hq=32,mla=1,dtype=bf16,page=16'
	@echo "== cuda_mla on the emulator, SM 9.0's limits, kernel=mma, mma=ring (the whole matrix)"
	$(ATTNCTL) check --plugin-path $(CUDA_MLA_EMU_SM90_DIR) --plugin cuda_mla --conf tests/cuda_emu/conf_mla_ring.json
	@echo "== cuda_mla on the emulator, kernel=simple (the whole matrix's dense MLA cases)"
	$(CUDA_MLA_EMU_CHECK) --conf tests/cuda_emu/conf_mla_simple.json --filter 'mla=1|ropesplit'
	@echo "== cuda_mla on the emulator, kernel=auto, blocks shuffled (the quick matrix)"
	EMU_ORDER=shuf $(CUDA_MLA_EMU_CHECK) --no-conf --quick
	@echo "== cuda_mla's DSA indexer on the emulator, a 1 MB score scratch (several passes), blocks shuffled"
	EMU_ORDER=shuf $(CUDA_MLA_EMU_CHECK) --conf tests/cuda_emu/conf_mla_idx_rows.json --filter '^indexer_'
	@echo "== cuda_mla on the emulator, defaults: the sparse cases, blocks shuffled (SM 8.0: 64-row kernel), then the SM 9.0 2-CTA kernel's own cases shuffled and reversed"
	EMU_ORDER=shuf $(CUDA_MLA_EMU_CHECK) --no-conf --filter '^sparse_'
	EMU_ORDER=shuf $(CUDA_MLA_EMU_SM90_CHECK) $(CUDA_MLA_EMU_SPARSE_2CTA_CASES)
	EMU_ORDER=rev $(CUDA_MLA_EMU_SM90_CHECK) $(CUDA_MLA_EMU_SPARSE_2CTA_CASES)
TEST_STEPS += cuda-mla-emu

else
SKIPPED += cuda_attn_emu cuda_mla_emu
SKIP_WHY_cuda_attn_emu := $(NO_NVCC_WHY) (the emulated cuda_attn reuses the plugin's build)
SKIP_WHY_cuda_mla_emu := $(NO_NVCC_WHY) (the emulated cuda_mla reuses the plugin's build)
cuda_attn_emu cuda-attn-emu:
	@echo "cuda_attn_emu skipped: $(SKIP_WHY_cuda_attn_emu)"
cuda_mla_emu cuda-mla-emu:
	@echo "cuda_mla_emu skipped: $(SKIP_WHY_cuda_mla_emu)"
endif
.PHONY: cuda_attn_emu cuda-attn-emu cuda_mla_emu cuda-mla-emu
