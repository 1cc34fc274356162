# sglattn - top-level build.  Each directory owns a module.mk fragment that
# appends to the lists below; this file holds only the shared conventions.
#
#   make            build everything this machine can build (says what it skipped)
#   make NVCC=      the same without CUDA (nvcc is found by itself otherwise)
#   make demo       list plugins, then a real attention run on the CPU default
#   make test       the whole suite: unit tests, conformance, sanitizers, valgrind (JOBS=1: serially)
#   make install PREFIX=/usr/local      (GNU directories: prefix, libdir, sysconfdir...)
#   make uninstall PREFIX=/usr/local
#   make help       the targets and variables
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

# Install directories, GNU style: override any (make install libdir=/usr/lib64).
# PREFIX is prefix's other spelling.  With prefix /usr the conf goes to /etc.
PREFIX ?= /usr/local
prefix ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir ?= $(exec_prefix)/bin
libdir ?= $(exec_prefix)/lib
includedir ?= $(prefix)/include
sysconfdir ?= $(if $(filter /usr,$(prefix)),/etc,$(prefix)/etc)
datarootdir ?= $(prefix)/share
datadir ?= $(datarootdir)
mandir ?= $(datarootdir)/man
man1dir ?= $(mandir)/man1
bashcompletiondir ?= $(datadir)/bash-completion/completions
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
# Why the CUDA parts are skipped: NVCC= was given empty, or no nvcc was found.
NO_NVCC_WHY := $(if $(filter command line environment,$(origin NVCC)),NVCC is empty: built without CUDA (make NVCC=/path/to/nvcc builds it),nvcc not found (make NVCC=/path/to/nvcc))
HIPCC ?= $(shell command -v hipcc 2>/dev/null)
HAVE_OPENCL := $(shell test -f /usr/include/CL/cl.h && echo 1)
HAVE_ZE := $(shell test -f /usr/include/level_zero/ze_api.h && echo 1)

# Lists the fragments append to.
ALL :=          # everything `make` builds
PLUGINS :=      # plugin .so files (in $(PLUGDIR))
TESTS :=        # cmocka test executables run by `make unit`
SKIPPED :=      # names of parts not built; SKIP_WHY_<name> says why
INSTALL_HOOKS :=   # phony targets `make install` runs, each appending what it wrote to the manifest
UNINSTALL_HOOKS := # phony targets `make uninstall` runs once the manifest's files are removed
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

# The whole suite (each module appends its steps): the build at -j$(JOBS),
# then the steps in two lanes at once, the second holding the steps that build
# and run in trees of their own (tests/steps.sh; JOBS=1 runs one lane).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
TEST_OWN_TREE := sanitize-asan fuzz sanitize-tsan
test:
	@echo "==== make -j$(JOBS) (the build)"
	@$(MAKE) --no-print-directory -j$(JOBS) $(ALL) $(TESTS)
	@tests/steps.sh $(BUILD)/test-steps $(JOBS) "$(MAKE) --no-print-directory -j$(JOBS) -Otarget" \
	    "unit $(filter-out $(TEST_OWN_TREE),$(TEST_STEPS))" "$(filter $(TEST_OWN_TREE),$(TEST_STEPS))"

clean:
	rm -rf build build-asan build-tsan build-fuzz

# ------------------------------------------------------------ install
# Every file `make install` writes is listed in a manifest beside the
# plugins, so `make uninstall` removes exactly those (and nothing a user
# dropped into the plugin directory).
INSTALL_MANIFEST = $(DESTDIR)$(libdir)/sglattn/install-manifest.txt
# $(call install_file,mode,source,destination): install and record it
install_file = install -D -m $(1) $(2) $(DESTDIR)$(3) && echo '$(3)' >> $(INSTALL_MANIFEST)

install: all
	install -d $(DESTDIR)$(libdir)/sglattn
	: > $(INSTALL_MANIFEST)
	@set -e; for h in $(INSTALL_HOOKS); do $(MAKE) --no-print-directory $$h; done
	@echo "install: $$(wc -l < $(INSTALL_MANIFEST)) files under $(DESTDIR)$(prefix) (and $(DESTDIR)$(sysconfdir)); make uninstall prefix=$(prefix) removes them"

uninstall:
	@if [ ! -f $(INSTALL_MANIFEST) ]; then \
	  echo "uninstall: nothing to remove: no $(INSTALL_MANIFEST) (installed with another prefix or libdir?)"; exit 0; fi; \
	set -e; n=0; while IFS= read -r f; do \
	  case "$$f" in /*) ;; *) continue ;; esac; \
	  if [ -e "$(DESTDIR)$$f" ] || [ -L "$(DESTDIR)$$f" ]; then rm -f "$(DESTDIR)$$f"; n=$$((n + 1)); fi; \
	done < $(INSTALL_MANIFEST); \
	for h in $(UNINSTALL_HOOKS); do $(MAKE) --no-print-directory $$h; done; \
	rm -f $(INSTALL_MANIFEST); \
	for d in $(libdir)/sglattn/plugins $(libdir)/sglattn $(includedir)/sglattn $(sysconfdir)/sglattn; do \
	  rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done; \
	echo "uninstall: removed $$n files from $(DESTDIR)$(prefix)"

# ------------------------------------------------------------ help
help:
	@echo 'Targets:'
	@echo '  make                build everything this machine can build; says what it skipped and why'
	@echo '  make test           the whole suite: the build, then unit and its steps in two lanes'
	@echo '                      ($(filter-out $(TEST_OWN_TREE),$(TEST_STEPS)) | $(filter $(TEST_OWN_TREE),$(TEST_STEPS)))'
	@echo '                      JOBS=N: build jobs (default: nproc); JOBS=1 runs the steps one after another'
	@echo '  make unit           the cmocka unit tests only'
	@echo '  make <step>         one step of the suite, e.g. make test-cli, make install-check'
	@echo '  make demo           list the plugins, then one attention run on the CPU'
	@echo '  make example-plugin build and check the third-party plugin of docs/abi.md'
	@echo '  make install        install under $(prefix) (files listed in lib/sglattn/install-manifest.txt)'
	@echo '  make uninstall      remove what make install wrote'
	@echo '  make clean          remove build, build-asan, build-tsan, build-fuzz'
	@echo 'Variables (make VAR=value ...):'
	@echo '  NVCC=               build without CUDA (now: $(or $(NVCC),none: $(NO_NVCC_WHY)))'
	@echo '  SAN=asan|tsan       a sanitizer build in build-asan / build-tsan'
	@echo '  CC, OPT             compiler and optimisation flags (default: $(CC), $(OPT))'
	@echo '  PREFIX or prefix    install prefix (default /usr/local; /usr puts the conf in /etc)'
	@echo '  exec_prefix bindir libdir includedir sysconfdir datadir mandir   GNU install directories'
	@echo '  DESTDIR             staging root for packagers'
	@echo 'Now: prefix=$(prefix) bindir=$(bindir) libdir=$(libdir) sysconfdir=$(sysconfdir) mandir=$(mandir)'

.PHONY: all clean demo test unit install uninstall help
