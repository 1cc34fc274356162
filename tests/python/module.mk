# tests/python - the Python package (python/sglattn) and its engine adapters,
# tested with pytest under Debian's python3 (torch, numpy, pytest; no GPU,
# no sglang, no transformers: tests/python/sglang is a stub of sglang).
#
#   make test-python   build the library, the recording fake plugin and
#                      noop.so, then mypy --strict over the package and
#                      pytest over tests/python (the docs example too)

PYTEST_PYTHON ?= /usr/bin/python3
PY_PLUGDIR := $(TESTDIR)/python/plugins
PY_RECORDER := $(PY_PLUGDIR)/recorder.so

$(PY_RECORDER): tests/python/fakes/recorder.c tests/host/fakes/fake.h abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -Itests/host/fakes -shared -o $@ $< $(LDFLAGS_COMMON) -ldl

# noop.so sits beside the recorder so one plugin path serves both.
$(PY_PLUGDIR)/noop.so: $(TESTDIR)/fakes/noop/noop.so
	@mkdir -p $(@D)
	cp $< $@

# The conf and the hybrid plugins: the conf and selection tests read the
# installed conf, and the hybrid adapters stack gdn / mamba2 on cpu_ref.
PY_TEST_DEPS = $(LIBSGLATTN) $(LIBSGLATTN_LINK) $(ATTNCTL) $(PY_RECORDER) $(PY_PLUGDIR)/noop.so \
    $(HOST_CONF) $(HYB_PLUGINS)

# mypy --strict over the package when python3-mypy is installed (install-deps
# installs it), else said and skipped.
test-python: $$(PY_TEST_DEPS)
	@if $(PYTEST_PYTHON) -c 'import mypy' 2>/dev/null; then \
	    echo "mypy --strict python/sglattn"; \
	    (cd python && $(PYTEST_PYTHON) -m mypy --strict --ignore-missing-imports --cache-dir=/dev/null sglattn); \
	else echo "test-python: mypy skipped: python3-mypy is not installed"; fi
	SGLATTN_LIB=$(abspath $(LIBSGLATTN)) SGLATTN_TEST_PLUGINS=$(abspath $(PY_PLUGDIR)) \
	SGLATTN_BUILD=$(abspath $(BUILD)) PYTHONDONTWRITEBYTECODE=1 \
	    $(PYTEST_PYTHON) -m pytest -q -p no:cacheprovider tests/python

TEST_STEPS += test-python

.PHONY: test-python
