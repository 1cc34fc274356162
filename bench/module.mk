# bench/ - the host's own benchmark (issue 2's speed goals).  A benchmark,
# not a timed test:
#
#   make bench-host   open a host over 32 plugin files, scan a directory of
#                     10,000 non-plugin files, and time one forward call
#                     through the host against the plugin's pointer; JSON out.

BENCH_HOST := $(BUILD)/bench/bench_host

$(BENCH_HOST): $(OBJDIR)/bench/bench_host.o $(LIBSGLATTN) $(TESTDIR)/fakes/noop/noop.so | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $< -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS_COMMON)

bench-host: $(BENCH_HOST)
	$(BENCH_HOST) $(TESTDIR)/fakes/noop/noop.so

.PHONY: bench-host
