"""The decorated function: signature → cache → route → run, with fallback and stats."""

from __future__ import annotations

import functools
import inspect as pyinspect
import logging
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autojit.errors import AutojitError, BroadcastError, FallbackWarning, TraceError
from autojit.fuse.plan import Plan, plan_kernels
from autojit.policy.backends import (
    Backend,
    CpuBackend,
    GpuBackend,
    bind_sizes,
    guards_hold,
    int_arguments_fit,
    run_plan,
)
from autojit.policy.config import Settings, check_options, current_settings
from autojit.policy.registry import register
from autojit.policy.route import choose_route
from autojit.policy.signature import Signature, describe_argument, signature_of
from autojit.policy.stats import FunctionStats
from autojit.tracer import trace_function

_LOGGER = logging.getLogger("autojit")
BACKENDS: dict[str, Backend] = {"cpu": CpuBackend(), "gpu": GpuBackend()}


@dataclass
class Entry:
    """One compiled version: a plan (or the reason there is none) and its programs."""

    signature: Signature
    plan: Plan | None
    reason: str | None = None
    programs: dict[str, list[Any]] = field(default_factory=dict)


class Dispatcher:
    """What ``@autoroute`` returns: call it like the original function."""

    def __init__(self, fn: Callable, options: dict[str, Any]) -> None:
        self.fn = fn
        self.options = tuple(check_options(dict(options)).items())
        self._signature = pyinspect.signature(fn)
        self._has_varargs = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                for p in self._signature.parameters.values())
        self._cache: dict[Signature, list[Entry]] = {}
        self._lock = threading.RLock()
        self._warned = False
        self._stats = FunctionStats()
        self._last_signature: Signature | None = None
        functools.update_wrapper(self, fn)
        register(self)

    # -- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        settings = current_settings(self.options)
        if settings.disable:
            return self._run_python(args, kwargs)
        if kwargs:
            if self._has_varargs:
                return self._run_python(args, kwargs)
            args = self._signature.bind(*args, **kwargs).args
        entry, sizes = self._entry_for(args, settings)
        if entry is None or entry.plan is None:
            return self._run_python(args, {})
        route, reason = choose_route(settings, args)
        _LOGGER.debug("%s route %s: %s", self.__qualname__, route, reason)
        if route == "python":
            return self._run_python(args, {})
        return self._run_compiled(entry, route, args, sizes)

    def _run_python(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        self._stats.count_call("python")
        return self.fn(*args, **kwargs)

    def _run_compiled(self, entry: Entry, route: str, args: tuple, sizes: dict) -> Any:
        if route == "gpu":
            try:
                from autojit.policy.gpu_route import run_on_gpu
                result = run_on_gpu(self, entry, args, sizes)
                self._stats.count_call("gpu")
                return result
            except Exception as exc:  # contract 2: a GPU failure reruns on the CPU
                self._stats.add("gpu_failures", f"{type(exc).__name__}: {exc}")
                _LOGGER.debug("%s GPU failed (%s); rerunning on the CPU", self.__qualname__, exc)
        programs = self.programs(entry, "cpu")
        result = run_plan(entry.plan, programs, BACKENDS["cpu"], args, sizes)
        self._stats.count_call("cpu")
        return result

    # -- cache -------------------------------------------------------------------------------
    def _entry_for(self, args: tuple, settings: Settings) -> tuple[Entry | None, dict]:
        """Return the entry for these arguments (tracing on a miss) and the size values."""
        signature = signature_of(args)
        if signature is None:
            self._note_fallback("an argument is not a NumPy array or scalar of a supported "
                                "dtype (bool, int8-64, uint8-64, float32, float64)")
            return None, {}
        found = self._lookup(signature, args)
        if found is not None:
            self._stats.add("cache_hits", 1)
            return found
        with self._lock:
            found = self._lookup(signature, args)   # another thread may have compiled it
            if found is not None:
                self._stats.add("cache_hits", 1)
                return found
            return self._trace(signature, args, settings)

    def _lookup(self, signature: Signature, args: tuple) -> tuple[Entry | None, dict] | None:
        """Return (entry, sizes) from the memory cache, (None, {}) when NumPy would raise
        for these arguments, or None on a miss."""
        for entry in self._cache.get(signature, ()):
            if entry.plan is None:
                return entry, {}
            sizes = bind_sizes(entry.plan, args)
            if sizes is None or not int_arguments_fit(entry.plan, args):
                return None, {}  # NumPy raises for these arguments; let it
            if guards_hold(entry.plan, sizes, args):
                return entry, sizes
        return None

    def _trace(self, signature: Signature, args: tuple,
               settings: Settings) -> tuple[Entry | None, dict]:
        self._stats.add("cache_misses", 1)
        self._explain_miss(signature)
        started = time.perf_counter()
        try:
            graph = trace_function(self.fn, args, self.__qualname__)
            contiguous = [bool(k[0] in "ag" and k[4]) for k in signature]
            entry = Entry(signature, plan_kernels(graph, contiguous, settings.fusion_max_ops))
        except BroadcastError:
            return None, {}
        except TraceError as exc:
            entry = Entry(signature, None, str(exc))
            self._note_fallback(str(exc))
        self._stats.add("compile_seconds", time.perf_counter() - started)
        self._cache.setdefault(signature, []).append(entry)
        if entry.plan is None:
            return entry, {}
        sizes = bind_sizes(entry.plan, args)
        return entry, sizes or {}

    def _explain_miss(self, signature: Signature) -> None:
        previous, self._last_signature = self._last_signature, signature
        if previous is None:
            return
        if previous == signature:
            why = "a size the function reads (x.shape) changed"
        else:
            names = [p for p in self._signature.parameters]
            changes = [f"{names[i] if i < len(names) else i}: {describe_argument(a)} -> "
                       f"{describe_argument(b)}"
                       for i, (a, b) in enumerate(zip(previous, signature)) if a != b]
            why = "; ".join(changes) or "argument count changed"
        self._stats.add("recompiles", why)
        _LOGGER.debug("%s recompiles: %s", self.__qualname__, why)

    def _note_fallback(self, reason: str) -> None:
        self._stats.add("fallbacks", reason)
        if not self._warned:
            self._warned = True
            warnings.warn(f"autojit: {self.__qualname__} runs as plain Python: {reason}",
                          FallbackWarning, stacklevel=5)

    def programs(self, entry: Entry, backend: str) -> list[Any]:
        """Return (compiling once) the entry's programs for ``backend``."""
        programs = entry.programs.get(backend)
        if programs is None:
            with self._lock:
                programs = entry.programs.get(backend)
                if programs is None:
                    started = time.perf_counter()
                    programs = [BACKENDS[backend].compile(k) for k in entry.plan.kernels]
                    entry.programs[backend] = programs
                    self._stats.add("compiles", 1)
                    self._stats.add("compile_seconds", time.perf_counter() - started)
        return programs

    # -- introspection -----------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Return counters: calls, routes, compiles, cache hits/misses, fallbacks (reasons)."""
        return self._stats.snapshot()

    def inspect(self, *args: Any, **kwargs: Any) -> Any:
        """Return an Inspection of every stage for these arguments (nothing is run)."""
        from autojit.inspect.inspection import Inspection
        if kwargs:
            args = self._signature.bind(*args, **kwargs).args
        settings = current_settings(self.options)
        entry, _ = self._entry_for(args, settings)
        if entry is None:
            return Inspection(self.__qualname__, None, None, "python",
                              "arguments NumPy rejects or autojit cannot compile")
        if entry.plan is None:
            return Inspection(self.__qualname__, entry, None, "python", entry.reason)
        try:
            route, reason = choose_route(settings, args)
        except AutojitError as exc:
            route, reason = "cpu", str(exc)
        return Inspection(self.__qualname__, entry, self.programs(entry, "cpu"), route, reason)

    def __repr__(self) -> str:
        return f"<autoroute {self.__qualname__}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else functools.partial(self, instance)
