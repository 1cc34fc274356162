"""pytest setup for the Python package's tests: the package from python/,
the stub `sglang` and the driver from tests/python/, the build's library
(SGLATTN_LIB, else the checkout's build/), and the recording fake plugin
(SGLATTN_TEST_PLUGINS, which the make step sets to where it built it)."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import pytest  # noqa: E402

BUILD = os.environ.get("SGLATTN_BUILD", os.path.join(REPO, "build"))


@pytest.fixture(scope="session")
def build_dir() -> str:
    return BUILD


@pytest.fixture(scope="session")
def test_plugins() -> str:
    """The directory holding recorder.so (and noop.so)."""
    d = os.environ.get("SGLATTN_TEST_PLUGINS", os.path.join(BUILD, "tests", "python", "plugins"))
    if not os.path.isfile(os.path.join(d, "recorder.so")):
        pytest.fail(f"recorder.so is not in {d}: run the tests through `make test-python`")
    return d


@pytest.fixture()
def host():
    import sglattn
    h = sglattn.Host()
    yield h
    h.close()
