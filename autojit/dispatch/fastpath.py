"""The warm-call fast path: repeat calls served natively, without the Python machinery.

After a normal CPU call the dispatcher may *arm* the call's compiled entry: its plan is
encoded (:func:`encode_spec`) for the native ``Table`` of ``autojit/_native/fastcall.c``,
which then serves later calls by itself — it checks each argument (exact type, dtype,
ndim, layout, the size equalities of the plan, Python scalar ranges) and the entry's
guards (the globals, closure cells and defaults the trace read: dispatch/guards.py, by
identity), allocates the outputs, packs ``(data, meta)`` and calls the kernel. Anything
it is not sure of returns ``MISS`` and the full path runs, so the fast path can make a call
slower, never different.

An entry is armed only when the full path could not have chosen anything else:

* the plan is up to ``MAX_CALLS`` kernels, with no library steps, no views and no writes
  into arguments, and its results are freshly allocated (intermediates too: no reuse);
* every argument is a host NumPy array or a scalar;
* the route cannot change: no ``disable``, ``force`` unset or ``"cpu"``, results kept on
  the host, the process's real router with the real CPU device, and the call's element
  count below ``gpu_min_elems`` (checked natively on every call, like the loop work, which
  must stay below the threading threshold: big calls always take the full path);
* ``autojit`` debug logging is off (each routed call would be logged).

The table is armed under a gate: the settings generation (``autojit.config.GENERATION``,
one number bumped when the environment is re-read, the router is swapped or the
``autojit`` logger's level may have changed) and this context's ``config()`` overrides
(by identity: they are context-local, so one process-wide number cannot stand for them).
The native table compares both on every call; a change sends calls to the full path,
which re-arms. Nothing is read from C by a module global's name. A spec tuple starts
with ``SPEC_VERSION``: an extension built for another layout refuses it (no fast path).

Stats: fast calls are counted natively and folded into ``stats()`` (``calls``,
``routes["cpu"]``, ``cache_hits`` and ``fast_calls``); each one's time (allocation, kernels,
results: what the full path times) goes to the CPU latency window and ``latency_sum_s``.
Routing decisions are not logged for fast calls: one call in ``SAMPLE_EVERY`` takes the
full path on purpose, so the decision log keeps being sampled (and the router sees it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from autojit.config import GENERATION, LOG_LEVEL_WATCHED, OVERRIDES, Settings
from autojit.fuse.plan import Plan
from autojit.ir import fp_errors
from autojit.ir.graph import Graph
from autojit.ir.host import compile_prologue
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.routing.route import installed_router
from autojit.runtime.arrays import HOST_ARRAY, NP_SCALAR, PY_SCALAR, ArrayKey, ScalarKey
from autojit.runtime.devices import HostDevice
from autojit.runtime.executable import Executable
from autojit.runtime.schedule import KernelCall, Schedule, build_schedule

if TYPE_CHECKING:   # the dispatcher imports this module: only its type is needed here
    from autojit.dispatch.dispatcher import Dispatcher

try:
    from autojit._native import fastcall as _native
except ImportError:   # the extension did not build: every call takes the full path
    _native = None

_LOGGER = logging.getLogger("autojit")
#: the layout of a spec tuple (fastcall.c SPEC_VERSION): (version, codes, constants,
#: addresses, guards)
SPEC_VERSION = 2
MISS: Any = _native.MISS if _native is not None else object()
MAX_WORK = 1 << 13        # loop iterations a fast call may run (more: full path, threads)
SAMPLE_EVERY = 1024       # one call in this many takes the full path (decisions, latency)
MAX_SPECS = 8             # armed entries per function, most recently armed first
MAX_CALLS = 4             # kernels per plan the native entry runs (fastcall.c MAX_CALLS)
_NO_LIMIT = 1 << 62
_SCRATCH = np.zeros(4, np.int64)   # the counter of tables built only to validate a spec

_ARRAY, _PYFLOAT, _PYINT, _PYBOOL, _NPSCALAR = 1, 2, 3, 4, 5
_PY_KINDS = {"float": _PYFLOAT, "int": _PYINT, "bool": _PYBOOL}
_BUF_ARG, _BUF_ALLOC, _BUF_CONST = 0, 1, 2

if _native is not None:
    try:   # the gate reads these on every call: two objects given once, none by name
        if not LOG_LEVEL_WATCHED:
            raise TypeError("logging keeps no level cache to watch")
        if getattr(_native, "SPEC_VERSION", None) != SPEC_VERSION:
            raise TypeError("the extension was built for another spec layout (rebuild it)")
        _native.configure(OVERRIDES, GENERATION, fp_errors.POLICY_VAR,
                          fp_errors.numpy_reports_fp_errors)
    except (AttributeError, TypeError) as exc:
        _LOGGER.debug("autojit: no native fast path: %s", exc)
        _native = None


def available() -> bool:
    """Return True when the native extension is built (else there is no fast path)."""
    return _native is not None


class Unsupported(Exception):
    """The plan or signature is outside what the native entry serves."""


def _int_ranges(int_guards: tuple[tuple[int, str], ...]) -> dict[int, tuple[int, int]]:
    """Return each guarded argument's allowed range: the intersection over its dtypes (an
    int used with uint8 and int8 arrays must fit both), clipped to what C long long holds."""
    ranges: dict[int, tuple[int, int]] = {}
    for index, dtype in int_guards:
        if np.dtype(dtype).kind not in "iu":
            raise Unsupported(f"a Python scalar converted to {dtype} needs a check")
        info = np.iinfo(dtype)
        lo, hi = ranges.get(index, (-(1 << 63), (1 << 63) - 1))
        ranges[index] = (max(lo, int(info.min)), min(hi, int(info.max)))
    return ranges


def _layout_code(key: ArrayKey) -> int:
    """An array's layout class for fastcall.c: 1 C-contiguous, 2 C-ordered strided, 0 other."""
    return 1 if key.contiguous else 2 if key.c_strided else 0


