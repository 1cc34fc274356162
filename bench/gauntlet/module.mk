# bench/gauntlet - issue 4's numbers (benchmarks, not timed tests):
#   make bench-gauntlet   the plugin scan at 1,000 and 10,000 files (linear?),
#                         and the validation layer's cost per call
# Included from tests/gauntlet/module.mk (it needs the gauntlet's good plugin
# and the batch fixture).

BENCH_SCAN := $(BUILD)/bench/gauntlet_scan
BENCH_VALIDATE := $(BUILD)/bench/gauntlet_validate
CFLAGS_bench_gauntlet_ := -Itests/gauntlet

$(BENCH_SCAN): $(OBJDIR)/bench/gauntlet/bench_scan.o $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $< -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON)
$(BENCH_VALIDATE): $(OBJDIR)/bench/gauntlet/bench_validate.o $(GAUNTLET_FIXTURE_OBJS) $(VALIDATE_OBJS) \
    $(SDK_LIB) $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON) -lm

bench-gauntlet: $(BENCH_SCAN) $(BENCH_VALIDATE) $(GAUNTLET_DIR)/good.so
	$(BENCH_SCAN) $(GAUNTLET_DIR)/good.so
	$(BENCH_VALIDATE)
.PHONY: bench-gauntlet
