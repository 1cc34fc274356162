# plugins/cpu - cpu_ref, the reference CPU attention plugin (docs/cpu_ref.md).
# It is embedded in libsglattn: host/module.mk links $(CPU_REF_OBJS) and
# compiles host/embedded.c with -DSGL_ATTN_EMBED_CPU_REF.  No .so of its own.
#
#   make cpu-ref     just these objects

CPU_REF_SRCS := $(wildcard plugins/cpu/*.c)
CPU_REF_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(CPU_REF_SRCS))

# -O3; contraction into FMA (C11 mode turns it off); no trapping math, so
# the selects of the softmax and exp become vector blends instead of
# branches (results are unchanged: nothing reads FP exception flags).
CFLAGS_plugins_cpu_ := -O3 -ffp-contract=fast -fno-trapping-math

# The AVX2 variants of the loops, chosen at create on CPUs that have it.  The
# AVX-512 one is built for AVX2 too: only its bf16 loops (cref_tile512.h)
# use AVX-512, through a target pragma.
ifneq ($(filter x86_64 amd64,$(shell uname -m)),)
$(OBJDIR)/plugins/cpu/kernel_f32_avx2.o $(OBJDIR)/plugins/cpu/kernel_f64_avx2.o \
$(OBJDIR)/plugins/cpu/kernel_f32_avx512.o: CFLAGS_plugins_cpu_ += -mavx2 -mfma
endif

cpu-ref: $(CPU_REF_OBJS)
.PHONY: cpu-ref

# The top Makefile does not scan bench/*/: cpu_ref's benchmark comes with it.
include bench/cpu/module.mk
