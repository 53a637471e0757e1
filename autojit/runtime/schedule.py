"""The plan runner: a plan flattened once into a :class:`Schedule` (allocations, kernel
operands, views and results by slot), then run on a target at each call: allocate the
call's buffers, launch its kernels, return the results as NumPy would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.fuse.buffers import plan_buffers
from autojit.fuse.partition import memory_param
from autojit.fuse.plan import Plan
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.views import apply_view, resolve_step, step_refs
from autojit.runtime.binding import _may_overlap, argument_overlaps, has_dynamic_sizes
from autojit.runtime.regions import SAVED_LAUNCHES, LoopState, RegionMiss, RegionSlots, run_region
from autojit.runtime.targets import Target


def _nothing() -> None:
    pass


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
    # views whose index or slice bounds are Python ints of the call (ScalarRef), by position
    dynamic_views: frozenset[int] = frozenset()
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
    # results NumPy returns as new arrays that the plan computes in another shape (a scan
    # over every axis, then 1-d): per allocation, the result's shape (None: its own), and
    # per output the allocation whose memory, made in that shape, it returns (-1: its slot)
    owner_shapes: tuple[tuple | None, ...] = ()
    owned_outputs: tuple[int, ...] = ()
    regions: tuple[RegionSlots, ...] = ()   # per ("region", j) step: its operands' slots
    # the dynamic views and the views taken of them (new arrays at every call: a loop
    # body's memo does not keep them)
    moving_views: frozenset[int] = frozenset()
    # derived once (run_plan reads them at every call): the slots after the arguments as
    # they start (allocations and views empty, the constants in place), where the views'
    # slots begin past the arguments, and whether any view is taken between steps
    blank: tuple[Any, ...] = field(init=False, repr=False, compare=False)
    view_offset: int = field(init=False, repr=False, compare=False)
    views_between: bool = field(init=False, repr=False, compare=False)
    last_region: int = field(init=False, repr=False, compare=False)   # its step, or -1
    # per view, the key a getitem without Python ints indexes with (``apply_view``'s,
    # its Ellipsis in place), else None
    view_keys: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        derived = {"blank": (None,) * len(self.allocations) + self.constants
                   + (None,) * len(self.views),
                   "view_offset": len(self.allocations) + len(self.constants),
                   "views_between": any(self.view_batches[1:-1]),
                   "last_region": max((p for p, (kind, _) in enumerate(self.order)
                                       if kind == "region"), default=-1),
                   "view_keys": tuple(_view_key(step) for _, step in self.views)}
        for name, value in derived.items():
            object.__setattr__(self, name, value)


def _view_key(step: tuple[str, Any]) -> Any:
    """The key ``apply_view`` indexes with for a getitem step without Python ints: taken
    as ``array[key]`` (a loop body takes its views at every iteration); else None."""
    name, argument = step
    if name != "getitem" or step_refs(step):
        return None
    key = argument if isinstance(argument, tuple) else (argument,)
    return key if any(k is Ellipsis for k in key) else (*key, Ellipsis)


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
        if node.op is Op.WRITE and node.attr("root") is not None:   # a scratch array's
            return slot(node.attr("root"))                          # memory: its buffer
        if node.op in (Op.ARG, Op.WRITE):   # a write's result is its argument's memory
            return memory_param(graph, node_id)
        constants.append(np.asarray(node.attr("value"), dtype=node.type.dtype))
        slots[node_id] = argument_count + len(plan.allocations) + len(constants) - 1
        return slots[node_id]

    calls = []
    for kernel in plan.own_kernels:
        ndims = [len(graph.node(b.value).type.shape) for b in kernel.buffers]
        strides = tuple((b, kernel.array_axis(b, d, ndims[b]))
                        for b, d in kernel.runtime_strides())
        calls.append(KernelCall(
            tuple(slot(b.value) for b in kernel.buffers),
            tuple(_scalar_source(graph.node(s.value)) for s in kernel.scalars),
            kernel.loop_sizes, strides))
    libraries = tuple((call.name, tuple(slot(i) for i in call.inputs), slot(call.output))
                      for call in plan.libraries)
    regions = tuple(RegionSlots(tuple(slot(i) for i in r.inputs),
                                tuple(slot(c) for c in r.carries)) for r in plan.regions)
    outputs = tuple((slot(o), s) for o, s in zip(graph.outputs, graph.scalar_outputs))
    owner_shapes, owned_outputs = _owners(plan)
    allocations = tuple((graph.node(n).type.shape, graph.node(n).type.dtype)
                        for n in plan.allocations)
    constants += [np.empty(0)] * (len(constant_nodes) - len(constants))   # unused slots
    at = _view_steps(plan.steps, calls, libraries, views, written_views, first_view, regions)
    batches = tuple(tuple(v for v, step in enumerate(at) if step == position)
                    for position in range(-1, len(plan.steps) + 1))
    dynamic = frozenset(v for v, (_, step) in enumerate(views) if step_refs(step))
    moving = set(dynamic)
    for v, (base, _) in enumerate(views):   # (a view's base comes before it)
        if base - first_view in moving:
            moving.add(v)
    schedule = Schedule(allocations, tuple(constants), tuple(calls), outputs,
                        graph.output_tuple, tuple(views), dynamic, batches,
                        argument_overlaps(plan).copy, libraries, plan.steps,
                        *_lifetimes(plan), owner_shapes, owned_outputs, regions,
                        frozenset(moving))
    plan.schedule_cache[argument_count] = schedule
    return schedule


def _owners(plan: Plan) -> tuple[tuple[tuple | None, ...], tuple[int, ...]]:
    """Return the Schedule's ``owner_shapes`` and ``owned_outputs``: a result that is a
    ``fresh`` reshape view (NumPy's is a new array) of an allocation gets that allocation's
    memory made in the result's shape, the kernels writing it through a reshape view, so the
    result is the owning array itself, with no copy."""
    graph = plan.graph
    index = {n: i for i, n in enumerate(plan.allocations)}
    shapes: list[tuple | None] = [None] * len(plan.allocations)
    owned = []
    for output in graph.outputs:
        node, base = graph.node(output), -1
        if (node.op is Op.VIEW and node.attr("fresh")
                and node.attr("step")[0] in ("reshape", "ravel") and node.inputs[0] in index):
            base = index[node.inputs[0]]
            if shapes[base] not in (None, node.type.shape):
                base = -1
            else:
                shapes[base] = node.type.shape
        owned.append(base)
    if all(b < 0 for b in owned):
        return (), ()
    return tuple(shapes), tuple(owned)


def _view_steps(steps: Sequence[tuple[str, int]], calls: Sequence[KernelCall],
                libraries: Sequence[tuple[str, tuple[int, ...], int]],
                views: Sequence[tuple[int, tuple[str, Any]]], written: set[int],
                first_view: int, regions: Sequence[RegionSlots] = ()) -> tuple[int, ...]:
    """Return, per view, the step before which it is taken: -1 for views of arguments as
    they were at the call, else the first step reading it (or a view taken of it), which
    runs after the step computing what it views (the partition orders them so)."""
    at = [-1 if v not in written else len(steps) for v in range(len(views))]
    for position, (kind, index) in reversed(list(enumerate(steps))):
        read = (calls[index].buffers if kind == "kernel" else regions[index].inputs
                if kind == "region" else libraries[index][1])
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


def _allocate(empty: Any, schedule: Schedule, values: list[Any], first: int,
              index: int, donor: int, clear: bool, sizes: dict[str, int],
              fresh: list[Any]) -> None:
    """Put allocation ``index`` in its slot: fresh memory, or the buffer of ``donor`` (whose
    slot is cleared when it is dead already; an in-place step still reads it). ``fresh``
    holds each allocation's physical buffer: a donor may itself be a smaller item size's
    view of it (bool over int64), which cannot hold the taker's wider items. ``empty``
    makes memory: the target's, or a loop body's (``LoopState.empty``: spare buffers)."""
    shape, dtype = schedule.allocations[index]
    concrete = tuple(sizes[d] if d.__class__ is str else d for d in shape)
    if donor < 0:
        owner = schedule.owner_shapes[index] if schedule.owner_shapes else None
        if owner is None:
            values[first + index] = fresh[index] = empty(concrete, dtype)
            return
        fresh[index] = empty(tuple(sizes[d] if d.__class__ is str else d for d in owner),
                             dtype)
        values[first + index] = fresh[index].reshape(concrete)   # C order: a view
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


def _run_library(backend: Target, name: str, inputs: list[Any], out: Any) -> None:
    """Run a library step with the backend's array module (NumPy's BLAS, CuPy's cuBLAS)."""
    getattr(backend, "before_library", _nothing)()
    xp = getattr(backend, "array_module", np)
    function = getattr(xp, name)
    if out.ndim == 0:
        out[...] = function(*inputs)
    else:
        function(*inputs, out=out)


def _launch(backend: Target, kernel: Kernel, program: Any, call: KernelCall,
            values: list[Any], args: Sequence[Any], sizes: dict[str, int]) -> None:
    """Launch one kernel on its slots (a function, so its operand list dies with it)."""
    arrays = [values[i] for i in call.buffers]
    scalars = [args[s] if s.__class__ is int else math.prod(sizes[n] for n in s)
               for s in call.scalars] if call.scalars else ()
    backend.launch(kernel, program, arrays, scalars, sizes, _meta(call, arrays, sizes))


def _launch_again(loop: LoopState, launches: dict, position: int, backend: Target,
                  kernel: Kernel, program: Any, call: KernelCall, values: list[Any],
                  args: Sequence[Any], sizes: dict[str, int]) -> None:
    """Launch a loop body's kernel: for operands of a layout it saw in an earlier
    iteration (the same shapes, strides and dtypes: the buffers the loop reuses, a view
    ``u[t % 2]`` moving through its array) the launch derived then (meta, thread split),
    given this iteration's operands; its scalars are written into memory of their own,
    read by address. ``launches`` is the loop's saved launches of this kernel."""
    arrays = [values[i] for i in call.buffers]
    key = _layout(tuple(arrays))
    go = launches.get(key)
    holders = loop.holders.get(position)
    if holders is None:
        holders = loop.holders[position] = [np.empty((), p.dtype) for p in kernel.scalars]
    if holders:
        for holder, source in zip(holders, call.scalars):
            holder[()] = (args[source] if source.__class__ is int
                          else math.prod(sizes[n] for n in source))
        arrays += holders
    if go is None:
        if len(launches) >= SAVED_LAUNCHES:   # layouts new at every iteration
            launches.clear()
        go = launches[key] = backend.launcher(kernel, program,
                                              _meta(call, arrays, sizes))
    go(arrays)


def _python_layout(arrays: tuple[Any, ...]) -> tuple:
    """What a saved launch depends on of its operands (``_native.loops.layout``'s)."""
    return tuple((a.shape, a.strides, a.dtype, a.flags.writeable, a.__class__)
                 if isinstance(a, np.ndarray) else a.__class__ for a in arrays)


try:   # one C call for the operands' shapes, strides and dtypes
    from autojit._native.loops import layout as _layout
except ImportError:   # not built (or built before it had one)
    _layout = _python_layout


def _take_views(schedule: Schedule, values: list[Any], first_view: int, batch: int,
                memo: dict | None = None) -> None:
    """Take the views of ``batch`` (see ``Schedule.view_batches``); a view's Python int
    bounds are the call's (``values`` starts with the call arguments). ``memo`` (a loop
    region's, one per call of the loop) keeps each view with the array it was taken of:
    a view of the same array (a captured argument every iteration, or one of the buffers
    a carried value alternates between) is the same view, unless its bounds are Python
    ints of the call (the loop index: new every iteration)."""
    dynamic, keys = schedule.dynamic_views, schedule.view_keys
    if memo is not None:
        moving = schedule.moving_views
    for v in schedule.view_batches[batch]:
        base, step = schedule.views[v]
        source = values[base]
        if dynamic and v in dynamic:
            try:
                values[first_view + v] = apply_view(source, resolve_step(step, values))
            except IndexError:   # a loop body's ``u[t % k]`` NumPy refuses (sizes bound once)
                if memo is None:   # (a call's own views: bound, so never out of range)
                    raise
                raise RegionMiss("an index of the loop body that NumPy refuses at this "
                                 "iteration") from None
            continue
        key = keys[v]
        if memo is None or v in moving:   # (a view of a view new at every iteration)
            values[first_view + v] = apply_view(source, step) if key is None else source[key]
            continue
        held = memo.get((v, id(source)))
        if held is not None and held[0] is source:
            values[first_view + v] = held[1]
            continue
        view = values[first_view + v] = apply_view(source, step) if key is None \
            else source[key]
        if getattr(view, "base", None) is not None:   # not a copy
            if len(memo) >= _MEMO_VIEWS_PER_VIEW * len(schedule.views):
                memo.clear()   # new arrays every iteration: keep only the recent ones
            memo[(v, id(source))] = (source, view)   # the source is held: its id stays its own


#: views a loop's memo keeps per view of its body (the buffers a carried value rotates
#: through, typically two)
_MEMO_VIEWS_PER_VIEW = 4


def _guarded_arguments(plan: Plan) -> tuple[int, ...]:
    """The arguments a plan writes, where one of its loops binds sizes per iteration (a
    loop that may meet, midway, an iteration NumPy refuses: ``RegionMiss``); else ()."""
    found = plan.schedule_cache.get("guarded_arguments")
    if found is None:
        dynamic = any(has_dynamic_sizes(call.body) for call in plan.regions)
        found = tuple(sorted({n.attr("param") for n in plan.graph.nodes
                              if n.op is Op.WRITE and n.attr("root") is None
                              and n.attr("param") is not None})) if dynamic else ()
        plan.schedule_cache["guarded_arguments"] = found
    return found


#: copies ``_Guard`` made of written arguments (tests read it: a loop the native driver
#: ran whole, its views proven before it started, copies nothing)
GUARD_COPIES = [0]


class _Guard:
    """The arguments a plan writes, kept so that a loop meeting an iteration NumPy refuses
    (``RegionMiss``) can put them back: copied only when a step is about to write them
    while a ``RegionMiss`` may still follow (a host loop, or any step before the plan's
    last loop), not for a loop the native driver runs whole (its views proven first)."""

    __slots__ = ("args", "positions", "kept")

    def __init__(self, args: Sequence[Any], positions: tuple[int, ...]) -> None:
        self.args, self.positions = args, positions
        self.kept: list[tuple[Any, Any]] | None = None

    def take(self) -> None:
        """Copy the arguments as they are now (as given: nothing wrote them yet)."""
        if self.kept is None:
            self.kept = [(self.args[p], self.args[p].copy(order="K")) for p in self.positions]
            GUARD_COPIES[0] += 1

    def restore(self) -> None:
        for array, copy in self.kept or ():
            array[...] = copy


def run_plan(plan: Plan, programs: Sequence[Any], backend: Target, args: Sequence[Any],
             sizes: dict[str, int], memo: LoopState | None = None) -> Any:
    """Run every kernel of ``plan``; return the function's result as NumPy would
    (``memo``: a loop region's body, see ``_take_views``). A loop that meets an iteration
    NumPy refuses (``RegionMiss``) puts back the arguments the plan wrote before it
    re-raises: the dispatcher then runs the call as Python, on the arguments as given."""
    if memo is None and plan.regions:
        guarded = _guarded_arguments(plan)
        if guarded:
            guard = _Guard(args, guarded)
            try:
                return _run_steps(plan, programs, backend, args, sizes, memo, guard)
            except RegionMiss:
                guard.restore()
                raise
    return _run_steps(plan, programs, backend, args, sizes, memo)


def _run_steps(plan: Plan, programs: Sequence[Any], backend: Target, args: Sequence[Any],
               sizes: dict[str, int], memo: LoopState | None, guard: _Guard | None = None
               ) -> Any:
    first = len(args)
    schedule = plan.schedule_cache.get(first) or build_schedule(plan, first)
    values = [*args, *schedule.blank]
    if schedule.overlaps:
        for written, other in schedule.overlaps:   # read from a copy: evaluate, then write
            if values[other] is args[other] and _may_overlap(args[written], args[other]):
                values[other] = args[other].copy(order="K")
    fresh: list[Any] = [None] * len(schedule.allocations)
    empty = backend.empty if memo is None else memo.empty
    launches = None if memo is None else memo.launches
    views = None if memo is None else memo.views
    for index in schedule.upfront:
        _allocate(empty, schedule, values, first, index, -1, False, sizes, fresh)
    first_view = first + schedule.view_offset
    batches = schedule.view_batches
    if batches[0]:
        _take_views(schedule, values, first_view, 0, views)
    between = schedule.views_between
    for position, (kind, index) in enumerate(schedule.order):
        if between and batches[position + 1]:
            _take_views(schedule, values, first_view, position + 1, views)
        for allocation, donor, clear in schedule.allocate[position]:
            if donor < 0 and not schedule.owner_shapes:   # fresh memory (as _allocate)
                shape, dtype = schedule.allocations[allocation]
                values[first + allocation] = fresh[allocation] = empty(
                    tuple([sizes[d] if d.__class__ is str else d for d in shape]), dtype)
                continue
            _allocate(empty, schedule, values, first, allocation, donor, clear, sizes, fresh)
        pending = guard is not None and guard.kept is None
        if pending and kind != "region" and position < schedule.last_region:
            guard.take()   # it may write them, and a loop after it may miss
        if kind == "region":
            run_region(_run_steps, backend, plan.regions[index], schedule.regions[index],
                       programs, values, sizes, plan.kernels,
                       (guard.take, position < schedule.last_region) if pending else None,
                       memo)
        elif kind == "library":
            name, inputs, output = schedule.libraries[index]
            _run_library(backend, name, [values[i] for i in inputs], values[output])
        elif launches is not None:
            _launch_again(memo, launches.setdefault(index, {}), index, backend,
                          plan.kernels[index], programs[index], schedule.calls[index],
                          values, args, sizes)
        else:
            _launch(backend, plan.kernels[index], programs[index], schedule.calls[index],
                    values, args, sizes)
        for allocation in schedule.release[position]:   # dead: give the memory back now
            values[first + allocation] = fresh[allocation] = None
    if batches[-1]:
        _take_views(schedule, values, first_view, len(batches) - 1, views)
    results = [values[i][()] if is_scalar and getattr(values[i], "ndim", 1) == 0
               else values[i] for i, is_scalar in schedule.outputs]
    for position, (_, is_scalar) in enumerate(schedule.outputs):
        if is_scalar == 2:   # a Python number (``tracer/pyscalars.py``): float, int
            results[position] = results[position].item()
    if schedule.owned_outputs:   # (most plans have none: no loop set up per call)
        for position, allocation in enumerate(schedule.owned_outputs):
            if allocation >= 0:   # the owning array itself (its reshape view is the same)
                results[position] = fresh[allocation]
    if not results and not schedule.output_tuple:
        result = None                            # the function only wrote into arguments
    else:
        result = tuple(results) if schedule.output_tuple else results[0]
    if memo is not None:   # a loop body: what this iteration made and no result holds
        memo.settle(result)
    return result
