"""The pytest plugin, run through pytest's own ``pytester`` (inner sessions, in process), and
the strict-mode hook it relies on (``Settings.strict`` -> StrictFallbackError)."""

from __future__ import annotations

import itertools
import os
import warnings

import numpy as np
import pytest

from autojit import AutojitWarning, autoroute, config, reload_environment
from autojit.config import current_settings
from autojit.errors import StrictFallbackError
from autojit.pytest_plugin import summary_lines
from autojit.testing import backend_unavailable

pytest_plugins = ["pytester"]
_RUNS = itertools.count()
NO_GPU = backend_unavailable("gpu")

HEADER = """\
import os
import numpy as np
import pytest
from autojit import autoroute
from autojit.config import current_settings
from autojit.pytest_plugin import summary_lines


@autoroute
def double(x):
    return x * 2.0 + 1.0


@autoroute
def flips(x):            # branches leaving two dtypes: it runs as Python
    y = -x
    if x.sum() > 0:
        y = x.astype(np.float32)
    return y
"""


def run(pytester: pytest.Pytester, body: str, *options: str) -> pytest.RunResult:
    """Run ``HEADER + body`` as test_inner.py in an inner session; return its result.

    Hypothesis's plugin costs over a second per session, so inner sessions go without it.
    """
    pytester.makepyfile(test_inner=HEADER + body)
    with pytest.MonkeyPatch.context() as patch:  # each inner session: an empty compile cache
        patch.setenv("AUTOJIT_CACHE_DIR", str(pytester.path / f"cache-{next(_RUNS)}"))
        try:
            return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                      "-p", "no:benchmark", "-rs", *options)
        finally:
            patch.undo()
            reload_environment()


def line_of(text: str, source: str = HEADER) -> int:
    """Return the 1-based line of ``text`` in ``source`` (the inner test file's lines)."""
    return source.splitlines().index(text) + 1


FORCED = """
def test_forced():
    double(np.ones(10))
    assert current_settings().force == {force!r}
    assert double.stats()["routes"][{route!r}] == 1
"""


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_backend_option_forces_every_call(pytester: pytest.Pytester, backend: str) -> None:
    before = os.environ.get("AUTOJIT_FORCE"), current_settings().force
    result = run(pytester, FORCED.format(force=backend, route=backend),
                 f"--autojit-backend={backend}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"autojit: backend={backend}"])
    assert (os.environ.get("AUTOJIT_FORCE"), current_settings().force) == before  # restored


def test_auto_backend_and_no_option_force_nothing(pytester: pytest.Pytester) -> None:
    body = "\ndef test_routed():\n    assert current_settings().force is None\n"
    run(pytester, body, "--autojit-backend=auto").assert_outcomes(passed=1)
    result = run(pytester, body)
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if line.startswith("autojit")]  # unused


def test_bad_backend_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, "\ndef test_x():\n    pass\n", "--autojit-backend=tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--autojit-backend: invalid choice: 'tpu'*"])


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_gpu_backend_without_a_device_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, "\ndef test_x():\n    pass\n", "--autojit-backend=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--autojit-backend=gpu: no usable CUDA device*"])


PER_BACKEND = """
def test_each(autojit_backend):
    double(np.ones(10))
    assert current_settings().force == autojit_backend
    assert double.stats()["routes"][autojit_backend] >= 1
"""


def test_fixture_parametrizes_over_backends(pytester: pytest.Pytester) -> None:
    result = run(pytester, PER_BACKEND, "-v")
    result.stdout.fnmatch_lines(["*test_each?python? PASSED*", "*test_each?cpu? PASSED*"])
    if NO_GPU:
        result.assert_outcomes(passed=2, skipped=1)
        result.stdout.fnmatch_lines(["*test_each?gpu? SKIPPED*",
                                     "SKIPPED ?1? test_inner.py: autojit backend gpu: no usable*"])
    else:
        result.assert_outcomes(passed=3)