def _arg_codes(signature: Sequence[ArrayKey | ScalarKey],
               int_guards: tuple[tuple[int, str], ...]) -> list[int]:
    codes: list[int] = []
    ranges = _int_ranges(int_guards)
    for index, key in enumerate(signature):
        if isinstance(key, ArrayKey) and key.kind == HOST_ARRAY:
            ones = sum(1 << d for d, one in enumerate(key.ones) if one)
            codes += [_ARRAY, np.dtype(key.dtype).num, key.ndim, ones, _layout_code(key)]
        elif key.kind == PY_SCALAR:
            if index in ranges and key.dtype != "int":
                raise Unsupported("a Python float converted to an integer dtype")
            lo, hi = ranges.get(index, (0, 0))
            codes += [_PY_KINDS[key.dtype], int(index in ranges), lo, hi, 0]
        elif key.kind == NP_SCALAR:
            codes += [_NPSCALAR, np.dtype(key.dtype).num, 0, 0, 0]
        else:
            raise Unsupported(f"argument kind {key.kind!r}")
    return codes


def _symbol_codes(graph: Graph) -> tuple[list[int], dict[str, int], int]:
    """Return (codes, symbol -> index, the router's element-count rule): the index of the
    one size symbol, -1 for the product of all sizes, -2 for 1 (no symbols)."""
    guards = dict(graph.guards)
    names = [symbol for symbol, _ in graph.dims]
    names += [s for s in guards if s not in names]
    codes: list[int] = []
    sources = dict(graph.dims)
    for name in names:
        pairs = sources.get(name, ())
        codes.append(len(pairs))
        for arg, axis in pairs:
            codes += [arg, axis]
        codes += [int(name in guards), guards.get(name, 0), int(name in graph.nonempty)]
    single = 0 if len(graph.dims) == 1 else -1 if graph.dims else -2
    return codes, {name: i for i, name in enumerate(names)}, single


def _check_plan(plan: Plan, schedule: Schedule, argument_count: int) -> None:
    kernels_only = tuple(("kernel", i) for i in range(len(plan.kernels)))
    if (not 1 <= len(plan.kernels) <= MAX_CALLS or schedule.libraries or schedule.views
            or tuple(schedule.order) != kernels_only):
        raise Unsupported("library steps, views, or too many kernels")
    if plan.graph.scalar_dims or plan.graph.decisions:
        raise Unsupported("sizes or decisions from Python scalars of the call")
    if any(node.op in (Op.VIEW, Op.WRITE) for node in plan.graph.nodes):
        # a write needs the full path's overlap check (runtime.binding.argument_overlaps)
        raise Unsupported("views or writes into arguments")
    if not schedule.outputs:
        raise Unsupported("no results")
    if any(is_scalar == 2 for _, is_scalar in schedule.outputs):
        raise Unsupported("a Python number as a result")
    for slot, _ in schedule.outputs:
        if not argument_count <= slot < argument_count + len(schedule.allocations):
            raise Unsupported("a result that is not a fresh allocation")


