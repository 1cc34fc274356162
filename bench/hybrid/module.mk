# bench/hybrid - GDN decode on the CPU against this machine's measured memory
# bandwidth (a benchmark, not a timed test).  `make hybrid-bench` runs it.

HYBB_BIN := $(BUILD)/bench/gdn_decode_bench
CFLAGS_bench_hybrid_ := -Iplugins/hybrid -O3

$(HYBB_BIN): $(OBJDIR)/bench/hybrid/gdn_decode_bench.o $(HYB_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lm

hybrid: $(HYBB_BIN)
hybrid-bench: $(HYBB_BIN)
	$(HYBB_BIN) --json $(BUILD)/bench/gdn_decode_cpu.json
.PHONY: hybrid-bench
