# bench/gauntlet - issue 4's numbers (benchmarks, not timed tests):
#   make bench-gauntlet   the plugin scan at 1,000 and 10,000 files (linear?),
#                         the validation layer's cost per call, and reading
#                         a config.json of 1 MiB and 16 MiB (linear?)
# Included from tests/gauntlet/module.mk (it needs the gauntlet's good plugin
# and the batch fixture).

BENCH_SCAN := $(BUILD)/bench/gauntlet_scan
BENCH_VALIDATE := $(BUILD)/bench/gauntlet_validate
BENCH_JSON := $(BUILD)/bench/gauntlet_json
CFLAGS_bench_gauntlet_ := -Itests/gauntlet -Itests/fuzz

$(BENCH_SCAN): $(OBJDIR)/bench/gauntlet/bench_scan.o $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $< -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON)
$(BENCH_VALIDATE): $(OBJDIR)/bench/gauntlet/bench_validate.o $(GAUNTLET_FIXTURE_OBJS) $(VALIDATE_OBJS) \
    $(SDK_LIB) $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON) -lm

$(BENCH_JSON): $(OBJDIR)/bench/gauntlet/bench_json.o $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $< -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON)

bench-gauntlet: $(BENCH_SCAN) $(BENCH_VALIDATE) $(BENCH_JSON) $(GAUNTLET_DIR)/good.so
	$(BENCH_SCAN) $(GAUNTLET_DIR)/good.so
	$(BENCH_VALIDATE)
	$(BENCH_JSON)
.PHONY: bench-gauntlet
