# sglattn - top-level build.  Each directory owns a module.mk fragment that
# appends to the lists below; this file holds only the shared conventions.
#
#   make            build everything this machine can build (says what it skipped)
#   make demo       list plugins, then a real attention run on the CPU default
#   make test       the whole suite: unit tests, conformance, sanitizers, valgrind
#   make install PREFIX=/usr/local
#
# Build layout mirrors the install layout, so the library finds its plugins
# and conf relative to itself in both:
#   $(BUILD)/lib/libsglattn.so.1   $(BUILD)/lib/sglattn/plugins/*.so
#   $(BUILD)/bin/attnctl           $(BUILD)/etc/sglattn/sglattn.json
#   $(BUILD)/include/sglattn/*.h   $(BUILD)/tests/*

.DEFAULT_GOAL := all
SHELL := /bin/bash
# Every rule is written out: no built-in ones (their `%: %.o` would try to
# "remake" a dependency file such as entry.gdn.d from an entry.gdn.d.o).
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:

SAN ?=
ifeq ($(SAN),asan)
  BUILD ?= build-asan
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SAN),tsan)
  BUILD ?= build-tsan
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
  BUILD ?= build
  SANFLAGS :=
endif

PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0
SOMAJOR := 1

CC ?= cc
CSTD := -std=c11 -D_GNU_SOURCE
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
OPT ?= -O2 -g
CFLAGS_BASE := $(CSTD) $(WARN) $(OPT) -fPIC -pthread -fvisibility=hidden $(SANFLAGS)
# Include paths by who compiles the source ($<): a plugin sees abi/ and the
# plugin SDK only (`make plugin-includes` checks it); the host and attnctl see
# abi/ and host/; tests and bench, which reach into both, see all three.
INC_PLUGIN := -Iabi -Iplugins/sdk
INC_HOST := -Iabi -Ihost
INC_TEST := -Iabi -Ihost -Iplugins/sdk
inc_for = $(if $(filter plugins/% $(OBJDIR)/plugins/%,$(1)),$(INC_PLUGIN),$(if $(filter tests/% bench/%,$(1)),$(INC_TEST),$(INC_HOST)))
CFLAGS_COMMON = $(CFLAGS_BASE) $(call inc_for,$<)
LDFLAGS_COMMON := -pthread $(SANFLAGS)

LIBDIR := $(BUILD)/lib
BINDIR := $(BUILD)/bin
PLUGDIR := $(LIBDIR)/sglattn/plugins
TESTDIR := $(BUILD)/tests
OBJDIR := $(BUILD)/obj
ETCDIR := $(BUILD)/etc/sglattn
INCDIR := $(BUILD)/include/sglattn

LIBSGLATTN := $(LIBDIR)/libsglattn.so.$(SOMAJOR)
ATTNCTL := $(BINDIR)/attnctl

# Toolchains, found once.  Absent ones are skipped with a message.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
HIPCC ?= $(shell command -v hipcc 2>/dev/null)
HAVE_OPENCL := $(shell test -f /usr/include/CL/cl.h && echo 1)
HAVE_ZE := $(shell test -f /usr/include/level_zero/ze_api.h && echo 1)

# Lists the fragments append to.
ALL :=          # everything `make` builds
PLUGINS :=      # plugin .so files (in $(PLUGDIR))
TESTS :=        # cmocka test executables run by `make unit`
SKIPPED :=      # names of parts not built; SKIP_WHY_<name> says why
INSTALL_HOOKS :=
TEST_STEPS :=   # phony targets `make test` runs, in order (unit first)

# The plugin SDK (plugins/sdk/, built by its module.mk): libsglattn embeds
# cpu_ref and validate with the SDK's objects; a plugin .so links the archive.
SDK_OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(sort $(wildcard plugins/sdk/*.c)))
SDK_LIB := $(OBJDIR)/plugins/sdk/libsglsdk.a

# Object rule shared by all C sources: $(OBJDIR)/<path>.o from <path>.c
$(OBJDIR)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_$(subst /,_,$(dir $<))) -MMD -MP -c $< -o $@

# The CUDA toolchain and the SDK's CUDA glue: read first, because the
# fragments below test HAVE_CUDA as they are read.
include plugins/sdk/cuda/cuda.mk
include $(sort $(wildcard */module.mk) $(wildcard plugins/*/module.mk) $(wildcard plugins/*/*/module.mk) \
                $(wildcard tests/*/module.mk) $(wildcard examples/*/module.mk))

all: $(ALL)
	@$(foreach s,$(SKIPPED),echo "skipped $(s): $(SKIP_WHY_$(s))";) true

-include $(shell test -d $(OBJDIR) && find $(OBJDIR) -name '*.d' 2>/dev/null)

# Every cmocka test binary, one after the other; the first failure stops.
unit: $(ALL) $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; $$t; done

# The whole suite, step by step (each module appends its steps).
test:
	@set -e; for s in unit $(TEST_STEPS); do echo "==== make $$s"; $(MAKE) --no-print-directory $$s; done

clean:
	rm -rf build build-asan build-tsan build-fuzz

.PHONY: all clean demo test unit install
