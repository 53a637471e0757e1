"""autojit's pytest plugin, registered through the ``pytest11`` entry point (name ``autojit``):
installing autojit is enough. Without its options it forces nothing; it adds one summary line
per session where autojit did something.

* ``--autojit-backend=auto|cpu|gpu|python`` routes every call of the session (the same level
  as ``AUTOJIT_FORCE``: a decorator's own ``force=`` or a ``config()`` block still wins);
* ``--autojit-strict``: a call that would fall back to plain Python fails its test, naming
  the reason and ``file:line`` (``AUTOJIT_STRICT=1``);
* ``--autojit-cache-dir=DIR``: the session's compile cache directory (``AUTOJIT_CACHE_DIR``);
* the fixture ``autojit_backend`` runs a test once per backend ("python", "cpu", "gpu"; those
  this machine lacks are skipped, saying why) with calls in the test forced there;
* ``@pytest.mark.autojit_backends("cpu", "gpu")`` picks the backends (alone it parametrizes
  the test just as the fixture does).

Disable it with ``-p no:autojit``.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import autojit
from autojit import config as autojit_config
from autojit.config import current_settings, reload_environment
from autojit.dispatch.dispatcher import Dispatcher
from autojit.errors import StrictFallbackError
from autojit.observe import registry
from autojit.testing import backend_unavailable, tally

ROUTES = ("python", "cpu", "gpu")
FIXTURE = "autojit_backend"
MARKER = "autojit_backends"
_SESSION = "autojit-session"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(autojit.__file__))
_COUNTERS = ("calls", "compiles", "cache_hits", "disk_hits")
_FORCING = pytest.StashKey[Any]()
MAX_FALLBACK_LINES = 20


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autojit", "autojit (NumPy JIT) routing and checks")
    group.addoption("--autojit-backend", choices=("auto", *ROUTES), default=None,
                    help="route every autojit call of the session: auto (the router "
                         "decides), cpu, gpu or python (like AUTOJIT_FORCE)")
    group.addoption("--autojit-strict", action="store_true", default=False,
                    help="fail a test whose autojit function falls back to plain Python")
    group.addoption("--autojit-cache-dir", default=None, metavar="DIR",
                    help="autojit's compile cache directory for the session (isolates it)")


def _session_environment(config_: pytest.Config) -> dict[str, str]:
    """Return the ``AUTOJIT_*`` variables the session's options set (none by default)."""
    env = {}
    backend = config_.getoption("autojit_backend")
    if backend is not None:
        env["AUTOJIT_FORCE"] = "" if backend == "auto" else backend
    if config_.getoption("autojit_strict"):
        env["AUTOJIT_STRICT"] = "1"
    cache_dir = config_.getoption("autojit_cache_dir")
    if cache_dir:
        env["AUTOJIT_CACHE_DIR"] = os.path.abspath(cache_dir)
    return env


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(*names): run the test once per named autojit backend "
                   f"({', '.join(ROUTES)}); unavailable ones are skipped")
    env = _session_environment(config)
    if env.get("AUTOJIT_FORCE") == "gpu" and backend_unavailable("gpu"):
        raise pytest.UsageError("--autojit-backend=gpu: no usable CUDA device on this machine")
    config.pluginmanager.register(AutojitSession(env), _SESSION)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.pluginmanager.get_plugin(_SESSION)
    if session is not None:
        session.close()
        config.pluginmanager.unregister(session, _SESSION)


def pytest_report_header(config: pytest.Config) -> str | None:
    env = _session_environment(config)
    if not env:
        return None
    words = {"AUTOJIT_FORCE": "backend={}", "AUTOJIT_STRICT": "strict",
             "AUTOJIT_CACHE_DIR": "cache dir {}"}
    return "autojit: " + ", ".join(words[k].format(v or "auto") for k, v in env.items())


# -- per-backend parametrization ------------------------------------------------------------
def _skip_reason(name: str, forced: str | None) -> str | None:
    if forced not in (None, "auto") and name != forced:
        return f"--autojit-backend={forced}"
    return backend_unavailable(name)