def test_session_backend_narrows_the_fixture(pytester: pytest.Pytester) -> None:
    result = run(pytester, PER_BACKEND, "-v", "--autojit-backend=cpu")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*test_each?python? SKIPPED*",
                                 "SKIPPED ?1? test_inner.py: autojit backend python: "
                                 "--autojit-backend=cpu"])


MARKED = """
@pytest.mark.autojit_backends("cpu", "python")
def test_marked_alone():
    double(np.ones(3))
    assert current_settings().force in ("cpu", "python")


@pytest.mark.autojit_backends("cpu")
def test_marked_with_fixture(autojit_backend):
    assert autojit_backend == "cpu"


@pytest.mark.parametrize("autojit_backend", ["python"], indirect=True)
def test_user_parametrized(autojit_backend):
    assert current_settings().force == autojit_backend == "python"
"""


def test_marker_selects_backends_with_or_without_the_fixture(pytester: pytest.Pytester) -> None:
    result = run(pytester, MARKED, "-v", "--strict-markers")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_marked_alone?cpu? PASSED*",
                                 "*test_marked_alone?python? PASSED*",
                                 "*test_marked_with_fixture?cpu? PASSED*"])


def test_marker_with_an_unknown_backend_is_an_error(pytester: pytest.Pytester) -> None:
    body = '\n@pytest.mark.autojit_backends("tpu")\ndef test_x():\n    pass\n'
    result = run(pytester, body)
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*unknown autojit backend(s) ?'tpu'? in @pytest.mark*"])


FALLS_BACK = """
def test_falls_back():
    assert flips(np.ones(3)).sum() == 3.0
"""


def test_strict_mode_fails_a_test_whose_function_falls_back(pytester: pytest.Pytester) -> None:
    result = run(pytester, FALLS_BACK, "--autojit-strict")
    result.assert_outcomes(failed=1)
    call = line_of("    assert flips(np.ones(3)).sum() == 3.0", HEADER + FALLS_BACK)
    defined = line_of("def flips(x):            # branches leaving two dtypes: it runs as "
                      "Python") - 1
    branch = line_of("    if x.sum() > 0:")
    result.stdout.fnmatch_lines([
        f"test_inner.py:{call}: StrictFallbackError: autojit strict mode: flips (defined at "
        f"test_inner.py:{defined}) would run as plain Python: test_inner.py:{branch}:*: "
        "truth-testing an array*",
        "autojit: 0 functions compiled, 0 compiles, 0 cache hits, 1 fallback, 0 GPU routes*",
        f"autojit fallback: flips: test_inner.py:{branch}:*: truth-testing an array*",
    ])
    assert current_settings().strict is False  # the outer session is unchanged


def test_without_strict_a_fallback_warns_and_passes(pytester: pytest.Pytester) -> None:
    result = run(pytester, FALLS_BACK)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*FallbackWarning: autojit: flips runs as plain Python*"])


def test_autojit_warnings_are_filterable(pytester: pytest.Pytester) -> None:
    result = run(pytester, FALLS_BACK, "-W", "error::autojit.errors.FallbackWarning")
    result.assert_outcomes(failed=1)
    result = run(pytester, FALLS_BACK, "-W", "ignore::autojit.AutojitWarning")
    result.assert_outcomes(passed=1)
    assert "warnings summary" not in result.stdout.str()


def test_summary_line_counts_the_session(pytester: pytest.Pytester) -> None:
    body = """
def test_twice():
    double(np.ones(3))
    double(np.ones(5))


def test_local_function_is_counted_after_it_is_gone():
    @autoroute
    def local(x):
        return x - 1.0
    local(np.ones(3))
"""
    result = run(pytester, body)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["autojit: 2 functions compiled, 2 compiles, 1 cache hit, "
                                 "0 fallbacks, 0 GPU routes (3 calls)"])


