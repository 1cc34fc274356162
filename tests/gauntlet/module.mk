# tests/gauntlet - the validation layer's tests and the bad-plugin gauntlet.
#   make gauntlet   builds the tests and every bad plugin alone
# Bad plugins go to $(TESTDIR)/gauntlet/, never to $(PLUGDIR): each test
# copies what it needs into a temporary directory of its own.
GAUNTLET_DIR := $(TESTDIR)/gauntlet
GAUNTLET_FIXTURE_OBJS := $(OBJDIR)/tests/gauntlet/batch_fixture.o
GAUNTLET_UTIL_OBJS := $(OBJDIR)/tests/gauntlet/gauntlet_util.o $(GAUNTLET_FIXTURE_OBJS)

# One defect per plugin: bad_<kind>.so is bad_plugin.c with -DBAD_<KIND>.
GAUNTLET_BAD_KINDS := no_entry undefined missing_dep null_plugin refuses entry_fails major minor \
    small_struct null_name long_name name_chars platform role hybrid_kind no_probe aliases \
    caps_bits caps_list caps_available caps_arch caps_unterminated probe_fails probe_crash probe_hang \
    device_ops device_streams
GAUNTLET_PLUGINS := $(GAUNTLET_BAD_KINDS:%=$(GAUNTLET_DIR)/bad_%.so) \
    $(GAUNTLET_DIR)/good.so $(GAUNTLET_DIR)/good_twin.so $(GAUNTLET_DIR)/object.so \
    $(GAUNTLET_DIR)/libgauntlet_dep.so
GAUNTLET_PLUGIN_CFLAGS = $(CFLAGS_COMMON) -fvisibility=hidden

$(GAUNTLET_DIR)/libgauntlet_dep.so: tests/gauntlet/gauntlet_dep.c
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -shared $< -o $@ $(LDFLAGS_COMMON)
$(GAUNTLET_DIR)/bad_missing_dep.so: GAUNTLET_EXTRA_LIBS = -L$(GAUNTLET_DIR) -lgauntlet_dep
$(GAUNTLET_DIR)/bad_missing_dep.so: $(GAUNTLET_DIR)/libgauntlet_dep.so
$(GAUNTLET_DIR)/bad_%.so: tests/gauntlet/bad_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -DBAD_$(shell echo '$*' | tr a-z A-Z) \
	    -DBAD_KIND_NAME='"gauntlet_bad_$*"' -shared $< -o $@ \
	    $(GAUNTLET_EXTRA_LIBS) $(LDFLAGS_COMMON)
$(GAUNTLET_DIR)/good.so: tests/gauntlet/good_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -shared $< -o $@ $(LDFLAGS_COMMON)
$(GAUNTLET_DIR)/good_twin.so: tests/gauntlet/good_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -DGOOD_NAME='"gauntlet_good"' -DGOOD_TWIN -shared $< -o $@ $(LDFLAGS_COMMON)
# A probe that crashes, under the good plugin's name: a broken plugin must
# not shadow a good one of its name later in the path.
$(GAUNTLET_DIR)/crash_named_good.so: tests/gauntlet/bad_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -DBAD_PROBE_CRASH -DBAD_KIND_NAME='"gauntlet_good"' -shared $< -o $@ $(LDFLAGS_COMMON)
GAUNTLET_PLUGINS += $(GAUNTLET_DIR)/crash_named_good.so
# Misbehaviour at load time, in an ELF constructor or in the entry point:
# lt_<when>_<kind>.so is load_time_plugin.c with -DLT_WHEN_<WHEN> -DLT_<KIND>.
GAUNTLET_LT_KINDS := crash exit sleep threads flood fork
GAUNTLET_LT := $(foreach w,ctor entry,$(GAUNTLET_LT_KINDS:%=$(GAUNTLET_DIR)/lt_$(w)_%.so)) \
    $(GAUNTLET_DIR)/lt_ctor_mark.so
$(GAUNTLET_DIR)/lt_%.so: tests/gauntlet/load_time_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -DLT_WHEN_$(shell echo '$*' | sed 's/_.*//' | tr a-z A-Z) \
	    -DLT_$(shell echo '$*' | sed 's/^[a-z]*_//' | tr a-z A-Z) -DLT_NAME='"gauntlet_lt_$*"' \
	    -shared $< -o $@ $(LDFLAGS_COMMON)