def _parametrized_elsewhere(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        names = names.split(",") if isinstance(names, str) else names
        if FIXTURE in [n.strip() for n in names]:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if FIXTURE not in metafunc.fixturenames:
        if marker is None:
            return
        metafunc.fixturenames.append(FIXTURE)  # the marker alone parametrizes too (forced
        # by AutojitSession.pytest_runtest_setup, the fixture not being in the test's closure)
    if _parametrized_elsewhere(metafunc):
        return
    names = tuple(marker.args) if marker is not None and marker.args else ROUTES
    unknown = [n for n in names if n not in ROUTES]
    if unknown:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: unknown autojit backend(s) "
                                f"{unknown} in @pytest.mark.{MARKER}; choose from {ROUTES}")
    forced = metafunc.config.getoption("autojit_backend")
    params = []
    for name in names:
        reason = _skip_reason(name, forced)
        marks = [pytest.mark.skip(reason=f"autojit backend {name}: {reason}")] if reason else []
        params.append(pytest.param(name, id=name, marks=marks))
    metafunc.parametrize(FIXTURE, params, indirect=True)


def _marker_only_backend(item: pytest.Item) -> str | None:
    """Return the backend of a test parametrized by the marker alone (no fixture)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or FIXTURE in item.fixturenames:
        return None
    return callspec.params.get(FIXTURE)


@pytest.fixture
def autojit_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Yield the backend this test instance runs on ("python", "cpu" or "gpu"); autoroute
    calls made by the test (in its thread) are forced there for its duration."""
    name = getattr(request, "param", None)
    if name is None:  # requested without parametrization (e.g. getfixturevalue)
        yield current_settings().force or "auto"
        return
    with autojit_config(force=name):
        yield name


# -- session bookkeeping --------------------------------------------------------------------
@dataclass
class _Tracked:
    """One decorated function seen by the session: counters at the start and latest seen."""

    name: str
    ref: weakref.ref
    baseline: dict[str, Any] | None
    last: dict[str, Any] | None = None

    def delta(self) -> dict[str, Any] | None:
        """Return what the session added to its counters, or None if never seen."""
        live = self.ref()
        current = live.stats() if live is not None else self.last
        if current is None:
            return None
        base = self.baseline or {"routes": {}, "fallbacks": []}
        delta = {k: current.get(k, 0) - base.get(k, 0) for k in _COUNTERS}
        delta["gpu_routes"] = current["routes"]["gpu"] - base["routes"].get("gpu", 0)
        delta["fallbacks"] = [r for r in current["fallbacks"] if r not in base["fallbacks"]]
        return delta


