"""Backend agreement in users' test suites: ``assert_backends_agree(fn, *args)``.

Runs ``fn`` under each backend, forced rather than routed (plain Python, the LLVM CPU code,
the CUDA GPU code and, on request, ``"cuda-emulated"``: the generated CUDA C compiled by g++
and run on the CPU, so GPU-less CI checks the GPU code path) and compares kind, dtype, shape
and values with the first backend that ran::

    from autojit.testing import assert_backends_agree
    assert_backends_agree(chain, np.linspace(-3, 3, 1000))   # returns an AgreementReport

Default tolerances come from the traced graph (see :mod:`autojit.testing.tolerance`). A
backend that cannot run here is reported as skipped, never passed; with fewer than two
backends run there is nothing to compare, and that fails too. Floating-point warnings are
not compared (compiled kernels do not raise them): every backend runs under
``np.errstate(all="ignore")``.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.config import config, current_settings
from autojit.dispatch.dispatcher import Dispatcher
from autojit.errors import StrictFallbackError
from autojit.runtime.arrays import is_cupy_array
from autojit.runtime.targets import EmulatedCudaTarget
from autojit.testing.tolerance import (
    ERROR_RULES,
    TRANSCENDENTAL_ULPS,
    OpError,
    OutputCheck,
    Tolerance,
    compare_output,
    default_tolerances,
    register_error_rule,
)

_LOGGER = logging.getLogger("autojit")
BACKENDS = ("python", "cpu", "gpu", "cuda-emulated")
DEFAULT_BACKENDS = ("python", "cpu", "gpu")
_TALLY: Counter[str] = Counter()
_TALLY_LOCK = threading.Lock()


def backend_unavailable(name: str) -> str | None:
    """Return why backend ``name`` cannot run on this machine, or None when it can."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    if name == "gpu":
        from autojit.routing.route import current_router
        if "gpu" not in current_settings().backends:
            return "not in AUTOJIT_BACKENDS"
        device = current_router().devices.get("gpu")  # the router's: real, or simulated
        return None if device is not None and device.usable() else "no usable CUDA device"
    if name == "cuda-emulated" and shutil.which("g++") is None:
        return "g++ not found (it compiles the CUDA C for the CPU)"
    return None


def available_backends(names: Sequence[str] = DEFAULT_BACKENDS) -> list[str]:
    """Return those of ``names`` that can run on this machine, in order."""
    return [n for n in names if backend_unavailable(n) is None]


def tally() -> dict[str, int]:
    """Return process-wide counts of checks: ``checks``, ``failed``, and one
    ``skipped <backend>: <reason>`` entry per kind of skip (the pytest plugin's summary)."""
    with _TALLY_LOCK:
        return dict(_TALLY)


@dataclass
class Outcome:
    """One backend's run: its ``value`` or ``error``; or why it was ``skipped``; ``failure``
    when it ran but not where it was sent (a GPU error reran on the CPU)."""

    backend: str
    value: Any = None
    error: BaseException | None = None
    skipped: str | None = None
    failure: str | None = None


