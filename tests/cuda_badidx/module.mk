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
