# tests/host - the host core's tests: fake plugins, cmocka tests, the
# install-tree check.
#
#   make test-host       build and run these tests alone
#   make install-check   `make install` into a temp tree, then use it with no env
#
# Fakes: $(TESTDIR)/fakes/<variant>/<file>.so, one small source each.

FAKES := $(TESTDIR)/fakes
FAKE_DEPS := tests/host/fakes/fake.h abi/sgl_attn_abi.h

# $(call fake,variant,file,source,extra cflags)
define fake
$(FAKES)/$(1)/$(2): tests/host/fakes/$(3) $(FAKE_DEPS)
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_COMMON) -Itests/host/fakes -shared -o $$@ $$< $(4) $$(LDFLAGS_COMMON) -ldl
HOST_FAKES += $(FAKES)/$(1)/$(2)
endef
HOST_FAKES :=
$(eval $(call fake,good,fake_good.so,good.c,))
$(eval $(call fake,other,fake_other.so,good.c,-DFAKE_NAME='"fake_other"'))
# A file named unlike its plugin: the conf disables it by its descriptor name.
$(eval $(call fake,renamed,renamed.so,good.c,-DFAKE_NAME='"fake_renamed"'))
$(eval $(call fake,shadow,fake_good.so,good.c,-DFAKE_VERSION='"9.9-shadow"'))
$(eval $(call fake,abi_major,fake_abi2.so,broken.c,-DFAKE_NAME='"fake_abi2"' -DFAKE_ABI -DFAKE_MAJOR=2 -DFAKE_MINOR=0))
$(eval $(call fake,newer_minor,fake_minor3.so,broken.c,-DFAKE_NAME='"fake_minor3"' -DFAKE_ABI -DFAKE_MAJOR=1 -DFAKE_MINOR=3))
$(eval $(call fake,no_entry,fake_no_entry.so,no_entry.c,))
$(eval $(call fake,unavailable,fake_unavail.so,unavailable.c,))
$(eval $(call fake,wrapper,fake_gdn.so,wrapper.c,))
$(eval $(call fake,noop,noop.so,noop.c,))
$(eval $(call fake,crash,fake_crash.so,broken.c,-DFAKE_NAME='"fake_crash"' -DFAKE_CRASH))
$(eval $(call fake,hang,fake_hang.so,broken.c,-DFAKE_NAME='"fake_hang"' -DFAKE_HANG))
$(eval $(call fake,undefined,fake_undefined.so,broken.c,-DFAKE_NAME='"fake_undefined"' -DFAKE_UNDEFINED))
$(eval $(call fake,deps,libsglfake_gone.so,gone.c,))
# Linked against deps/libsglfake_gone.so with no rpath: missing at run time.
$(eval $(call fake,missing_dep,fake_missing_dep.so,broken.c,-DFAKE_NAME='"fake_missing_dep"' -DFAKE_MISSING_DEP \
    -L$(FAKES)/deps -lsglfake_gone))
$(FAKES)/missing_dep/fake_missing_dep.so: $(FAKES)/deps/libsglfake_gone.so

# Tests of the public API link the library; test_host_internals links the
# host objects themselves to reach hidden functions.
HOST_TEST_NAMES := test_host_loader test_host_paths test_host_isolation test_host_unsafe \
    test_host_stack test_host_threads test_abi_sizes test_host_internals test_host_versioned_structs
HOST_TESTS := $(HOST_TEST_NAMES:%=$(TESTDIR)/host/%)
HOST_TEST_LDFLAGS = -L$(LIBDIR) -lsglattn -Wl,-rpath,$(abspath $(LIBDIR)) $(LDFLAGS_COMMON) -lcmocka -ldl
CFLAGS_tests_host_ = -Itests/host
TESTS += $(HOST_TESTS)

$(TESTDIR)/host/test_host_internals: $(OBJDIR)/tests/host/test_host_internals.o $(OBJDIR)/tests/host/th.o \
    $(HOST_OBJS) $$(HOST_EMBED_OBJS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS_COMMON) -lcmocka $(HOST_LIBS)

$(filter-out %/test_host_internals,$(HOST_TESTS)): $(TESTDIR)/host/%: $(OBJDIR)/tests/host/%.o \
    $(OBJDIR)/tests/host/th.o $(LIBSGLATTN) $(HOST_FAKES) $(TESTDIR)/host/secure_helper | $(LIBSGLATTN_LINK)
	@mkdir -p $(@D)
	$(CC) -o $@ $(OBJDIR)/tests/host/$*.o $(OBJDIR)/tests/host/th.o $(HOST_TEST_LDFLAGS) -lpthread

# Exec'd setgid by test_host_paths: an absolute rpath, since the loader
# ignores $ORIGIN for a setgid program.
$(TESTDIR)/host/secure_helper: $(OBJDIR)/tests/host/secure_helper.o $(LIBSGLATTN) | $(LIBSGLATTN_LINK)
	@mkdir -p $(@D)
	$(CC) -o $@ $< -L$(LIBDIR) -lsglattn -Wl,-rpath,$(abspath $(LIBDIR)) $(LDFLAGS_COMMON)

test-host: $(HOST_TESTS) $(HOST_FAKES)
	@set -e; for t in $(HOST_TESTS); do echo "== $$t"; $$t; done

# The install tree, used as a user would: no environment variable at all.
INSTALL_CHECK_DIR := $(abspath $(BUILD))/install-check
install-check: all
	rm -rf $(INSTALL_CHECK_DIR)
	$(MAKE) --no-print-directory install DESTDIR=$(INSTALL_CHECK_DIR) PREFIX=/opt/sglattn >/dev/null
	tests/host/install_check.sh $(INSTALL_CHECK_DIR)/opt/sglattn
	rm -rf $(INSTALL_CHECK_DIR)
	MAKE="$(MAKE)" tests/cli/install_dirs_check.sh $(INSTALL_CHECK_DIR)

TEST_STEPS += install-check

.PHONY: test-host install-check