class AutojitSession:
    """The session's state: the ``AUTOJIT_*`` variables it set, and its functions' counters.

    Functions created during a test are kept alive until the test ends, so that ones a test
    defines locally are counted too; then only a weak reference and their counters remain.
    """

    def __init__(self, env: dict[str, str]) -> None:
        self._saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        if env.get("AUTOJIT_CACHE_DIR"):
            os.makedirs(env["AUTOJIT_CACHE_DIR"], exist_ok=True)
        reload_environment()
        self.env = env
        self._lock = threading.Lock()
        self._tracked = [_Tracked(d.__qualname__, weakref.ref(d), d.stats())
                         for d in registry.dispatchers()]
        self._holding: list[tuple[_Tracked, Any]] = []
        self._checks = tally()
        registry.add_listener(self._on_register)

    def _on_register(self, dispatcher: Dispatcher) -> None:
        entry = _Tracked(dispatcher.__qualname__, weakref.ref(dispatcher), None)
        with self._lock:
            self._tracked.append(entry)
            self._holding.append((entry, dispatcher))

    def close(self) -> None:
        """Stop listening; put back the environment as it was before the session."""
        registry.remove_listener(self._on_register)
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        reload_environment()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        name = _marker_only_backend(item)
        if name is not None:  # the marker without the fixture: force here, for the test
            forcing = autojit_config(force=name)
            forcing.__enter__()
            item.stash[_FORCING] = forcing

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:
            forcing = item.stash.get(_FORCING, None)
            if forcing is not None:
                del item.stash[_FORCING]
                forcing.__exit__(None, None, None)

    def pytest_runtest_logfinish(self) -> None:
        with self._lock:
            holding, self._holding = self._holding, []
        for entry, dispatcher in holding:
            entry.last = dispatcher.stats()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo) -> Iterator[Any]:
        report = yield
        excinfo = call.excinfo
        if report.failed and excinfo is not None and excinfo.errisinstance(StrictFallbackError):
            report.longrepr = _strict_failure_text(excinfo)
        return report

    def totals(self) -> dict[str, Any]:
        """Return the session's counters over every function seen."""
        totals: dict[str, Any] = {k: 0 for k in (*_COUNTERS, "gpu_routes", "functions")}
        totals["fallbacks"] = []
        with self._lock:
            tracked = list(self._tracked)
        for entry in tracked:
            delta = entry.delta()
            if delta is None:
                continue
            for key in (*_COUNTERS, "gpu_routes"):
                totals[key] += delta[key]
            totals["functions"] += delta["compiles"] + delta["disk_hits"] > 0
            totals["fallbacks"] += [f"{entry.name}: {r}" for r in delta["fallbacks"]]
        totals["fallbacks"] = sorted(set(totals["fallbacks"]))
        return totals

    def checks(self) -> dict[str, int]:
        """Return the session's ``assert_backends_agree`` counts (see autojit.testing.tally)."""
        now = tally()
        return {k: v - self._checks.get(k, 0) for k, v in now.items()
                if v - self._checks.get(k, 0)}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in summary_lines(self.totals(), self.checks(), bool(self.env)):
            terminalreporter.write_line(line)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def summary_lines(totals: dict[str, Any], checks: dict[str, int], configured: bool) -> list[str]:
    """Return the session summary: one line of counts, one per fallback reason, one for
    backend checks; nothing when autojit did nothing and no option was given."""
    if not (totals["calls"] or totals["compiles"] or totals["fallbacks"] or checks or configured):
        return []
    fallbacks = totals["fallbacks"]
    disk = f", {_plural(totals['disk_hits'], 'disk-cache load')}" if totals["disk_hits"] else ""
    lines = [f"autojit: {_plural(totals['functions'], 'function')} compiled, "
             f"{_plural(totals['compiles'], 'compile')}, "
             f"{_plural(totals['cache_hits'], 'cache hit')}{disk}, "
             f"{_plural(len(fallbacks), 'fallback')}, "
             f"{_plural(totals['gpu_routes'], 'GPU route')} ({_plural(totals['calls'], 'call')})"]
    lines += [f"autojit fallback: {reason}" for reason in fallbacks[:MAX_FALLBACK_LINES]]
    if len(fallbacks) > MAX_FALLBACK_LINES:
        lines.append(f"autojit fallback: ... and {len(fallbacks) - MAX_FALLBACK_LINES} more "
                     "(each function's .stats()['fallbacks'] lists its own)")
    if checks.get("checks"):
        skipped = [f"{key.removeprefix('skipped ')} (x{n})" for key, n in sorted(checks.items())
                   if key.startswith("skipped ")]
        lines.append(f"autojit backend checks: {checks['checks']} run, "
                     f"{checks.get('failed', 0)} failed"
                     + (f"; skipped {'; '.join(skipped)}" if skipped else ""))
    return lines


def _strict_failure_text(excinfo: pytest.ExceptionInfo) -> str:
    """Return ``file:line: message`` for a strict-mode failure, the line being the last one
    before the traceback enters autojit (the call of the function that fell back)."""
    where = ""
    for entry in excinfo.traceback:
        path = os.path.abspath(str(entry.path))
        if path.startswith(_PACKAGE_DIR + os.sep):
            break
        where = f"{os.path.relpath(path)}:{entry.lineno + 1}: "
    return f"{where}{excinfo.typename}: {excinfo.value}"
