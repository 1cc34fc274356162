# bench/cpu - cpu_ref's decode bandwidth against this machine's memory-read
# bandwidth (issue 3's speed goal).  A benchmark, not a test:
#
#   make cpu-bench      build build/bench/cpu_decode_bw and run it

CPU_BENCH := $(BUILD)/bench/cpu_decode_bw
CPU_ICOUNT := $(BUILD)/bench/cpu_icount
CPU_BENCH_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(filter-out bench/cpu/icount.c,$(wildcard bench/cpu/*.c)))
CFLAGS_bench_cpu_ := -O3

$(CPU_BENCH): $(CPU_BENCH_OBJS) $(CPU_REF_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lm

# Instructions of the decode loops, counted by single-stepping (icount.c).
$(CPU_ICOUNT): $(OBJDIR)/bench/cpu/icount.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^

ALL += $(CPU_BENCH) $(CPU_ICOUNT)

cpu-bench: $(CPU_BENCH)
	$(CPU_BENCH)
.PHONY: cpu-bench