def _call_codes(call: KernelCall, kernel: Kernel, argument_count: int, allocations: int,
                symbol: Callable[[str], int]) -> list[int]:
    """Return one kernel launch's codes: counts, buffers, scalars, loops, strides."""
    allocs = argument_count + allocations
    codes = [len(call.buffers), len(call.scalars), len(call.loop), len(call.strides)]
    for slot in call.buffers:
        kind = _BUF_ARG if slot < argument_count else _BUF_ALLOC if slot < allocs else _BUF_CONST
        codes += [kind, slot - (0 if kind == _BUF_ARG else argument_count if
                                kind == _BUF_ALLOC else allocs)]
    for source, param in zip(call.scalars, kernel.scalars):
        codes += [np.dtype(param.dtype).num, int(not isinstance(source, int))]
        if isinstance(source, int):
            codes.append(source)
        else:
            codes += [len(source), *(symbol(s) for s in source)]
    for product in call.loop:
        codes += [len(product), *(symbol(s) for s in product)]
    for buffer, axis in call.strides:
        codes += [buffer, -1 if axis is None else axis]
    return codes


def encode_spec(plan: Plan, signature: Sequence[ArrayKey | ScalarKey],
                addresses: Sequence[int], guards: tuple = ()) -> tuple:
    """Return ``(SPEC_VERSION, codes, constants, addresses, guards)``, the native form of a
    plan of
    kernels only; ``guards`` are the entry's ``Guards.checks`` (dispatch/guards.py), which
    the native table checks by identity on every call.

    ``codes`` lists, in order: counts (arguments, symbols, element-count rule, allocations,
    constants, kernel calls, outputs, tuple flag); 5 ints per argument; per symbol its
    sources, guard and nonempty flag; per allocation dtype, ndim and dims (symbol index, or
    -d-1 for a literal d); per kernel call its counts, then per buffer (kind, index), per
    scalar (dtype, from sizes, argument or symbols), per loop its symbols, per runtime
    stride (buffer, axis or -1); per output (allocation, scalar flag). Raises Unsupported.
    """
    argument_count = len(signature)
    schedule = build_schedule(plan, argument_count)
    _check_plan(plan, schedule, argument_count)
    graph = plan.graph
    symbol_codes, index, single = _symbol_codes(graph)

    def symbol(name: str) -> int:
        if name not in index:
            raise Unsupported(f"size {name} is not bound from the arguments")
        return index[name]

    if len(signature) != len(graph.params):
        raise Unsupported("the signature does not cover the host prologue's values")
    codes = _arg_codes(signature, graph.int_guards) + symbol_codes
    for shape, dtype in schedule.allocations:
        codes += [np.dtype(dtype).num, len(shape)]
        codes += [symbol(d) if isinstance(d, str) else -int(d) - 1 for d in shape]
    for call, kernel in zip(schedule.calls, plan.kernels):
        codes += _call_codes(call, kernel, argument_count, len(schedule.allocations), symbol)
    for slot, is_scalar in schedule.outputs:
        codes += [slot - argument_count, int(is_scalar)]
    header = [argument_count, len(index), single, len(schedule.allocations),
              len(schedule.constants), len(plan.kernels), len(schedule.outputs),
              int(schedule.output_tuple)]
    return (SPEC_VERSION, tuple(header + codes), tuple(schedule.constants),
            tuple(int(a) for a in addresses), tuple(guards))


def _same(gate: tuple, other: tuple) -> bool:
    """Return True when two (overrides, generation) gates are the same: what the native
    table compares on every call (the overrides by identity)."""
    return len(gate) == len(other) and gate[0] is other[0] and gate[1] == other[1]


def _gate() -> tuple[tuple, int]:
    """Return this call's gate: the context's config() overrides and the generation."""
    return OVERRIDES.get(), int(GENERATION[0])


def fast_with_prologue(hosted: tuple, args: tuple) -> Any:
    """Serve a call of the armed entry with a host prologue: replay the prologue (Python's
    arithmetic, compiled once), then the native table checks every argument and runs the
    kernels. MISS
    when the prologue raises or changes a type (the full path decides: it runs Python)."""
    replay, table = hosted
    try:
        values = replay(args)
    except Exception:  # the full path runs the function, which raises it
        return MISS
    return MISS if values is None else table(tuple(values))


