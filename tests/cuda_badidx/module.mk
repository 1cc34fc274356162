# tests/cuda_badidx - bad device-resident indices through the CUDA plugins.
#   test_cuda_badidx   every bad index class (out-of-pool / negative / 2^31-1 /
#                      int64 >= 2^32 slots, req_to_token entries, seq_lens,
#                      req_pool_indices, extend lengths, page-table pages,
#                      slot-map entries, a cross layer's encoder_out_cache_loc)
#                      through cuda_attn
#                      (kernel auto, mma, portable) and cuda_mla, decode and
#                      extend: the pool changes only where the good tokens are
#                      saved, and the next metadata call reports the fault
#                      (GPU; prints SKIP with the probe's reason elsewhere).
#                      Plain C: the GPU machine has no cmocka.  The linear
#                      wrappers' state_indices: test_lin_gpu / test_lin_emu.
# bench/gpu/badidx.sh runs it plain and under compute-sanitizer memcheck.

ifeq ($(HAVE_CUDA),1)
CFLAGS_tests_cuda_badidx_ := -Itests/cuda_mla $(CUDA_CFLAGS)
CUDA_TEST_BADIDX := $(TESTDIR)/test_cuda_badidx
$(CUDA_TEST_BADIDX): $(OBJDIR)/tests/cuda_badidx/test_cuda_badidx.o $(OBJDIR)/tests/cuda_mla/mla_gpu_util.o \
                     | $(CUDA_ATTN_SO) $(CUDA_MLA_SO)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -ldl -lm $(CUDA_LDLIBS)
TESTS += $(CUDA_TEST_BADIDX)
endif

# The same test over the emulated plugins (tests/cuda_emu: cuda_attn and
# cuda_mla built by g++ for the CPU emulator of CUDA), linked with the
# emulator's runtime for its own buffers: every bad-index class through the
# SM 8.x kernels in `make test`, here, without a GPU (about 10 s), then again
# over the SM 9.0 runtime's plugins (emu-plugins-sm90: cuda_mla's 32-row
# two-CTA sparse kernel, which SM 8.x does not run; about 14 s).  The step
# fails unless the test ran its checks (a SKIP would pass vacuously).
ifeq ($(HAVE_CUDA),1)
CUDA_BADIDX_EMU := $(TESTDIR)/test_cuda_badidx_emu
$(CUDA_BADIDX_EMU): $(OBJDIR)/tests/cuda_badidx/test_cuda_badidx.o $(OBJDIR)/tests/cuda_mla/mla_gpu_util.o \
                    $$(EMU_CUDART_SM80_OBJ) $$(EMU_SIMT_OBJ)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $^ -ldl -lm
ALL += $(CUDA_BADIDX_EMU)

cuda-badidx-emu: $(CUDA_BADIDX_EMU) $$(CUDA_EMU_SO) $$(CUDA_MLA_EMU_SO) $$(CUDA_EMU_SM90_SO) $$(CUDA_MLA_EMU_SM90_SO)
	@for dir in $(CUDA_EMU_PLUGDIR) $(CUDA_MLA_EMU_SM90_DIR); do \
	  echo "== test_cuda_badidx on the emulated cuda_attn and cuda_mla in $$dir"; \
	  out=$$($(CUDA_BADIDX_EMU) $$dir 2>&1); rc=$$?; printf '%s\n' "$$out" | tail -3; \
	  if [ $$rc -ne 0 ]; then printf '%s\n' "$$out" | grep -v '^ok' | head -40; exit 1; fi; \
	  printf '%s\n' "$$out" | grep -Eq '^[1-9][0-9]* checks, 0 failures$$' || \
	    { echo "cuda-badidx-emu: the test did not run its checks (SKIP?)"; exit 1; }; \
	done
TEST_STEPS += cuda-badidx-emu
.PHONY: cuda-badidx-emu
endif