def test_summary_reports_backend_checks_and_skips(pytester: pytest.Pytester) -> None:
    body = """
from autojit.testing import assert_backends_agree


def test_agree():
    assert_backends_agree(double, np.linspace(0, 1, 7))
"""
    result = run(pytester, body)
    result.assert_outcomes(passed=1)
    skipped = "; skipped gpu: no usable CUDA device (x1)" if NO_GPU else ""
    result.stdout.fnmatch_lines([f"autojit backend checks: 1 run, 0 failed{skipped}"])


CACHE = """
def test_cache_dir():
    assert current_settings().cache_dir == {expected!r}
"""


def test_cache_dir_option_isolates_the_session(pytester: pytest.Pytester) -> None:
    expected = str(pytester.path / "session-cache")
    result = run(pytester, CACHE.format(expected=expected), "--autojit-cache-dir=session-cache")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "session-cache").is_dir()
    result.stdout.fnmatch_lines([f"autojit: cache dir {expected}"])
    body = ("\ndef test_cache_dir():\n    assert current_settings().cache_dir == "
            f"os.environ['AUTOJIT_CACHE_DIR'] != {expected!r}\n")
    run(pytester, body).assert_outcomes(passed=1)  # the next session is not affected


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    result = run(pytester, "\ndef test_x():\n    pass\n", "-p", "no:autojit", "--autojit-strict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_summary_lines_name_disk_loads_and_stay_silent_when_unused() -> None:
    totals = {"functions": 2, "compiles": 1, "cache_hits": 4, "disk_hits": 1, "calls": 6,
              "gpu_routes": 0, "fallbacks": ["f: model.py:3:4: np.inv is not supported"]}
    assert summary_lines(totals, {}, configured=False) == [
        "autojit: 2 functions compiled, 1 compile, 4 cache hits, 1 disk-cache load, "
        "1 fallback, 0 GPU routes (6 calls)",
        "autojit fallback: f: model.py:3:4: np.inv is not supported"]
    idle = dict.fromkeys(totals, 0) | {"fallbacks": []}
    assert summary_lines(idle, {}, configured=False) == []
    many = totals | {"fallbacks": [f"f{i}: reason" for i in range(25)]}
    assert summary_lines(many, {}, configured=False)[-1] == (
        "autojit fallback: ... and 5 more (each function's .stats()['fallbacks'] lists its own)")


# -- the strict-mode hook in the dispatcher -------------------------------------------------
def _flips(x):
    y = -x
    if x.sum() > 0:     # branches leaving two dtypes: it runs as Python
        y = x.astype(np.float32)
    return y


def test_strict_setting_raises_with_function_reason_and_location() -> None:
    f = autoroute(_flips)
    with config(strict=True), pytest.raises(StrictFallbackError) as caught:
        f(np.ones(3))
    error = caught.value
    assert error.function == "_flips" and error.where.startswith("test_pytest_plugin.py:")
    assert "test_pytest_plugin.py:" in error.reason and "truth-testing" in error.reason
    assert f.stats()["fallbacks"] == [error.reason]


def test_strict_raises_for_a_cached_fallback_and_unsupported_arguments() -> None:
    f = autoroute(_flips)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutojitWarning)
        f(np.ones(3))                     # cached as a fallback, not strict yet
        g = autoroute(lambda x: x)
        g([1, 2])                        # a list: not compilable
    with config(strict=True):
        with pytest.raises(StrictFallbackError, match="truth-testing"):
            f(np.ones(3))
        with pytest.raises(StrictFallbackError, match="not a NumPy array"):
            g([1, 2])


def test_strict_from_the_environment_and_a_per_function_opt_out(monkeypatch) -> None:
    monkeypatch.setenv("AUTOJIT_STRICT", "1")
    try:
        assert reload_environment().strict is True
        lenient = autoroute(_flips, strict=False)
        with pytest.warns(AutojitWarning):
            assert lenient(np.ones(3)).sum() == 3.0
        with pytest.raises(StrictFallbackError):
            autoroute(_flips)(np.ones(3))
    finally:
        monkeypatch.delenv("AUTOJIT_STRICT")
        reload_environment()
