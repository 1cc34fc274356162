# examples/engine - the engine example of docs/engine.md: built by its own
# Makefile against the build tree's headers and library (as an engine builds
# against an installed one), then run: it selects, creates, prefills and
# decodes a small GQA model and checks every output against float64.
#
#   make engine-example   build and run it, then again under valgrind

ENGINE_EXAMPLE := $(abspath $(TESTDIR))/engine-example/engine
ENGINE_EXAMPLE_VALGRIND := valgrind --quiet --error-exitcode=9 --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    $(addprefix --suppressions=,$(abspath $(wildcard tests/sanitize/valgrind.supp)))

$(ENGINE_EXAMPLE): examples/engine/engine.c examples/engine/Makefile $(HOST_HEADERS) $(LIBSGLATTN) | $(LIBSGLATTN_LINK)
	$(MAKE) --no-print-directory -C examples/engine OUT=$(dir $(ENGINE_EXAMPLE)) CC=$(CC) \
	    SGLATTN_CFLAGS=-I$(abspath $(INCDIR)) \
	    SGLATTN_LIBS="-L$(abspath $(LIBDIR)) -lsglattn -Wl,-rpath,$(abspath $(LIBDIR))"

engine-example: $(ENGINE_EXAMPLE) all
	@echo "== engine example: select, create, prefill, decode, errors, graphs, threads"
	env -u SGL_ATTN_PLUGIN_PATH $(ENGINE_EXAMPLE)
	@if command -v valgrind >/dev/null; then \
	  echo "== engine example under valgrind"; \
	  env -u SGL_ATTN_PLUGIN_PATH SGL_ATTN_NO_UNLOAD=1 $(ENGINE_EXAMPLE_VALGRIND) $(ENGINE_EXAMPLE) >/dev/null; \
	else echo "== engine example: valgrind not installed, skipped"; fi

TEST_STEPS += engine-example

.PHONY: engine-example
