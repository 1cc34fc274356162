# tests/sdk - the plugin SDK's own tests, and the include rule every plugin
# keeps (a plugin sees abi/, plugins/sdk/ and its own directory).
#
#   make sdk-tests        build and run test_sdk
#   make plugin-includes  check_plugin_includes.py: its self-test, then the
#                         dependency files of every plugin object and the
#                         #include lines of every source under plugins/

SDK_TEST := $(TESTDIR)/test_sdk
$(SDK_TEST): $(OBJDIR)/tests/sdk/test_sdk.o $(SDK_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) -o $@ $^ -lcmocka
TESTS += $(SDK_TEST)
.SECONDARY: $(OBJDIR)/tests/sdk/test_sdk.o

sdk-tests: $(SDK_TEST)
	$(SDK_TEST)

# After the build: the .d files are the compiler's own account of what each
# plugin object read.
plugin-includes: $(ALL)
	python3 tests/sdk/check_plugin_includes.py --selftest
	python3 tests/sdk/check_plugin_includes.py --objdir $(OBJDIR)

TEST_STEPS += plugin-includes
.PHONY: sdk-tests plugin-includes