@dataclass
class AgreementReport:
    """What :func:`assert_backends_agree` saw. ``ran`` lists the backends that ran (the first
    is the reference), ``skipped`` maps the others to the reason, ``checks`` holds one
    OutputCheck per output of every other backend, ``problems`` whole-call disagreements."""

    function: str
    ran: list[str]
    skipped: dict[str, str]
    checks: list[OutputCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and all(c.ok for c in self.checks)

    def format(self) -> str:
        """Return the report as text: a headline, each failure, then what ran and skipped."""
        verdict = "agree" if self.ok else "disagree"
        lines = [f"autojit backends {verdict}: {self.function}"]
        lines += [f"  {p}" for p in self.problems]
        lines += [c.format() for c in self.checks if not c.ok]
        tail = (f"  ran: {', '.join(self.ran)} (reference: {self.ran[0]})" if self.ran
                else "  ran: none")
        if self.skipped:
            tail += "; skipped: " + ", ".join(f"{n} ({why})" for n, why in self.skipped.items())
        return "\n".join(lines + [tail])


def _describe(value: Any) -> str:
    if hasattr(value, "dtype") and getattr(value, "ndim", 0):
        return f"{value.dtype}[{','.join(str(s) for s in value.shape)}]"
    return repr(value)


def _to_host(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_to_host(v) for v in value)
    return value.get() if is_cupy_array(value) else value


def _called(backend: str, fn: Callable, args: Sequence[Any]) -> Outcome:
    """Return the Outcome of ``fn(*args)``; strict-mode errors are not outcomes: they raise."""
    with np.errstate(all="ignore"):
        try:
            return Outcome(backend, value=_to_host(fn(*args)))
        except StrictFallbackError:
            raise
        except Exception as exc:  # the exception type is part of the answer
            return Outcome(backend, error=exc)


def _run_forced(dispatcher: Dispatcher, name: str, args: Sequence[Any], inspection: Any) -> Outcome:
    """Return the Outcome of a call forced to ``name`` ("cpu" or "gpu"), checking it ran there."""
    before = dispatcher.stats()["routes"][name]
    with config(force=name):
        outcome = _called(name, dispatcher, args)
    if outcome.error is not None:
        return outcome  # NumPy raises for these arguments (compared by type) or a bug: reported
    if inspection.plan is None:
        return Outcome(name, skipped=f"runs as plain Python: {inspection.fallback_reason}")
    stats = dispatcher.stats()
    if stats["routes"][name] == before:
        failures = stats["gpu_failures"]
        outcome.failure = (f"the GPU run failed and reran on the CPU: {failures[-1]}"
                           if name == "gpu" and failures else f"the call did not run on {name}")
    return outcome


def _run_emulated(args: Sequence[Any], inspection: Any) -> Outcome:
    """Return the Outcome of the plan's CUDA C run on the CPU through g++."""
    from autojit.runtime.binding import CALL_OK, bind_sizes, call_arguments, check_call
    from autojit.runtime.schedule import run_plan
    plan = inspection.plan
    if plan is None:
        return Outcome("cuda-emulated", skipped=f"runs as plain Python: "
                                                 f"{inspection.fallback_reason}")
    sizes = bind_sizes(plan, args)
    if sizes is None or check_call(plan, args) != CALL_OK:
        return Outcome("cuda-emulated", skipped="NumPy raises for these arguments")
    target = EmulatedCudaTarget()
    programs = [target.compile(k) for k in plan.kernels]
    return _called("cuda-emulated", lambda *a: run_plan(
        plan, programs, target, call_arguments(plan, a), sizes), args)


def _run(dispatcher: Dispatcher, name: str, args: Sequence[Any], inspection: Any) -> Outcome:
    """Return the Outcome of backend ``name`` (skipped where it cannot run)."""
    why = backend_unavailable(name)
    if why is None and name != "python" and current_settings(dispatcher.options).disable:
        why = "autojit is disabled (AUTOJIT_DISABLE / disable=True)"
    if why is not None:
        return Outcome(name, skipped=why)
    if name == "python":
        return _called(name, dispatcher.fn, args)
    if name == "cuda-emulated":
        return _run_emulated(args, inspection)
    return _run_forced(dispatcher, name, args, inspection)


def _compare_calls(report: AgreementReport, reference: Outcome, other: Outcome,
                   tolerances: Callable[[int], list[Tolerance]]) -> None:
    """Add to ``report`` how ``other``'s call compares with ``reference``'s."""
    ref, name = reference.backend, other.backend
    if reference.error is not None or other.error is not None:
        kinds = [type(o.error).__name__ if o.error is not None else "no exception"
                 for o in (other, reference)]
        if kinds[0] != kinds[1]:
            detail = "; ".join(f"{o.backend}: {o.error}" for o in (other, reference) if o.error)
            report.problems.append(f"{name} vs {ref}: raised {kinds[0]}, {ref} {kinds[1]}"
                                   f" ({detail})")
        return
    got, want = other.value, reference.value
    if isinstance(want, tuple) != isinstance(got, tuple) or (
            isinstance(want, tuple) and len(want) != len(got)):
        report.problems.append(f"{name} vs {ref}: results are shaped differently "
                               f"({type(got).__name__} vs {type(want).__name__})")
        return
    gots, wants = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    bounds = tolerances(len(wants))
    report.checks += [compare_output(i, g, w, bounds[i], name, ref)
                      for i, (g, w) in enumerate(zip(gots, wants))]


def _tolerance_source(graph: Any, args: Sequence[Any], rtol: float | None,
                      atol: float | None) -> Callable[[int], list[Tolerance]]:
    """Return a function giving ``count`` tolerances, computed once, on first need."""
    cache: list[list[Tolerance]] = []

    def tolerances(count: int) -> list[Tolerance]:
        if rtol is not None or atol is not None:
            return [Tolerance(rtol=rtol, atol=atol)] * count
        if not cache:
            cache.append(default_tolerances(graph, args))
        found = cache[0]
        return found if len(found) == count else [Tolerance()] * count

    return tolerances


def _build_report(title: str, outcomes: list[Outcome],
                  tolerances: Callable[[int], list[Tolerance]]) -> AgreementReport:
    """Return the report of ``outcomes``: each backend that ran against the first one."""
    ran = [o for o in outcomes if o.skipped is None]
    report = AgreementReport(title, [o.backend for o in ran],
                             {o.backend: o.skipped for o in outcomes if o.skipped is not None})
    report.problems += [f"{o.backend}: {o.failure}" for o in ran if o.failure]
    if len(ran) < 2:
        only = ran[0].backend if ran else "no backend"
        report.problems.append(f"nothing to compare: only {only} ran")
    for other in ran[1:]:
        _compare_calls(report, ran[0], other, tolerances)
    return report


def _count(report: AgreementReport) -> None:
    with _TALLY_LOCK:
        _TALLY["checks"] += 1
        _TALLY["failed"] += not report.ok
        for name, why in report.skipped.items():  # fallback reasons are listed elsewhere
            _TALLY[f"skipped {name}: {why.split(': ', 1)[0]}"] += 1


def assert_backends_agree(fn: Callable, *args: Any, backends: Sequence[str] | None = None,
                          rtol: float | None = None,
                          atol: float | None = None) -> AgreementReport:
    """Run ``fn(*args)`` under each of ``backends`` (default :data:`DEFAULT_BACKENDS`; add
    ``"cuda-emulated"`` to run the CUDA C on the CPU), forced, and assert they agree with the
    first that ran: same exception type, or same kind, dtype, shape and values (within
    ``rtol``/``atol`` when given, else the graph's default tolerances).

    ``fn`` is an ``@autoroute`` function or a plain one (wrapped here). Returns the
    AgreementReport; raises AssertionError with per-output L∞ errors, first differing index
    and both values, and the skipped backends, when they disagree or fewer than two ran.
    """
    dispatcher = fn if isinstance(fn, Dispatcher) else Dispatcher(fn, {})
    names = list(DEFAULT_BACKENDS if backends is None else backends)
    for name in names:
        backend_unavailable(name)  # raises ValueError for an unknown name
    inspection = dispatcher.inspect(*args)
    outcomes = [_run(dispatcher, name, args, inspection) for name in names]
    title = f"{dispatcher.__qualname__}({', '.join(_describe(a) for a in args)})"
    report = _build_report(title, outcomes,
                           _tolerance_source(inspection.graph, args, rtol, atol))
    _count(report)
    _LOGGER.debug("%s", report.format())
    if not report.ok:
        raise AssertionError(report.format())
    return report


#: The old name of :class:`EmulatedCudaTarget` (the runtime's targets were called
#: backends until "backend" was left to the places a call may run): kept so users' test
#: suites that import it keep working; new code should use ``EmulatedCudaTarget``.
EmulatedCudaBackend = EmulatedCudaTarget

__all__ = [
    "BACKENDS", "DEFAULT_BACKENDS", "ERROR_RULES", "TRANSCENDENTAL_ULPS", "AgreementReport",
    "EmulatedCudaBackend", "EmulatedCudaTarget", "OpError", "OutputCheck", "Tolerance",
    "assert_backends_agree", "available_backends", "backend_unavailable", "register_error_rule",
    "tally",
]