class FastPath:
    """One function's fast path: its armed specs and the native table serving them. The
    table counts its calls in the dispatcher's ``FunctionStats.fast`` (the stats object a
    static-argument specialisation shares with its parent; shared by every table built, so
    no count is lost on re-arming)."""

    def __init__(self) -> None:
        self.table: Callable[[tuple], Any] | None = None
        self._gate: tuple = ()
        # id(entry) -> (entry, spec or None); holding the entry keeps its programs alive
        self._specs: dict[int, tuple[Executable, tuple | None]] = {}
        self._armed: tuple[int, ...] = ()      # ids of the entries in ``table``
        # the one armed entry with a host prologue (``dispatcher._hosted``) and its gate
        self._hosted_id: int | None = None
        self._hosted_gate: tuple = ()
        self._lock = threading.Lock()

    def after_cpu_call(self, dispatcher: Dispatcher, entry: Executable, settings: Settings,
                       n: int) -> None:
        """Arm ``entry`` (just run on the CPU with ``n`` elements) when calls like this one
        cannot be routed anywhere else; a no-op when it is armed already."""
        known = self._specs.get(id(entry))
        if known is not None and known[1] is None and known[0] is entry:
            return   # a plan the native entry never serves (a loop region, say): as fast
        gate = _gate()   # read before what it stands for: a change after re-arms next call
        if _native is None or id(entry) in self._armed and _same(self._gate, gate):
            return
        router = installed_router()
        if (settings.disable or settings.force not in (None, "cpu") or router is None
                or settings.residency == "device" or type(router.devices["cpu"]) is not HostDevice
                or (settings.force is None and n >= settings.gpu_min_elems)
                or _LOGGER.disabled or _LOGGER.isEnabledFor(logging.DEBUG)):
            return
        prologue = entry.plan.graph.prologue
        if prologue and id(entry) == self._hosted_id and _same(self._hosted_gate, gate):
            return
        spec = self._spec(dispatcher, entry)
        if spec is None:
            return
        n_limit = _NO_LIMIT if settings.force == "cpu" else settings.gpu_min_elems
        work = MAX_WORK
        if settings.num_threads > 1:
            work = min(work, getattr(settings, "thread_min_work", MAX_WORK) - 1)
        if prologue:   # its own table: the call arguments are the prologue's, one entry's
            table = _native.Table(gate[0], gate[1], dispatcher._stats.fast, (spec,),
                                  n_limit, work, SAMPLE_EVERY - 1)
            with self._lock:
                self._hosted_id, self._hosted_gate = id(entry), gate
            dispatcher._hosted = (compile_prologue(prologue), table)
            return
        with self._lock:
            keep = self._armed if _same(self._gate, gate) else ()
            ids = (id(entry), *(i for i in keep if i != id(entry)))[:MAX_SPECS]
            self.table = _native.Table(gate[0], gate[1], dispatcher._stats.fast,
                                       tuple(self._specs[i][1] for i in ids), n_limit, work,
                                       SAMPLE_EVERY - 1)
            self._gate, self._armed = gate, ids
        dispatcher._fast = self.table

    def _spec(self, dispatcher: Dispatcher, entry: Executable) -> tuple | None:
        """Return the entry's native spec (encoded once), or None when it cannot have one."""
        found = self._specs.get(id(entry))
        if found is not None:
            return found[1]
        spec = None
        try:
            if any(key.kind not in (HOST_ARRAY, PY_SCALAR, NP_SCALAR) for key in entry.signature):
                raise Unsupported("GPU arguments")
            programs = entry.programs("cpu")
            signature = entry.signature + tuple(   # the host prologue's values follow
                ScalarKey(PY_SCALAR, step.result_type) for step in entry.plan.graph.prologue)
            spec = encode_spec(entry.plan, signature, [p.address for p in programs],
                               entry.guards.checks)
            _native.Table((), 0, _SCRATCH, (spec,), 0, 0, 0)   # validates it
        except (Unsupported, ValueError, AttributeError, TypeError) as exc:
            _LOGGER.debug("%s: no fast path for %s: %s", dispatcher.__qualname__,
                          entry.signature, exc)
            spec = None
        self._specs[id(entry)] = (entry, spec)
        return spec
