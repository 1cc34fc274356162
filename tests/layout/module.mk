# tests/layout - checks of the tree's shape that read the build's objects.
#
#   make layout-cycles   no two files of LAYOUT_CYCLE_DIRS call each other,
#                        directly or through others (tests/layout/call_cycles.py)
#
# LAYOUT_CYCLE_DIRS: the source folders checked; add a folder once its cycles
# are broken (append with +=, or set it on the command line).

LAYOUT_CYCLE_DIRS ?= host attnctl
LAYOUT_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

layout-cycles: $(ALL)
	$(LAYOUT_PYTHON) tests/layout/call_cycles.py --objdir $(OBJDIR) $(LAYOUT_CYCLE_DIRS)

TEST_STEPS += layout-cycles
.PHONY: layout-cycles
