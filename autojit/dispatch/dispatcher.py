"""The decorated function: signature → Executable → route → run, with fallback and stats.

Settings are resolved here, once per call (``current_settings(options)``: the decorator's
options over ``config()`` over the environment), and passed down to the router, the
device and the target; nothing below reads them again.
"""

from __future__ import annotations

import functools
import inspect as pyinspect
import logging
import threading
import time
import types
import warnings
from collections.abc import Callable
from typing import Any

from autojit.cache import disk_cache
from autojit.config import Settings, check_options, current_settings, on_environment
from autojit.dispatch.fastpath import MISS, FastPath, fast_with_prologue
from autojit.dispatch.guards import Guards, Unguardable, collect
from autojit.dispatch.signature import SIZE_ONE_CHANGE, describe_change, signature_of
from autojit.dispatch.static_args import (
    MAX_SPECIALISATIONS,
    CallForm,
    CallShape,
    call_shape,
    callable_name,
    specialise,
    split_call,
    static_positions,
)
from autojit.errors import (
    AutojitError,
    BroadcastError,
    CallRaisesError,
    FallbackWarning,
    StrictFallbackError,
    TraceError,
)
from autojit.fuse.plan import Plan, plan_kernels
from autojit.ir.fp_errors import numpy_reports_fp_errors
from autojit.ir.verify import set_checks
from autojit.lower_cpu.budget import CompileBudgetError, check_outlines
from autojit.observe.registry import register
from autojit.observe.report import log_decision
from autojit.observe.stats import FunctionStats
from autojit.routing.decisions import (
    ROUTE_CPU,
    ROUTE_GPU,
    ROUTE_PYTHON,
    BucketState,
    Decision,
    cpu_rerun,
)
from autojit.routing.host_loop import HostLoopRule
from autojit.routing.route import Router, choose_route, current_router
from autojit.runtime.arrays import GPU_ARRAY, HOST_ARRAY, Signature
from autojit.runtime.binding import (
    CALL_MISS,
    CALL_OK,
    SIZES_MISS,
    bind_sizes,
    call_arguments,
    changed_decision,
    check_call,
    guards_hold,
    shared_arguments,
)
from autojit.runtime.devices import transfer_counts
from autojit.runtime.executable import Executable
from autojit.runtime.regions import HOST_ITERATIONS, RegionMiss
from autojit.tracer import trace_function
from autojit.tracer.state import CURRENT_TRACE

# the pipeline's verify switch (AUTOJIT_CHECKS, process-wide) follows the environment
on_environment(lambda settings: set_checks(settings.checks))

#: why a call ran as Python under an error policy compiled code cannot honour (ir/fp_errors.py)
FP_POLICY_REASON = ("np.errstate/np.seterr asks NumPy to raise, call, print or log FP errors; "
                    "such calls run as Python")

_LOGGER = logging.getLogger("autojit")
#: traces after a guard failed (a global, closure cell or default changed) before a function
#: runs as plain Python for environments it has not seen: one that changes every call
#: (a counter) would otherwise compile on every call
MAX_GUARD_RETRACES = 16
#: traces for another decision on Python scalars (``if n > 100:`` took the other branch)
#: before calls deciding otherwise than every compiled version run as plain Python
MAX_DECISION_RETRACES = 16
#: a recompile's reason where a Python value computed from the call's scalars has another
#: type than traced: the tracer's guards on a sign (``tracer.regions._guard_nonnegative``)
_SIGN_CHANGED = ("the sign of a Python int the trace guards on changed (a range() loop on "
                 "the call's ints ran at least once, now none, or the reverse; or int ** int)")


def _signature_of_callable(fn: Callable) -> pyinspect.Signature:
    """Return ``fn``'s signature; ``(*args, **kwargs)`` for a callable that has none that
    Python can tell (some builtins): positional calls are traced, keyword calls run it
    as it is. TypeError for what is not callable at all."""
    if not callable(fn):
        raise TypeError(f"autoroute needs a callable, not {type(fn).__name__}")
    try:
        return pyinspect.signature(fn)
    except (TypeError, ValueError):
        kinds = pyinspect.Parameter
        return pyinspect.Signature([kinds("args", kinds.VAR_POSITIONAL),
                                    kinds("kwargs", kinds.VAR_KEYWORD)])


