"""Backends and the plan runner: allocate a call's buffers, launch its kernels, return results.

The compilers are imported on first use, so ``import autojit`` stays light and CuPy/NVRTC
load only when a GPU route is taken.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from autojit.fuse.buffers import plan_buffers
from autojit.fuse.partition import memory_param
from autojit.fuse.plan import Plan
from autojit.ir.host import compile_prologue, conversion_fails
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.views import apply_view, view_shape
from autojit.lower_cpu.program import CpuProgram
from autojit.lower_cpu.team import park as park_team
from autojit.lower_cpu.threads import call_kernel
from autojit.policy.config import current_settings
from autojit.policy.output_pool import OUTPUT_POOL


class Backend(Protocol):
    name: str

    def compile(self, kernel: Kernel) -> Any: ...
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None: ...


def _nothing() -> None:
    pass


def _address(array: np.ndarray) -> int:
    return array.ctypes._data


def _python_addresses(arrays: Sequence[np.ndarray]) -> list[int]:
    return [_address(a) for a in arrays]


try:   # one C call for every array's address: ``a.ctypes`` costs ~0.7 µs an array
    from autojit._native.fastcall import addresses as _addresses
except ImportError:   # not built (or built before it had one)
    _addresses = _python_addresses


class CpuBackend:
    """LLVM-compiled kernels called in this process; the thread settings come from
    ``options`` (a decorator's, e.g. ``num_threads=1``) over the environment and config()."""

    name = "cpu"

    def __init__(self, options: tuple[tuple[str, Any], ...] = ()) -> None:
        self.options = options

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_cpu import compile_kernel
        return compile_kernel(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return OUTPUT_POOL.empty(shape, dtype)    # big results on recycled pages

    @staticmethod
    def before_library() -> None:
        """BLAS brings its own threads: our idle workers stop spinning for it (measured:
        relu(x@w+b) 63.5 -> 62.3 ms median with workers asleep through the GEMM)."""
        park_team()

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None:
        if scalars:   # each scalar in memory of the parameter's dtype, read by address
            arrays = [*arrays, *[np.array(v, dtype=p.dtype)
                                 for p, v in zip(kernel.scalars, scalars)]]
        data = _addresses(arrays)
        settings = current_settings(self.options)
        if settings.num_threads > 1 and isinstance(program, CpuProgram):
            call_kernel(kernel, program, data, meta, settings.num_threads,   # splits big
                        settings.thread_min_work, settings.thread_spin_us * 1e-6)  # calls
        else:
            program.call(data, meta)


class GpuBackend:
    """CUDA C kernels compiled by NVRTC and launched through CuPy."""

    name = "gpu"

    @property
    def array_module(self) -> Any:
        import cupy
        return cupy

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_gpu import compile_cuda, render_cuda
        from autojit.lower_gpu.device import device_arch
        return compile_cuda(render_cuda(kernel), kernel.name, device_arch())

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        import cupy
        return cupy.empty(shape, dtype)

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None:
        from autojit.lower_gpu import launch
        launch(kernel, program, arrays, scalars, sizes)


class EmulatedCudaBackend:
    """Runs each kernel's generated CUDA C on the CPU (g++ with an emulation header): how
    GPU-less machines check the GPU code path (tests, ``assert_backends_agree``)."""

    name = "cuda-emulated"

    def __init__(self, source: str | None = None, **launch: int) -> None:
        # ``source``: one translation unit holding every kernel (one g++ run for many);
        # ``launch``: forced launch shapes for reduction kernels (grid=, block=, ...).
        self.source, self.launch_options = source, launch

    def compile(self, kernel: Any) -> str:
        from autojit.lower_gpu import render_cuda
        return self.source if self.source is not None else render_cuda(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def launch(self, kernel: Any, source: str, arrays: Sequence[Any], scalars: Sequence[Any],
               sizes: dict[str, int], meta: Sequence[int] = ()) -> None:
        from autojit.lower_gpu import run_emulated
        from autojit.lower_gpu.reduce_launch import is_reduction
        options = self.launch_options if is_reduction(kernel) else {}
        run_emulated(kernel, source, arrays, scalars, sizes, **options)


@dataclass(frozen=True)
class KernelCall:
    """Where one kernel's operands come from, precomputed so a warm call only looks up.

    ``buffers`` index the call's slots (arguments, then allocations, then constants);
    ``strides`` are (buffer position, array axis) of each runtime stride, in meta order.
    """

    buffers: tuple[int, ...]
    scalars: tuple[int | tuple[str, ...], ...]   # argument index, or size symbols to multiply
    loop: tuple[tuple[str, ...], ...]
    strides: tuple[tuple[int, int | None], ...]


@dataclass(frozen=True)
class Schedule:
    """A plan flattened for execution: allocations, kernel operands and results by slot."""

    allocations: tuple[tuple[tuple, np.dtype], ...]
    constants: tuple[np.ndarray, ...]
    calls: tuple[KernelCall, ...]
    outputs: tuple[tuple[int, bool], ...]
    output_tuple: bool
    views: tuple[tuple[int, tuple[str, Any]], ...] = ()   # (base slot, step), in slot order
    # the views taken before each step (first entry: before any step; last: after all), in
    # slot order: a view of an argument after a write, or of a computed value, is taken once
    # that value is in memory (a reshape may copy: a.ravel() of an F-ordered argument, or
    # v.T.reshape(-1)), before the first step reading it
    view_batches: tuple[tuple[int, ...], ...] = ((),)
    overlaps: tuple[tuple[int, int], ...] = ()   # Overlaps.copy: checked at every call
    libraries: tuple[tuple[str, tuple[int, ...], int], ...] = ()   # (name, inputs, output)
    order: tuple[tuple[str, int], ...] = ()
    # the buffer plan (autojit.fuse.buffers): allocations made before any step; per step,
    # (allocation, allocation whose buffer it takes or -1, clear the donor's slot) made
    # before it, and the allocations released after it
    upfront: tuple[int, ...] = ()
    allocate: tuple[tuple[tuple[int, int, bool], ...], ...] = ()
    release: tuple[tuple[int, ...], ...] = ()
    # derived once (run_plan reads them at every call): the slots after the arguments as
    # they start (allocations and views empty, the constants in place), where the views'
    # slots begin past the arguments, and whether any view is taken between steps
    blank: tuple[Any, ...] = field(init=False, repr=False, compare=False)
    view_offset: int = field(init=False, repr=False, compare=False)
    views_between: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        derived = {"blank": (None,) * len(self.allocations) + self.constants
                   + (None,) * len(self.views),
                   "view_offset": len(self.allocations) + len(self.constants),
                   "views_between": any(self.view_batches[1:-1])}
        for name, value in derived.items():
            object.__setattr__(self, name, value)


def _scalar_source(node: Any) -> int | tuple[str, ...]:
    return node.attr("index") if node.op is Op.ARG else node.attr("symbols")


def build_schedule(plan: Plan, argument_count: int) -> Schedule:
    """Return the Schedule of ``plan`` (computed once per plan, then cached on it)."""
    cached = plan.schedule_cache.get(argument_count)
    if cached is not None:
        return cached
    graph = plan.graph
    slots = {n: argument_count + i for i, n in enumerate(plan.allocations)}
    constants: list[np.ndarray] = []
    views: list[tuple[int, tuple[str, Any]]] = []
    written_views: set[int] = set()     # view positions over a write or a computed value
    constant_nodes = [n for n in graph.nodes if n.op in (Op.CONST, Op.FILL)]
    first_view = argument_count + len(plan.allocations) + len(constant_nodes)

    def slot(node_id: int) -> int:
        chain = []                # views of views (x = x[1:] in a loop): walked, not recursed
        while node_id not in slots and graph.node(node_id).op is Op.VIEW:
            chain.append(node_id)
            node_id = graph.node(node_id).inputs[0]
        base = leaf_slot(node_id)
        for view in reversed(chain):   # a view of an argument, taken again at every call
            source = graph.node(graph.node(view).inputs[0])
            if source.op not in (Op.ARG, Op.VIEW) or base - first_view in written_views:
                written_views.add(len(views))
            views.append((base, graph.node(view).attr("step")))
            base = slots[view] = first_view + len(views) - 1
        return base

    def leaf_slot(node_id: int) -> int:
        node = graph.node(node_id)
        if node_id in slots:
            return slots[node_id]
        if node.op in (Op.ARG, Op.WRITE):   # a write's result is its argument's memory
            return memory_param(graph, node_id)
        constants.append(np.asarray(node.attr("value"), dtype=node.type.dtype))
        slots[node_id] = argument_count + len(plan.allocations) + len(constants) - 1
        return slots[node_id]

    calls = []
    for kernel in plan.kernels:
        ndims = [len(graph.node(b.value).type.shape) for b in kernel.buffers]
        strides = tuple((b, kernel.array_axis(b, d, ndims[b]))
                        for b, d in kernel.runtime_strides())
        calls.append(KernelCall(
            tuple(slot(b.value) for b in kernel.buffers),
            tuple(_scalar_source(graph.node(s.value)) for s in kernel.scalars),
            kernel.loop_sizes, strides))
    libraries = tuple((call.name, tuple(slot(i) for i in call.inputs), slot(call.output))
                      for call in plan.libraries)
    outputs = tuple((slot(o), s) for o, s in zip(graph.outputs, graph.scalar_outputs))
    allocations = tuple((graph.node(n).type.shape, graph.node(n).type.dtype)
                        for n in plan.allocations)
    constants += [np.empty(0)] * (len(constant_nodes) - len(constants))   # unused slots
    at = _view_steps(plan.steps, calls, libraries, views, written_views, first_view)
    batches = tuple(tuple(v for v, step in enumerate(at) if step == position)
                    for position in range(-1, len(plan.steps) + 1))
    schedule = Schedule(allocations, tuple(constants), tuple(calls), outputs,
                        graph.output_tuple, tuple(views), batches,
                        argument_overlaps(plan).copy, libraries, plan.steps,
                        *_lifetimes(plan))
    plan.schedule_cache[argument_count] = schedule
    return schedule


def _view_steps(steps: Sequence[tuple[str, int]], calls: Sequence[KernelCall],
                libraries: Sequence[tuple[str, tuple[int, ...], int]],
                views: Sequence[tuple[int, tuple[str, Any]]], written: set[int],
                first_view: int) -> tuple[int, ...]:
    """Return, per view, the step before which it is taken: -1 for views of arguments as
    they were at the call, else the first step reading it (or a view taken of it), which
    runs after the step computing what it views (the partition orders them so)."""
    at = [-1 if v not in written else len(steps) for v in range(len(views))]
    for position, (kind, index) in reversed(list(enumerate(steps))):
        read = calls[index].buffers if kind == "kernel" else libraries[index][1]
        for slot in read:
            if slot - first_view in written:
                at[slot - first_view] = position
    for v in reversed(range(len(views))):   # a view's base is taken no later than it
        base = views[v][0] - first_view
        if base in written:
            at[base] = min(at[base], at[v])
    return tuple(at)


def _lifetimes(plan: Plan) -> tuple[tuple[int, ...],
                                     tuple[tuple[tuple[int, int, bool], ...], ...],
                                     tuple[tuple[int, ...], ...]]:
    """Return the Schedule's ``upfront``, ``allocate`` and ``release`` from the buffer plan."""
    buffers = plan_buffers(plan).allocations
    # a donor to a later step keeps its slot until the taker takes it over
    later = {a.reuses for a in buffers if a.reuses is not None and not a.in_place}
    steps = range(len(plan.steps))
    upfront = tuple(i for i, a in enumerate(buffers) if a.first < 0)
    allocate = tuple(tuple((i, -1 if a.reuses is None else a.reuses, not a.in_place)
                           for i, a in enumerate(buffers) if a.first == s) for s in steps)
    release = tuple(tuple(i for i, a in enumerate(buffers) if a.last == s and i not in later)
                    for s in steps)
    return upfront, allocate, release


def _take_over(buffer: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Return ``buffer``'s memory as an array of ``shape`` and ``dtype`` (it fits: the
    buffer plan only pairs byte counts that are the same product of sizes, and a fresh
    buffer's item size at least the taker's). A buffer taken over before is a view of a
    narrower size: the memory is its fresh allocation, the base."""
    if buffer.shape == shape and buffer.dtype == dtype:
        return buffer
    while isinstance(buffer.base, type(buffer)):
        buffer = buffer.base
    nbytes = math.prod(shape) * dtype.itemsize
    return buffer.reshape(-1).view("uint8")[:nbytes].view(dtype).reshape(shape)


def _allocate(backend: Backend, schedule: Schedule, values: list[Any], first: int,
              index: int, donor: int, clear: bool, sizes: dict[str, int],
              fresh: list[Any]) -> None:
    """Put allocation ``index`` in its slot: fresh memory, or the buffer of ``donor`` (whose
    slot is cleared when it is dead already; an in-place step still reads it). ``fresh``
    holds each allocation's physical buffer: a donor may itself be a smaller item size's
    view of it (bool over int64), which cannot hold the taker's wider items."""
    shape, dtype = schedule.allocations[index]
    concrete = tuple(sizes[d] if d.__class__ is str else d for d in shape)
    if donor < 0:
        values[first + index] = fresh[index] = backend.empty(concrete, dtype)
        return
    fresh[index] = fresh[donor]
    values[first + index] = _take_over(fresh[donor], concrete, dtype)
    if clear:
        values[first + donor] = fresh[donor] = None   # the memory moved to the taker


def _meta(call: KernelCall, arrays: Sequence[Any], sizes: dict[str, int]) -> list[int]:
    meta = [math.prod(sizes[s] for s in product) for product in call.loop]
    for buffer, axis in call.strides:
        array = arrays[buffer]
        meta.append(array.strides[axis] // array.itemsize if axis is not None else 0)
    return meta


def _run_library(backend: Backend, name: str, inputs: list[Any], out: Any) -> None:
    """Run a library step with the backend's array module (NumPy's BLAS, CuPy's cuBLAS)."""
    getattr(backend, "before_library", _nothing)()
    xp = getattr(backend, "array_module", np)
    function = getattr(xp, name)
    if out.ndim == 0:
        out[...] = function(*inputs)
    else:
        function(*inputs, out=out)


def _launch(backend: Backend, kernel: Kernel, program: Any, call: KernelCall,
            values: list[Any], args: Sequence[Any], sizes: dict[str, int]) -> None:
    """Launch one kernel on its slots (a function, so its operand list dies with it)."""
    arrays = [values[i] for i in call.buffers]
    scalars = [args[s] if s.__class__ is int else math.prod(sizes[n] for n in s)
               for s in call.scalars] if call.scalars else ()
    backend.launch(kernel, program, arrays, scalars, sizes, _meta(call, arrays, sizes))


def _take_views(schedule: Schedule, values: list[Any], first_view: int, batch: int) -> None:
    """Take the views of ``batch`` (see ``Schedule.view_batches``)."""
    for v in schedule.view_batches[batch]:
        base, step = schedule.views[v]
        values[first_view + v] = apply_view(values[base], step)


def run_plan(plan: Plan, programs: Sequence[Any], backend: Backend, args: Sequence[Any],
             sizes: dict[str, int]) -> Any:
    """Run every kernel of ``plan``; return the function's result as NumPy would."""
    first = len(args)
    schedule = plan.schedule_cache.get(first) or build_schedule(plan, first)
    values = [*args, *schedule.blank]
    if schedule.overlaps:
        for written, other in schedule.overlaps:   # read from a copy: evaluate, then write
            if values[other] is args[other] and _may_overlap(args[written], args[other]):
                values[other] = args[other].copy(order="K")
    fresh: list[Any] = [None] * len(schedule.allocations)
    for index in schedule.upfront:
        _allocate(backend, schedule, values, first, index, -1, False, sizes, fresh)
    first_view = first + schedule.view_offset
    batches = schedule.view_batches
    if batches[0]:
        _take_views(schedule, values, first_view, 0)
    between = schedule.views_between
    for position, (kind, index) in enumerate(schedule.order):
        if between and batches[position + 1]:
            _take_views(schedule, values, first_view, position + 1)
        for allocation, donor, clear in schedule.allocate[position]:
            _allocate(backend, schedule, values, first, allocation, donor, clear, sizes,
                      fresh)
        if kind == "library":
            name, inputs, output = schedule.libraries[index]
            _run_library(backend, name, [values[i] for i in inputs], values[output])
        else:
            _launch(backend, plan.kernels[index], programs[index], schedule.calls[index],
                    values, args, sizes)
        for allocation in schedule.release[position]:   # dead: give the memory back now
            values[first + allocation] = fresh[allocation] = None
    if batches[-1]:
        _take_views(schedule, values, first_view, len(batches) - 1)
    results = [values[i][()] if is_scalar and getattr(values[i], "ndim", 1) == 0
               else values[i] for i, is_scalar in schedule.outputs]
    if not results and not schedule.output_tuple:
        return None                              # the function only wrote into arguments
    return tuple(results) if schedule.output_tuple else results[0]


#: What ``bind_sizes`` returns when a size the trace depends on differs at this call (a
#: guard, or a view's size the trace specialised on being 1): not this entry; retrace.
SIZES_MISS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True)
class _SizeSources:
    """Per plan: its views and writes (in graph order), guards, and the guarded sizes no
    argument binds (fixed by the code itself, ``np.zeros(3)``, or read from a view)."""

    special: tuple[Any, ...]
    guards: dict[str, int]
    fixed: tuple[tuple[str, int], ...]


def _size_sources(plan: Plan) -> _SizeSources:
    found = plan.schedule_cache.get("size_sources")
    if found is None:   # once per plan: most plans have no views or writes at all
        graph = plan.graph
        special = tuple(n for n in graph.nodes if n.op in (Op.VIEW, Op.WRITE))
        # a guarded size no argument binds: fixed by the code, or one a view binds later
        # (preset to its guard: a view of another size then misses and retraces)
        bound = {s for s, _ in graph.dims}
        found = plan.schedule_cache["size_sources"] = _SizeSources(
            special, dict(graph.guards), tuple(g for g in graph.guards if g[0] not in bound))
    return found


@dataclass(frozen=True)
class _Binder:
    """Per plan, what ``bind_sizes`` reads at every call, derived once: each size symbol
    with its first source and the sources that must agree; whether views, writes or
    guards need the slow part; the sizes NumPy requires > 0; and ``limit``, the largest
    size below which no value can be too big (``max(size, literal) ** rank`` stays under
    ``_MAX_ELEMENTS``; -1: always look)."""

    dims: tuple[tuple[str, int, int, tuple[tuple[int, int], ...]], ...]
    special: bool
    nonempty: tuple[str, ...]
    limit: float


def _binder(plan: Plan) -> _Binder:
    found = plan.schedule_cache.get("binder")
    if found is None:
        graph = plan.graph
        _, rank, literal = _value_shapes(plan)
        root = _integer_root(_MAX_ELEMENTS, rank) if rank else math.inf
        found = plan.schedule_cache["binder"] = _Binder(
            tuple((symbol, *sources[0], tuple(sources[1:])) for symbol, sources in graph.dims),
            bool(_size_sources(plan).special or graph.guards), tuple(graph.nonempty),
            root if literal <= root else -1)
    return found


def _integer_root(value: int, rank: int) -> int:
    """Return the largest m with m ** rank <= value (exactly: no float rounding)."""
    root = int(round(value ** (1.0 / rank)))
    while root ** rank > value:
        root -= 1
    while (root + 1) ** rank <= value:
        root += 1
    return root


def bind_sizes(plan: Plan, args: Sequence[Any]) -> Mapping[str, int] | None:
    """Return each size symbol's value for this call: ``SIZES_MISS`` when a size the trace
    read or specialised on differs (retrace), None when NumPy raises for these arguments
    (sizes that must agree do not: the caller runs plain Python to raise it)."""
    binder = plan.schedule_cache.get("binder") or _binder(plan)
    sizes: dict[str, int] = {}
    for symbol, first_arg, first_axis, others in binder.dims:
        size = args[first_arg].shape[first_axis]
        for arg, axis in others:
            if args[arg].shape[axis] != size:
                return None
        sizes[symbol] = size
    if binder.special:
        graph, sources = plan.graph, _size_sources(plan)
        if any(sizes.get(s, v) != v for s, v in graph.guards):
            return SIZES_MISS
        sizes.update(sources.fixed)   # sizes the code itself fixed (np.zeros(3))
        found = _bind_view_sizes(plan, sources, args, sizes)
        if found is not True:
            return found
    if binder.nonempty and any(sizes[s] == 0 for s in binder.nonempty):
        return None   # NumPy raises for a reduction of nothing without an identity
    # a bound from the largest size and rank first: the usual call stops there
    if sizes and max(sizes.values()) > binder.limit and _too_big(plan, sizes):
        return None   # NumPy raises ValueError ("iterator is too large", "array is too big")
    return sizes


#: NumPy refuses arrays (and broadcasts) of more bytes than an npy_intp holds
_MAX_BYTES = (1 << 63) - 1
_MAX_ELEMENTS = _MAX_BYTES // 16      # no value can be too big below this many elements


def _value_shapes(plan: Plan) -> tuple[list, int, int]:
    """Return (the distinct (itemsize, shape) of the plan's values, their largest rank,
    their largest literal size), computed once per plan."""
    found = plan.schedule_cache.get("value_shapes")
    if found is None:
        shapes = sorted({(node.type.dtype.itemsize, node.type.shape)
                         for node in plan.graph.nodes if node.type.shape}, key=repr)
        rank = max((len(shape) for _, shape in shapes), default=0)
        literal = max((d for _, shape in shapes for d in shape if d.__class__ is int),
                      default=1)
        found = plan.schedule_cache["value_shapes"] = (shapes, rank, literal)
    return found


def _too_big(plan: Plan, sizes: dict[str, int]) -> bool:
    """Return True when a value of the plan (an argument's broadcast with another, an
    intermediate, a result) has more bytes than NumPy can address: NumPy raises then."""
    for itemsize, shape in _value_shapes(plan)[0]:
        if math.prod(sizes.get(d, 1) if d.__class__ is str else d for d in shape) \
                * max(itemsize, 1) > _MAX_BYTES:
            return True
    return False


def _view_base(plan: Plan, node: Any, args: Sequence[Any], sizes: dict[str, int],
               views: dict[int, Any]) -> Any:
    """What a view is taken of: a view's result, an argument (arrays), or the shape of a
    computed value (nothing to look through yet)."""
    base = plan.graph.node(node.inputs[0])
    if base.op is Op.VIEW:
        return views[base.id]
    param = memory_param(plan.graph, base.id)
    if param is not None:
        return args[param]
    return tuple(sizes[d] if d.__class__ is str else d for d in base.type.shape)


def _bind_view_sizes(plan: Plan, sources: _SizeSources, args: Sequence[Any],
                     sizes: dict[str, int]) -> Mapping[str, int] | None | bool:
    """Bind the sizes of views; True when bound, else what ``bind_sizes`` returns: a view
    whose size differs from what it must equal misses where NumPy might broadcast (a size 1)
    or the trace depends on it (a guard, a literal 1), and raises otherwise."""
    views: dict[int, Any] = {}   # an array where the view of an argument is cheap, else a shape
    for node in sources.special:
        if node.op is Op.WRITE and not getattr(args[node.attr("param")].flags, "writeable",
                                               True):
            return None   # NumPy raises: assignment destination is read-only
        if node.op is not Op.VIEW:
            continue
        base, step = _view_base(plan, node, args, sizes, views), node.attr("step")
        try:
            if base.__class__ is tuple or step[0] in ("reshape", "ravel"):   # may copy
                view = view_shape(base if base.__class__ is tuple else base.shape, step)
                shape = view
            else:
                view = apply_view(base, step)
                shape = view.shape
        except (IndexError, ValueError, TypeError):
            return None   # NumPy raises for this view of these arguments
        views[node.id] = view
        for dim, size in zip(node.type.shape, shape):
            if dim.__class__ is not str:
                if size != 1:
                    return SIZES_MISS   # the trace took this size as a broadcast 1
                continue
            known = sizes.setdefault(dim, size)
            if known != size:
                return SIZES_MISS if 1 in (known, size) or dim in sources.guards else None
            if sources.guards.get(dim, size) != size:
                return SIZES_MISS
    if len(args) > 1:
        for written, other in argument_overlaps(plan).python:
            if _shares_memory(args[written], args[other]):
                return None   # the trace assumed distinct memory: plain Python runs it
    return True


@dataclass(frozen=True)
class Overlaps:
    """Pairs (written argument, other argument) whose memory may overlap at a call (NumPy
    evaluates each right side before writing, whatever the arguments share):

    ``copy``: the other argument is read only before the writes (``x[...] = y * 2``
    called as ``f(a, a[::-1])``): overlapping, it is read from a copy made at the call;
    ``python``: it is read after a write, written too, or returned (``x += y; return
    y.sum()`` as ``f(a, a)``): the trace took the two for distinct memory, so an
    overlapping call runs as plain Python.
    """

    copy: tuple[tuple[int, int], ...] = ()
    python: tuple[tuple[int, int], ...] = ()


def argument_overlaps(plan: Plan) -> Overlaps:
    """Return the plan's Overlaps (computed once per plan)."""
    found = plan.schedule_cache.get("overlaps")
    if found is not None:
        return found
    graph = plan.graph
    first_write: dict[int, int] = {}
    for node in graph.nodes:
        if node.op is Op.WRITE:
            first_write.setdefault(node.attr("param"), node.id)
    last_read: dict[int, int] = {}     # argument -> the last node reading its memory
    for node in graph.nodes:
        if node.op is Op.VIEW:
            continue
        for i in node.inputs:
            param = memory_param(graph, i)
            if param is not None:
                last_read[param] = node.id
    returned = {memory_param(graph, o) for o in graph.outputs}
    copy, python = [], []
    for written, first in sorted(first_write.items()):
        for other, param in enumerate(graph.params):
            if other == written or param.kind != "array":
                continue
            late = (other in first_write or other in returned
                    or last_read.get(other, -1) > first)
            (python if late else copy).append((written, other))
    found = plan.schedule_cache["overlaps"] = Overlaps(tuple(copy), tuple(python))
    return found


def _may_overlap(a: Any, b: Any) -> bool:
    """NumPy's bounds check (``np.may_share_memory``): cheap, and never misses an overlap."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray) and isinstance(b, cupy.ndarray):
        return bool(cupy.may_share_memory(a, b))
    return False


def _shares_memory(a: Any, b: Any) -> bool:
    """Return True unless ``a`` and ``b`` provably share no element (bounds, then NumPy's
    exact check within a small budget: ``a[::2]`` and ``a[1::2]`` do not overlap)."""
    if not _may_overlap(a, b):
        return False
    if not isinstance(a, np.ndarray):
        return True
    try:
        return bool(np.shares_memory(a, b, max_work=1000))
    except np.exceptions.TooHardError:
        return True


def guards_hold(plan: Plan, sizes: Mapping[str, int], args: Sequence[Any]) -> bool:
    """Return True when sizes the trace read concretely are unchanged."""
    if sizes is SIZES_MISS:
        return False
    return all(sizes.get(symbol) == value for symbol, value in plan.graph.guards)


def int_arguments_fit(plan: Plan, args: Sequence[Any]) -> bool:
    """Return True when every Python scalar NumPy converts to a dtype converts (an int out
    of the dtype's range, or NaN/inf into an integer, makes NumPy raise). ``args`` are the
    call arguments (:func:`call_arguments`: host prologue values included)."""
    for index, dtype_name in plan.graph.int_guards:
        if conversion_fails(args[index], dtype_name):
            return False
    return True


#: What :func:`check_call` says about a call.
CALL_OK, CALL_MISS, CALL_PYTHON = "ok", "miss", "python"


def call_arguments(plan: Plan, args: Sequence[Any]) -> Sequence[Any] | None:
    """Return the arguments the plan's kernels read: ``args``, then the host prologue's
    values (``autojit.ir.host``); None when a value's Python type differs from the traced
    one. Raises what the prologue's Python arithmetic raises."""
    if not plan.graph.prologue:
        return args
    replay = plan.schedule_cache.get("replay")
    if replay is None:   # once per plan: compile_prologue's cache hashes every step
        replay = plan.schedule_cache["replay"] = compile_prologue(tuple(plan.graph.prologue))
    return replay(args)


def check_call(plan: Plan, args: Sequence[Any]) -> str:
    """Return CALL_OK when ``plan`` answers this call (sizes aside), CALL_MISS when it was
    traced for other Python scalar types, CALL_PYTHON when Python or NumPy raises for these
    values (the original function runs and raises itself, at the right point)."""
    try:
        values = call_arguments(plan, args)
    except Exception:  # the prologue's Python arithmetic raised: so does the function
        return CALL_PYTHON
    if values is None:
        return CALL_MISS
    if plan.graph.int_guards and not int_arguments_fit(plan, values):
        return CALL_PYTHON
    return CALL_OK
