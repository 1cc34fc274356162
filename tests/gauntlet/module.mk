# tests/gauntlet - the validation layer's tests, the bad-plugin gauntlet.
# `make gauntlet` builds them alone.
GAUNTLET_FIXTURE_OBJS := $(OBJDIR)/tests/gauntlet/batch_fixture.o

$(TESTDIR)/test_validate: $(OBJDIR)/tests/gauntlet/test_validate.o $(GAUNTLET_FIXTURE_OBJS) $(VALIDATE_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_COMMON) $^ -lcmocka -lm -o $@

TESTS += $(TESTDIR)/test_validate
gauntlet: $(TESTDIR)/test_validate
.PHONY: gauntlet