def _sizes_miss(plan: Plan, args: tuple) -> str | None:
    """Why ``bind_sizes`` missed (``SIZES_MISS``), for the recompile: a sign the trace guards
    on, a size 1 it specialised on (a Python int's, a view's: no size the trace read as a
    value, ``graph.guards``); None (the default words) where a size it read changed."""
    if plan.graph.prologue and call_arguments(plan, args) is None:
        return _SIGN_CHANGED
    if not plan.graph.guards:
        return f"{SIZE_ONE_CHANGE} from a Python int or of a view"
    return None


class Dispatcher:
    """What ``@autoroute`` returns: call it like the original function."""

    def __init__(self, fn: Callable, options: dict[str, Any], registered: bool = True) -> None:
        self.fn = fn
        options = dict(options)
        self._signature = _signature_of_callable(fn)
        self._static = static_positions(self._signature, options.pop("static_argnames", ()),
                                        options.pop("static_argnums", ()))
        self._specialised: dict[tuple, Dispatcher] = {}
        self._shapes: dict[tuple, CallShape] = {}   # by (argument count, keyword names)
        self.options = tuple(check_options(options).items())
        self._has_varargs = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                for p in self._signature.parameters.values())
        # calls that must be bound first: static values, or a keyword-only argument that has
        # no default (a call without it raises Python's TypeError, not a failed trace)
        self._bind_always = bool(self._static) or any(
            p.kind is p.KEYWORD_ONLY and p.default is p.empty
            for p in self._signature.parameters.values())
        self._cache: dict[Signature, list[Executable]] = {}
        self._lock = threading.RLock()
        self._warned = False
        self._stats = FunctionStats()
        self._last_signature: Signature | None = None
        self._miss_reason: str | None = None   # a changed decision, for the next recompile
        self._guard_retraces = 0
        self._decision_retraces = 0
        self._fastpath = FastPath()   # repeat calls served natively (dispatch/fastpath.py)
        self._fast: Callable[[tuple], Any] | None = None   # its native table, once armed
        # (host prologue replay, native table): the one armed Executable with a prologue
        self._hosted: tuple[Callable, Callable[[tuple], Any]] | None = None
        # a function's attributes are copied as any decorator does; a callable object's
        # (an instance's own state: ``options``, ``fn``, ...) would overwrite the Dispatcher's
        functools.update_wrapper(self, fn, updated=functools.WRAPPER_UPDATES
                                 if isinstance(fn, types.FunctionType) else ())
        self.__qualname__ = callable_name(fn)   # a partial has none to copy
        if registered:
            register(self)

    # -- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast   # (its gate is closed under another np.errstate: checked below)
        if fast is not None and not kwargs:
            result = fast(args)
            if result is not MISS:
                return result
        hosted = self._hosted
        if hosted is not None and not kwargs:   # Python-scalar arithmetic first, then native
            result = fast_with_prologue(hosted, args)
            if result is not MISS:
                return result
        if numpy_reports_fp_errors():   # np.errstate(...='raise') around the call: NumPy's
            self._stats.add("fallbacks", FP_POLICY_REASON)
            return self._run_python(args, kwargs)
        if CURRENT_TRACE.get() is not None:
            # called by a function being traced: its body joins that trace (the arguments
            # are the tracer's proxies, not arrays: no fallback of its own to note)
            return self.fn(*args, **kwargs)
        if kwargs or self._bind_always:
            if self._has_varargs:
                return self._run_python(args, kwargs)
            target, args = self._bind(args, kwargs)
            if target is not None:
                return target(*args)
            if fast is not None:
                result = fast(args)
                if result is not MISS:
                    return result
        settings = current_settings(self.options)
        if settings.disable:
            return self._run_python(args, {})
        entry, sizes = self._entry_for(args, settings)
        if entry is None or entry.plan is None:
            return self._run_python(args, {})
        rule = entry.host_loop
        if rule is not None and settings.force is None:   # (routing.host_loop)
            if rule.python is not None and rule.covers(args):
                self._stats.note_decision(Decision(ROUTE_PYTHON, rule.python), 0)
                return self._run_python(args, {})
            if rule.wants_probe(args):
                return self._probe_python(rule, args)
        router = current_router()
        decision, state, n = router.choose(entry, sizes, settings)
        if _LOGGER.isEnabledFor(logging.DEBUG):
            log_decision(self.__qualname__, decision, n)
        if decision.route == ROUTE_PYTHON:
            self._stats.note_decision(decision, n)
            return self._run_python(args, {})
        given = args
        if entry.plan.graph.prologue:   # Python-scalar arithmetic: its values, replayed
            args = tuple(call_arguments(entry.plan, args))
        result = self._run_compiled(entry, args, sizes, router, decision, state, n, given,
                                    settings)
        if entry.plan is None or entry.plan.cpu_refusal:   # it ran as Python
            return result
        if decision.route == ROUTE_CPU and not (decision.to_device or decision.fetch_inputs):
            self._fastpath.after_cpu_call(self, entry, settings, n)
        return result

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> tuple[Callable | None, tuple]:
        """Return (the child dispatcher for this call's form, or None for this one; the
        arguments to pass). The call is bound once per shape (argument count, keyword
        names); later calls of that shape only pick their values out."""
        key = (len(args), *kwargs)
        shape = self._shapes.get(key)
        if shape is None:
            shape = call_shape(self._signature, self._static, args, kwargs)   # TypeError
            if len(self._shapes) < MAX_SPECIALISATIONS:
                self._shapes[key] = shape
        key, form, args = shape.split(self.fn, args, kwargs)
        return (None if form is None else self._specialisation(key, form)), args

    def _run_python(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        self._stats.count_call("python")
        return self.fn(*args, **kwargs)

    def _probe_python(self, rule: HostLoopRule, args: tuple) -> Any:
        """Run a call that repeats a host-loop-heavy compiled one as plain Python, timed:
        the entry's later calls run as Python where it was much faster (its reason kept
        with the decisions, logged once)."""
        started = time.perf_counter()
        try:
            return self._run_python(args, {})
        finally:
            reason = rule.after_python(time.perf_counter() - started)
            if reason is not None:
                _LOGGER.info("%s: runs as plain Python from now on: %s", self.__qualname__,
                             reason)

    def _run_compiled(self, entry: Executable, args: tuple, sizes: dict, router: Router,
                      decision: Decision, state: BucketState, n: int,
                      given: tuple, settings: Settings) -> Any:
        """Run on the decided device; a GPU failure reruns on the CPU (contract 2), a CPU
        compile failure as Python on the arguments as ``given`` (before any host prologue)."""
        if decision.route == ROUTE_GPU:
            done = self._run_gpu(entry, args, sizes, router, decision, state, settings)
            if done is not None:
                self._stats.record("gpu", decision, n, done[1])
                router.observe(state, "gpu", n, done[1])
                return done[0]
            decision = cpu_rerun(decision, entry.routing.resident)
        if "cpu" not in entry.programs_by_target and not self._cpu_compiles(entry, settings):
            return self._run_python(given, {})
        iterations = HOST_ITERATIONS[0]
        try:
            result, seconds = router.devices["cpu"].run(entry, args, sizes, decision, settings)
        except RegionMiss as exc:   # the arguments are as given again (run_plan)
            self._note_fallback(f"this call's loop met an iteration the compiled loop "
                                f"cannot run ({exc})", settings)
            return self._run_python(given, {})
        iterations = HOST_ITERATIONS[0] - iterations
        if iterations and settings.force is None:   # its loops ran as the host loop
            if entry.host_loop is None:
                entry.host_loop = HostLoopRule()
            entry.host_loop.after_compiled(given, seconds, iterations)
        if decision.to_device or decision.fetch_inputs:
            result = self._place_cpu_result(router, args, result, decision)
        self._stats.record("cpu", decision, n, seconds)
        router.observe(state, "cpu", n, seconds)
        return result

    def _cpu_compiles(self, entry: Executable, settings: Settings) -> bool:
        """Compile the entry's CPU programs; an internal error doing so (LLVM rejecting
        the IR autojit wrote) makes the entry a fallback with the reason, not the caller's
        exception. A plan the CPU refuses (``Plan.cpu_refusal``) runs as Python on the CPU
        route and keeps its kernels for the GPU."""
        if entry.plan is not None and entry.plan.cpu_refusal:
            self._note_fallback(entry.plan.cpu_refusal, settings)
            return False
        try:
            entry.programs("cpu")
        except CompileBudgetError as exc:   # too big to compile in time: Python from now on
            reason = str(exc)
            _LOGGER.debug("%s: %s", self.__qualname__, reason)
            entry.plan, entry.reason = None, reason
            self._note_fallback(reason, settings)
            return False
        except Exception as exc:  # an autojit bug: run the Python from now on
            reason = f"internal error while compiling ({type(exc).__name__}: {exc})"
            _LOGGER.debug("%s: %s", self.__qualname__, reason, exc_info=True)
            entry.plan, entry.reason = None, reason
            self._note_fallback(reason, settings)
            return False
        return True

    def _run_gpu(self, entry: Executable, args: tuple, sizes: dict, router: Router,
                 decision: Decision, state: BucketState,
                 settings: Settings) -> tuple[Any, float] | None:
        """Return (result, seconds) from the GPU, or None when it failed (inputs untouched:
        the GPU works on copies, so the CPU rerun sees the caller's data unchanged)."""
        gpu = router.devices["gpu"]
        try:
            result, seconds = gpu.run(entry, args, sizes, decision, settings)
        except Exception as exc:  # compile error, launch error, out of memory, ...
            self._stats.gpu_failed(exc)
            router.gpu_done(state, exc)
            _LOGGER.debug("%s GPU failed (%s: %s); rerunning on the CPU",
                          self.__qualname__, type(exc).__name__, exc)
            return None
        router.gpu_done(state, None)
        self._stats.add_transfers(*transfer_counts(args, result, "gpu", decision, gpu))
        return result, seconds

    def _place_cpu_result(self, router: Router, args: tuple, result: Any,
                          decision: Decision) -> Any:
        """Return a CPU result where the decision wants it (on the GPU for device residency;
        kept on the host, with a debug line, when the GPU cannot take it)."""
        gpu = router.devices["gpu"]
        if decision.to_device:
            try:
                result = gpu.to_device(result)
            except Exception as exc:  # the GPU is failing: the host copy is still correct
                _LOGGER.debug("%s result stays on the host: %s", self.__qualname__, exc)
        self._stats.add_transfers(*transfer_counts(args, result, "cpu", decision, gpu))
        return result

    def _specialisation(self, key: tuple, form: CallForm) -> Callable:
        """Return the function for calls of this form (static values, keyword arguments): a
        Dispatcher of its own (sharing this one's stats), or beyond MAX_SPECIALISATIONS the
        plain Python function."""
        found = self._specialised.get(key)
        if found is not None:
            return found
        with self._lock:
            if key not in self._specialised:
                if len(self._specialised) >= MAX_SPECIALISATIONS:
                    self._note_fallback(f"more than {MAX_SPECIALISATIONS} distinct values of "
                                        "the static arguments or keyword-argument forms "
                                        "(one compile each)")
                    return functools.partial(self._run_python_static, form)
                fn = specialise(self.fn, self._signature, form)
                found = Dispatcher(fn, dict(self.options), registered=False)
                found._stats = self._stats
                self._specialised[key] = found
            return self._specialised[key]

    def _run_python_static(self, form: CallForm, *dynamic: Any) -> Any:
        self._stats.count_call("python")
        return specialise(self.fn, self._signature, form)(*dynamic)

    # -- cache -------------------------------------------------------------------------------
    def _entry_for(self, args: tuple,
                   settings: Settings) -> tuple[Executable | None, dict]:
        """Return the entry for these arguments (tracing on a miss) and the size values."""
        signature = signature_of(args)
        if signature is None:
            self._note_fallback("an argument is not a NumPy array (exactly ndarray: "
                                "subclasses such as np.matrix or masked arrays run as they "
                                "are) or scalar of a supported dtype (bool, int8-64, "
                                "uint8-64, float32, float64)", settings)
            return None, {}
        found = self._lookup(signature, args)
        if found is not None:
            self._stats.hit()
            return self._recheck_fallback(found, settings) if settings.strict else found
        with self._lock:
            found = self._lookup(signature, args)   # another thread may have compiled it
            if found is not None:
                self._stats.add("cache_hits", 1)
                return self._recheck_fallback(found, settings)
            return self._trace_guarded(signature, args, settings)

    def _trace_guarded(self, signature: Signature, args: tuple,
                       settings: Settings) -> tuple[Executable | None, dict]:
        """Trace on a miss; a miss because the environment changed (an entry's guards
        failed) counts towards MAX_GUARD_RETRACES, beyond which calls run as Python."""
        entries = self._cache.get(signature, ())
        changed = any(not entry.guards.hold() for entry in entries)
        if changed:
            if self._guard_retraces >= MAX_GUARD_RETRACES:
                self._note_fallback(f"the globals, closure variables or defaults it reads "
                                    f"changed more than {MAX_GUARD_RETRACES} times (one "
                                    "compile each)", settings)
                return None, {}
            self._guard_retraces += 1
        elif self._miss_reason is not None:   # another decision on the call's scalars
            if self._decision_retraces >= MAX_DECISION_RETRACES:
                self._miss_reason = None
                self._note_fallback(f"more than {MAX_DECISION_RETRACES} traces for other "
                                    "decisions on its Python scalars (one compile each)",
                                    settings)
                return None, {}
            self._decision_retraces += 1
        return self._trace(signature, args, settings, changed)

    def _lookup(self, signature: Signature,
                args: tuple) -> tuple[Executable | None, dict] | None:
        """Return (entry, sizes) from the memory cache, (None, {}) when NumPy would raise
        for these arguments, or None on a miss."""
        self._miss_reason = None   # set again below by an entry missing on a decision
        for entry in self._cache.get(signature, ()):
            guards = entry.guards
            if guards.checks and not guards.hold():
                continue   # traced under other globals / cells / defaults
            plan = entry.plan
            if plan is None:
                return entry, {}
            sizes = bind_sizes(plan, args)
            graph = plan.graph   # most plans have none of the guards: skip the calls
            if sizes.__class__ is not dict:   # (a dict is the usual answer: one test)
                if sizes is SIZES_MISS:   # a size this version was specialised on differs
                    self._miss_reason = _sizes_miss(plan, args)
                    continue
                if graph.decisions and self._decided_otherwise(plan, args):
                    continue   # its views are another path's (x[k] of a loop Python ran)
                self._note_shared(plan, args)
                return None, {}  # None: NumPy raises for these arguments; let it
            if graph.guards and not guards_hold(plan, sizes, args):
                continue
            if graph.int_guards or graph.prologue or graph.decisions:   # Python scalar checks
                status = check_call(plan, args)
                if status == CALL_MISS:
                    self._note_miss(plan, args)
                    continue     # traced for other Python scalar types or decisions
                if status != CALL_OK:
                    return None, {}  # Python or NumPy raises for these values; let it
            return entry, sizes
        return None

    def _decided_otherwise(self, plan: Plan, args: tuple) -> bool:
        """Whether a plan whose views NumPy refuses for ``args`` was traced for another
        decision on the call's Python scalars (then it is not this call's: a miss, not
        NumPy raising); notes why, as a miss does."""
        if check_call(plan, args) != CALL_MISS:
            return False
        self._note_miss(plan, args)
        return True

    def _note_miss(self, plan: Plan, args: tuple) -> None:
        """Why a plan missed on the call's Python scalars, for the recompile this miss may
        become: a changed decision, or a prologue value of another type (``ir.host``: the
        tracer's guards on a sign, ``1 ** v``, are such values)."""
        values = call_arguments(plan, args)
        self._miss_reason = _SIGN_CHANGED if values is None else changed_decision(plan, values)

    def _trace(self, signature: Signature, args: tuple, settings: Settings,
               environment_changed: bool = False) -> tuple[Executable | None, dict]:
        self._stats.add("cache_misses", 1)
        self._explain_miss(signature, environment_changed)
        try:
            guards = collect(self.fn)   # before the trace: the values it is about to read
        except Unguardable as exc:
            entry = self._executable(signature, None, str(exc))
            self._cache.setdefault(signature, []).append(entry)
            self._note_fallback(str(exc), settings)
            return entry, {}
        slot = disk_cache.open_slot(self.fn, self.__qualname__, signature, settings)
        found = self._load_from_disk(slot, signature, args, guards)
        if found is not None:
            return found
        started = time.perf_counter()
        try:
            graph = trace_function(self.fn, args, self.__qualname__)
            arrays = [k.kind in (HOST_ARRAY, GPU_ARRAY) for k in signature]
            contiguous = [a and bool(k.contiguous) for a, k in zip(arrays, signature)]
            c_strided = [a and bool(k.c_strided) for a, k in zip(arrays, signature)]
            # over the CPU's compile budget: Python, decided before the kernels are emitted
            check = (None if settings.force == "gpu"
                     else functools.partial(check_outlines, len(graph.nodes)))
            entry = self._executable(signature, plan_kernels(
                graph, contiguous, settings.fusion_max_ops, check, c_strided), guards=guards)
        except (BroadcastError, CallRaisesError):
            return None, {}   # depends on these arguments' values: run Python, cache nothing
        except (TraceError, CompileBudgetError) as exc:
            entry = self._executable(signature, None, str(exc), guards=guards)
            self._note_fallback(str(exc), settings)
        except Exception as exc:  # an autojit bug while planning: run the Python instead
            reason = f"internal error while planning ({type(exc).__name__}: {exc})"
            _LOGGER.debug("%s: %s", self.__qualname__, reason, exc_info=True)
            entry = self._executable(signature, None, reason)
            self._note_fallback(reason, settings)
        self._stats.add("compile_seconds", time.perf_counter() - started)
        if slot is not None and entry.plan is not None:
            entry.disk = disk_cache.store_plan(slot, entry.plan)
        self._cache.setdefault(signature, []).append(entry)
        if entry.plan is None:
            return entry, {}
        sizes = bind_sizes(entry.plan, args)
        if sizes is None:
            self._note_shared(entry.plan, args)
        if sizes is None or sizes is SIZES_MISS or check_call(entry.plan, args) != CALL_OK:
            return None, {}  # NumPy raises for these arguments (an empty max, say); let it
        return entry, sizes

    def _load_from_disk(self, slot: disk_cache.DiskSlot | None, signature: Signature,
                        args: tuple, guards: Guards) -> tuple[Executable, dict] | None:
        """Return (entry, sizes) for a plan the disk cache holds (no trace), or None."""
        if slot is None:
            return None
        found = disk_cache.load_plan(slot, functools.partial(_fits, args=args))
        self._stats.add("disk_misses" if found is None else "disk_hits", 1)
        if found is None:
            return None
        plan, sizes, slot = found
        entry = self._executable(signature, plan, disk=slot, guards=guards)
        self._cache.setdefault(signature, []).append(entry)
        return entry, dict(sizes)

    def _explain_miss(self, signature: Signature, environment_changed: bool = False) -> None:
        previous, self._last_signature = self._last_signature, signature
        self._miss_reason, reason = None, self._miss_reason
        if previous is None:
            return
        if environment_changed:
            why = "a global, closure variable, default or helper it reads changed"
        elif previous == signature:
            why = reason or "a size the function reads (x.shape) changed"
        else:
            names = [p for p in self._signature.parameters]
            changes = [f"{names[i] if i < len(names) else i}: {describe_change(a, b)}"
                       for i, (a, b) in enumerate(zip(previous, signature)) if a != b]
            why = "; ".join(changes) or "argument count changed"
        self._stats.add("recompiles", why)
        _LOGGER.debug("%s recompiles: %s", self.__qualname__, why)

    def _recheck_fallback(self, found: tuple[Executable | None, dict],
                          settings: Settings) -> tuple[Executable | None, dict]:
        """Return ``found``; in strict mode a cached fallback raises as a fresh one does."""
        entry = found[0]
        if settings.strict and entry is not None and entry.plan is None:
            self._note_fallback(entry.reason or "cannot be compiled", settings)
        return found

    def _note_shared(self, plan: Plan, args: tuple) -> None:
        """A call whose arguments share memory the plan took for distinct arrays runs as
        Python (NumPy's answer): say so, as any fallback, rather than silently."""
        pair = shared_arguments(plan, args)
        if pair is not None:
            names = list(self._signature.parameters)
            written, other = (names[i] if i < len(names) else f"argument {i}" for i in pair)
            where = f"{plan.graph.loc}: " if plan.graph.loc else ""
            self._note_fallback(f"{where}arguments {written} and {other} share memory; the "
                                f"compiled version writes {written} and was traced with {other} "
                                "as a separate array: this call ran as plain Python")

    def _note_fallback(self, reason: str, settings: Settings | None = None) -> None:
        """Record a fallback to Python; warn once, or raise StrictFallbackError in strict mode
        (``settings``: the call's; resolved here for a fallback outside a call's)."""
        self._stats.add("fallbacks", reason)
        if (settings or current_settings(self.options)).strict:
            raise StrictFallbackError.for_function(self.fn, self.__qualname__, reason)
        if not self._warned:
            self._warned = True
            warnings.warn(f"autojit: {self.__qualname__} runs as plain Python: {reason}",
                          FallbackWarning, stacklevel=5)

    def _executable(self, signature: Signature, plan: Plan | None, reason: str | None = None,
                    **fields: Any) -> Executable:
        """Return a new Executable whose compiles count in this function's stats."""
        return Executable(signature, plan, reason, on_compile=self._compiled, **fields)

    def _compiled(self, seconds: float) -> None:
        self._stats.add("compiles", 1)
        self._stats.add("compile_seconds", seconds)

    # -- introspection -----------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Return counters: calls and routes, compiles and compile time, cache hits/misses,
        fallbacks and GPU failures (reasons), the last 128 ``decisions`` (route, reason, both
        estimates), GPU hit rate, residency ratio, bytes moved, latency p50/p99 per route."""
        return self._stats.snapshot()

    def inspect(self, *args: Any, **kwargs: Any) -> Any:
        """Return an Inspection of every stage for these arguments (nothing is run)."""
        from autojit.explain.inspection import Inspection
        if kwargs or self._bind_always:
            if self._has_varargs:
                return Inspection(self.__qualname__, None, None, "python",
                                  "keyword arguments to a function taking *args/**kwargs")
            key, form, args = split_call(self._signature, self._static, args, kwargs,
                                         self.fn)
            if form is not None:
                target = self._specialisation(key, form)
                if isinstance(target, Dispatcher):
                    return target.inspect(*args)
                return Inspection(self.__qualname__, None, None, "python",
                                  f"more than {MAX_SPECIALISATIONS} static specialisations")
        settings = current_settings(self.options)
        entry, sizes = self._entry_for(args, settings)
        if entry is None:
            return Inspection(self.__qualname__, None, None, "python",
                              "arguments NumPy rejects or autojit cannot compile")
        if entry.plan is None:
            return Inspection(self.__qualname__, entry, None, "python", entry.reason)
        try:
            route, reason = choose_route(settings, args, entry, sizes)
        except AutojitError as exc:
            route, reason = "cpu", str(exc)
        if entry.plan.cpu_refusal and route == "cpu":
            return Inspection(self.__qualname__, entry, None, "python", entry.plan.cpu_refusal)
        try:
            programs = entry.programs("cpu")
        except CompileBudgetError as exc:   # what a call would do: run as Python
            return Inspection(self.__qualname__, entry, None, "python", str(exc))
        return Inspection(self.__qualname__, entry, programs, route, reason, sizes)

    def __repr__(self) -> str:
        return f"<autoroute {self.__qualname__}>"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else functools.partial(self, instance)


def _fits(plan: Plan, args: tuple) -> dict[str, int] | None:
    """Return the size values of a call of ``plan`` with ``args``, or None when the plan
    does not answer it (a disk-cached plan traced for other sizes or scalar types)."""
    sizes = bind_sizes(plan, args)
    if sizes is None or check_call(plan, args) != CALL_OK or not guards_hold(plan, sizes, args):
        return None
    return dict(sizes)
