# python/ - the sglattn Python package (pure Python over ctypes; docs/python.md).
#
#   make install         also installs the package (and its dist-info, with the
#                        sglang.srt.plugins entry point) where the system
#                        python3 looks: $(prefix)/lib/python3.X/dist-packages
#                        (site-packages where the python is not Debian's)
#   make install-python  the package alone
#
# From a build tree no install is needed: PYTHONPATH=python finds the package,
# and the package finds build/lib/libsglattn.so.1 beside it.

PYTHON_SYS ?= $(firstword $(wildcard /usr/bin/python3) python3)
PY_SITE_REL := $(shell $(PYTHON_SYS) -c 'import sys, sysconfig; \
    d = "dist-packages" if sysconfig.get_path("purelib").endswith("dist-packages") else "site-packages"; \
    print("lib/python%d.%d/%s" % (sys.version_info[0], sys.version_info[1], d))' 2>/dev/null)
PYTHON_SITE ?= $(prefix)/$(PY_SITE_REL)
PY_SRCS := $(sort $(wildcard python/sglattn/*.py)) python/sglattn/py.typed
PY_DIST := sglattn-$(VERSION).dist-info

install-python:
	@if [ -z "$(PY_SITE_REL)" ]; then echo "install-python: skipped: no python3 ($(PYTHON_SYS))"; exit 0; fi; \
	set -e; pkg="$(DESTDIR)$(PYTHON_SITE)/sglattn"; dist="$(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)"; \
	install -d "$$pkg" "$$dist"; \
	install -m 644 $(PY_SRCS) "$$pkg/"; \
	rel=$$($(PYTHON_SYS) -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
	    "$(libdir)" "$(PYTHON_SITE)/sglattn"); \
	printf '# written by make install: where libsglattn is, relative to this package\nLIBDIR_FROM_PACKAGE = "%s"\n' \
	    "$$rel" > "$$pkg/_install.py"; \
	printf 'Metadata-Version: 2.1\nName: sglattn\nVersion: $(VERSION)\nSummary: libsglattn from Python\n' \
	    > "$$dist/METADATA"; \
	printf '[sglang.srt.plugins]\nsglattn = sglattn.sglang:register\n' > "$$dist/entry_points.txt"; \
	printf 'sglattn\n' > "$$dist/top_level.txt"; \
	printf 'make\n' > "$$dist/INSTALLER"; \
	for f in $(notdir $(PY_SRCS)) _install.py; do echo "$(PYTHON_SITE)/sglattn/$$f"; done >> $(INSTALL_MANIFEST); \
	for f in METADATA entry_points.txt top_level.txt INSTALLER; do echo "$(PYTHON_SITE)/$(PY_DIST)/$$f"; done \
	    >> $(INSTALL_MANIFEST); \
	echo "install-python: $(PYTHON_SITE)/sglattn (libsglattn at $$rel from it)"

INSTALL_HOOKS += install-python

# The files are in the manifest; their directories go with them.
uninstall-python:
	@rm -rf "$(DESTDIR)$(PYTHON_SITE)/sglattn/__pycache__"
	@for d in "$(DESTDIR)$(PYTHON_SITE)/sglattn" "$(DESTDIR)$(PYTHON_SITE)/$(PY_DIST)"; do \
	  [ -d "$$d" ] && find "$$d" -depth -type d -empty -delete 2>/dev/null; true; done

UNINSTALL_HOOKS += uninstall-python

.PHONY: install-python uninstall-python