GAUNTLET_PLUGINS += $(GAUNTLET_LT)
# An object file named like a plugin (ELF, but not linked).
$(GAUNTLET_DIR)/object.so: tests/gauntlet/good_plugin.c abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(GAUNTLET_PLUGIN_CFLAGS) -c $< -o $@

# Real foreign ELF files when a cross toolchain exists; else the test patches
# a copy of good.so (and says which it did).
GAUNTLET_CLANG := $(shell command -v clang 2>/dev/null)
GAUNTLET_LLD := $(shell command -v ld.lld 2>/dev/null)
ifneq ($(GAUNTLET_CLANG),)
GAUNTLET_PLUGINS += $(GAUNTLET_DIR)/elf32.so
$(GAUNTLET_DIR)/elf32.so: tests/gauntlet/foreign_elf.c
	@mkdir -p $(@D)
	$(GAUNTLET_CLANG) -m32 -fPIC -shared -nostdlib $< -o $@
else
SKIPPED += gauntlet_elf32
SKIP_WHY_gauntlet_elf32 := no clang for a -m32 build; the gauntlet patches the ELF class of a copy instead
endif
ifneq ($(and $(GAUNTLET_CLANG),$(GAUNTLET_LLD)),)
GAUNTLET_PLUGINS += $(GAUNTLET_DIR)/aarch64.so
$(GAUNTLET_DIR)/aarch64.so: tests/gauntlet/foreign_elf.c
	@mkdir -p $(@D)
	$(GAUNTLET_CLANG) --target=aarch64-linux-gnu -fuse-ld=lld -fPIC -shared -nostdlib $< -o $@
else
SKIPPED += gauntlet_aarch64
SKIP_WHY_gauntlet_aarch64 := no clang + ld.lld for an aarch64 build; the gauntlet patches e_machine of a copy instead
endif

# The setuid helper is copied and made setuid-root by the test and run as
# nobody: it links the host's objects in, so it needs nothing from the build
# tree (a secure-mode loader ignores $ORIGIN, and nobody may not be able to
# reach a checkout under a 0700 directory, as in a `mktemp -d` clone).
$(GAUNTLET_DIR)/setuid_helper: $(OBJDIR)/tests/gauntlet/setuid_helper.o $(HOST_OBJS) $$(HOST_EMBED_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $< $(HOST_OBJS) $(HOST_EMBED_OBJS) $(LDFLAGS_COMMON) $(HOST_LIBS)
GAUNTLET_PLUGINS += $(GAUNTLET_DIR)/setuid_helper

# Tests: the validation layer alone, then the gauntlet through libsglattn.
GAUNTLET_HOST_TESTS := test_validate_host test_gauntlet_load test_gauntlet_fs test_gauntlet_probe \
    test_gauntlet_setuid test_gauntlet_loadtime test_gauntlet_input test_gauntlet_changed test_gauntlet_counts
GAUNTLET_TESTS := $(TESTDIR)/test_validate $(TESTDIR)/test_validate_v12 $(GAUNTLET_HOST_TESTS:%=$(TESTDIR)/%)

# The input tests share the fuzz replays' JSON shapes.
$(OBJDIR)/tests/gauntlet/test_gauntlet_input.o: CFLAGS_tests_gauntlet_ += -Itests/fuzz

$(TESTDIR)/test_validate $(TESTDIR)/test_validate_v12: $(TESTDIR)/%: $(OBJDIR)/tests/gauntlet/%.o $(GAUNTLET_FIXTURE_OBJS) \
    $(OBJDIR)/tests/gauntlet/validate_fake.o $(VALIDATE_OBJS) $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) $^ -lcmocka -lm -o $@

$(GAUNTLET_HOST_TESTS:%=$(TESTDIR)/%): $(TESTDIR)/%: $(OBJDIR)/tests/gauntlet/%.o $(GAUNTLET_UTIL_OBJS) \
    $(LIBSGLATTN) | $(GAUNTLET_PLUGINS) $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    $(LDFLAGS_COMMON) -lcmocka -lm


# The counts test opens the real plugins of this build.
$(TESTDIR)/test_gauntlet_counts: | $(PLUGINS)
# list-plugins' own isolation is part of what test_gauntlet_probe and
# test_gauntlet_loadtime check.
$(TESTDIR)/test_gauntlet_probe $(TESTDIR)/test_gauntlet_loadtime: | $(ATTNCTL)

TESTS += $(GAUNTLET_TESTS)
gauntlet: $(GAUNTLET_TESTS) $(GAUNTLET_PLUGINS)
.PHONY: gauntlet

include bench/gauntlet/module.mk
