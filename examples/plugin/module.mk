# examples/plugin - the third-party plugin of docs/abi.md, built by its own
# Makefile (with -I abi only, as an outside author builds it) into the build
# tree's tests dir, then loaded by the real host through SGL_ATTN_PLUGIN_PATH
# and checked against the float64 reference.
#
#   make example-plugin   build, list, `attnctl check --plugin naive_attn --quick`,
#                         and the decode/verify cases again under valgrind

EXAMPLE_PLUGIN_DIR := $(abspath $(TESTDIR))/example-plugin
EXAMPLE_PLUGIN_SO := $(EXAMPLE_PLUGIN_DIR)/naive_attn.so
EXAMPLE_PLUGIN_ENV := env SGL_ATTN_PLUGIN_PATH=$(EXAMPLE_PLUGIN_DIR) SGL_ATTN_NO_UNLOAD=1
EXAMPLE_PLUGIN_VALGRIND := valgrind --quiet --error-exitcode=9 --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    $(addprefix --suppressions=,$(abspath $(wildcard tests/sanitize/valgrind.supp tests/xpu/pocl.supp)))

$(EXAMPLE_PLUGIN_SO): examples/plugin/naive_attn.c examples/plugin/Makefile abi/sgl_attn_abi.h
	$(MAKE) --no-print-directory -C examples/plugin OUT=$(EXAMPLE_PLUGIN_DIR) CC=$(CC) \
	    SGLATTN_CFLAGS=-I$(abspath abi)

example-plugin: $(EXAMPLE_PLUGIN_SO) $(ATTNCTL)
	@echo "== example plugin: listed by the host from SGL_ATTN_PLUGIN_PATH"
	$(EXAMPLE_PLUGIN_ENV) $(ATTNCTL) list-plugins | grep -E '^naive_attn +cpu +full +usable '
	@echo "== example plugin: attnctl check --plugin naive_attn --quick"
	$(EXAMPLE_PLUGIN_ENV) $(ATTNCTL) check --plugin naive_attn --quick
	@if command -v valgrind >/dev/null; then \
	  echo "== example plugin: decode and verify cases under valgrind"; \
	  $(EXAMPLE_PLUGIN_ENV) $(EXAMPLE_PLUGIN_VALGRIND) $(ATTNCTL) check --plugin naive_attn --quick \
	      --filter '^(decode|verify):' >/dev/null; \
	else echo "== example plugin: valgrind not installed, skipped"; fi

TEST_STEPS += example-plugin

.PHONY: example-plugin
