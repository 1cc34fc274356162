# tests/layout - checks of the tree's shape that read the build's objects.
#
#   make layout-cycles   no two files of LAYOUT_CYCLE_DIRS call each other,
#                        directly or through others (tests/layout/call_cycles.py,
#                        after its self-test on a small tree of its own)
#
# LAYOUT_CYCLE_DIRS: the source folders checked.  A folder joins once its
# cycles are broken (plugins/cpu, plugins/hybrid and plugins/xpu each have one
# today): append it here or in its own module.mk, or set the list on the
# command line to look at others.

LAYOUT_CYCLE_DIRS += host attnctl
LAYOUT_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

layout-cycles: $(ALL)
	tests/layout/call_cycles_selftest.sh $(CC) $(LAYOUT_PYTHON)
	$(LAYOUT_PYTHON) tests/layout/call_cycles.py --objdir $(OBJDIR) $(LAYOUT_CYCLE_DIRS)

TEST_STEPS += layout-cycles
.PHONY: layout-cycles
