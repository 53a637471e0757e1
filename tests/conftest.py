"""Shared test set-up: keeps runs deterministic, verifies every graph and kernel the pipeline
builds (``AUTOJIT_CHECKS=1``: a malformed one makes its call fall back, which the oracle
reports as a failure), and isolates the
compile cache: the suite never reads or writes the user's real cache, and each test starts
with an empty one of its own (a test's counters and planted bugs cannot be answered by code
another test compiled). ``--autojit-cache-dir=DIR`` still chooses one folder for a session.
"""

import atexit
import itertools
import os
import shutil
import tempfile

import pytest

# Set before autojit reads the environment (collection imports it), and again in case a
# plugin imported it first; subprocesses started by tests inherit the variable.
_CACHE_DIR = tempfile.mkdtemp(prefix="autojit-test-cache-")
os.environ["AUTOJIT_CACHE_DIR"] = _CACHE_DIR
os.environ["AUTOJIT_CHECKS"] = "1"
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)
_TESTS = itertools.count()

from tests.support.nvrtc import SKIP_REASON, nvrtc_available  # noqa: E402

import autojit  # noqa: E402

autojit.reload_environment()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``nvrtc`` where NVRTC does not load (NVRTC asked only if any)."""
    marked = [item for item in items if item.get_closest_marker("nvrtc")]
    if marked and not nvrtc_available():
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture(autouse=True)
def _private_compile_cache(request: pytest.FixtureRequest):
    """Give the test its own empty ``AUTOJIT_CACHE_DIR`` (created on first write)."""
    if request.config.getoption("autojit_cache_dir", default=None):
        yield
        return
    saved = os.environ.get("AUTOJIT_CACHE_DIR")
    os.environ["AUTOJIT_CACHE_DIR"] = os.path.join(_CACHE_DIR, f"test-{next(_TESTS)}")
    autojit.reload_environment()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AUTOJIT_CACHE_DIR", None)
        else:
            os.environ["AUTOJIT_CACHE_DIR"] = saved
        autojit.reload_environment()
