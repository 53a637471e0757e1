"""The plan runner's region step: a loop region (``ir.region``) run as a host loop.

Each iteration runs the body's plan (its kernels, compiled with the outer plan's, on the
same target: CPU, GPU or emulated CUDA) on the current carried values; the body's
schedule and sizes are derived once per call, nothing is traced or planned per
iteration. A ``while`` body returns its next condition last: one scalar read back per
iteration; a ``for`` body with a ``break`` (``Region.exit``) its break flag, read back
per iteration likewise, the loop stopping after the iteration that sets it (a native
loop's kernel, guarded on the flag, runs on doubling pieces of the range: ``_run_pieces``).
Writes into captured arguments happen in place, in the caller's arrays; a captured
computed value the body writes into gets a copy of its own first (the body's parameter),
which its CARRY then holds.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.fuse.native_loop import NativeLoop
from autojit.fuse.plan import RegionCall
from autojit.ir.abi import pack_meta
from autojit.runtime.binding import (
    bind_sizes,
    call_arguments,
    has_dynamic_sizes,
    moving_sizes,
)
from autojit.runtime.native_region import run_native_region

#: targets that run a native loop (``fuse.native_loop``) instead of the host loop: the CPU,
#: and the CUDA emulation (its one-thread CUDA C, checked against NumPy). On a GPU the host
#: loop launches the body's kernels (its carried starts would be read back to the host)
_NATIVE_TARGETS = frozenset({"cpu", "cuda-emulated"})


#: iterations the host loop ran (the dispatcher compares a call's with plain Python:
#: ``routing.host_loop``)
HOST_ITERATIONS = [0]


class RegionMiss(Exception):
    """An iteration the compiled loop cannot run as NumPy would: a size or view of the body
    that NumPy refuses at this iteration (``x[i]`` out of range), a Python scalar changing
    its type. ``run_plan`` puts back the arguments the plan wrote and the dispatcher runs
    the call as Python, which raises (or not) exactly where NumPy does."""


@dataclass(frozen=True)
class RegionSlots:
    """Where one region step's operands live in the outer call's slots (by input)."""

    inputs: tuple[int, ...]
    carries: tuple[int, ...]


#: kernel launches a loop body keeps per kernel (one per layout of its operands: a body
#: reusing its buffers alternates between two or three), and the shapes of spare buffers
SAVED_LAUNCHES = 8
SPARE_SHAPES = 8


class LoopState:
    """What one call of a loop keeps across its iterations, so an iteration repeats no
    work of the one before: the views of arrays that stay (``views``, see
    ``schedule._take_views``), spare buffers (an iteration's temporaries, and the carried
    values of the one before once nothing reads them, are the next one's allocations:
    once the loop is warm it allocates nothing), and each kernel's launch for operands of
    a layout it saw before (meta and thread split derived once per layout, the operands
    given at each launch; ``launches`` is None where the body's sizes change per
    iteration or the target has no ``launcher``), and the states of loops in its body."""

    __slots__ = ("backend", "views", "free", "held", "made", "launches", "holders", "sizes",
                 "inner", "bound")

    def __init__(self, backend: Any, fixed_sizes: bool, sizes: dict[str, int] | None = None
                 ) -> None:
        self.backend, self.sizes = backend, sizes   # (the sizes it was made for)
        self.inner: dict[int, tuple[RegionCall, LoopState]] = {}   # a loop in the body's
        self.bound: dict[str, int] | None = None   # the body's sizes its launches are for
        self.views: dict = {}
        self.free: dict[tuple, list[Any]] = {}   # (shape, dtype) -> spare buffers
        self.held: list[Any] = []   # buffers made by earlier iterations the last one returned
        self.made: list[Any] = []   # buffers made by this iteration
        cached = fixed_sizes and hasattr(backend, "launcher")
        self.launches: dict[int, dict] | None = {} if cached else None
        self.holders: dict[int, list[np.ndarray]] = {}   # kernel -> its scalars' memory

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """An allocation of this iteration: a spare buffer of that shape, or a new one."""
        spares = self.free.get((shape, dtype))
        buffer = spares.pop() if spares else self.backend.empty(shape, dtype)
        self.made.append(buffer)
        return buffer

    def settle(self, results: Any) -> None:
        """After an iteration: every buffer made by it or by the one before that
        ``results`` (the next iteration's inputs) do not hold, directly or as a view's
        memory, is spare (nothing else holds it: the iteration's slots are gone)."""
        kept: set[int] = set()
        for result in results if results.__class__ is tuple else (results,):
            while result is not None:
                kept.add(id(result))
                result = getattr(result, "base", None)
        held = []   # (each buffer is in one of the lists once: a spare is taken once)
        free = self.free
        for buffers in (self.held, self.made):
            for buffer in buffers:
                if id(buffer) in kept:
                    held.append(buffer)
                    continue
                key = (buffer.shape, buffer.dtype)
                spares = free.get(key)
                if spares is None:
                    if len(free) >= SPARE_SHAPES:   # sizes that change per iteration
                        free.pop(next(iter(free)))
                    spares = free[key] = []
                spares.append(buffer)
        self.held, self.made = held, []

    def for_inner(self, call: RegionCall, sizes: dict[str, int], fixed_sizes: bool
                  ) -> LoopState:
        """The state of a loop in this loop's body, kept from the body's last iteration
        for the same sizes (its launches, views and spare buffers stay valid): an inner
        host loop's run repeats no more than an iteration of it does. What the last run
        returned is the body's now: not a spare buffer."""
        kept = self.inner.get(id(call))
        if kept is not None and kept[0] is call:
            state = kept[1]
            if state.sizes is sizes and (state.launches is not None) == (
                    fixed_sizes and hasattr(self.backend, "launcher")):
                state.held, state.made = [], []
                return state
        state = LoopState(self.backend, fixed_sizes, sizes)
        self.inner[id(call)] = (call, state)   # (the call is held: its id stays its own)
        return state


def _value(source: tuple[str, Any], inputs: Sequence[Any]) -> Any:
    kind, value = source
    return inputs[value] if kind == "input" else value


def _full(backend: Any, value: Any, type_: Any, sizes: dict[str, int], copy: bool) -> Any:
    """``value`` as the body's parameter of ``type_`` expects it: an array of its whole
    shape (a constant or fill is one element, broadcast) and, with ``copy``, its own."""
    shape = tuple([sizes[d] if d.__class__ is str else d for d in type_.shape])
    if not copy and (value.shape == shape if value.__class__ is np.ndarray else getattr(
            value, "shape", None) == shape and not isinstance(
            value, np.generic | int | float | bool)):
        return value
    out = backend.empty(shape, type_.dtype)
    module = getattr(backend, "array_module", None)   # CuPy on the GPU: host values moved
    if module is not None and module is not np and isinstance(value, np.ndarray | np.generic):
        value = module.asarray(value)
    out[...] = value
    return out


def _owned(result: Any, inputs: Sequence[Any]) -> bool:
    """Whether a body's result is memory of its own (not a region input or a view)."""
    if getattr(result, "base", None) is not None:
        return False
    return all(result is not value for value in inputs)


@dataclass(frozen=True)
class _Prepared:
    """What ``run_region`` reads of a loop at every call, derived once per loop: each
    source as (from the inputs?, its input index or value, the body parameter's type
    where it is an array else None, whether the body gets a copy of its own), and each
    bound as (from the inputs?, index or value)."""

    sources: tuple[tuple[bool, Any, Any, bool], ...]
    bounds: tuple[tuple[bool, Any], ...]
    programs: slice


def _prepared(call: RegionCall) -> _Prepared:
    found = call.body.schedule_cache.get("region_prepared")
    if found is None:
        region, graph = call.region, call.body.graph
        first_param = 1 if region.kind == "for" else 0
        params = graph.params[first_param:first_param + len(region.sources)]
        found = call.body.schedule_cache["region_prepared"] = _Prepared(
            tuple((kind == "input", what, param.type if param.kind == "array" else None,
                   k in region.private or k in region.copied)
                  for k, ((kind, what), param) in enumerate(zip(region.sources, params))),
            tuple((kind == "input", what) for kind, what in region.bounds),
            slice(call.offset, call.offset + len(call.body.kernels)))
    return found


def _bound(source: tuple[bool, Any], inputs: Sequence[Any]) -> int:
    value = inputs[source[1]] if source[0] else source[1]
    return value if value.__class__ is int else operator.index(_scalar(value))


def run_region(run_plan: Callable[..., Any], backend: Any, call: RegionCall,
               slots: RegionSlots, programs: Sequence[Any], values: list[Any],
               sizes: dict[str, int], kernels: Sequence[Any] = (),
               guard: tuple[Callable[[], None], bool] | None = None,
               outer: LoopState | None = None) -> None:
    """Run ``call``'s loop on the outer call's ``values``; store its CARRYs. ``kernels``:
    the outer plan's (its native kernel as the plan holds it, renamed or not). ``guard``
    (``schedule._Guard``): its copy of the written arguments, taken before the host loop
    (which may meet ``RegionMiss``) or, where a later loop may, before this one writes;
    not for a loop run natively whole when none follows (nothing can miss after it).
    ``outer``: the state of the loop whose body holds this one (``LoopState.for_inner``)."""
    region, body = call.region, call.body
    if guard is not None and (guard[1] or region.exit >= 0):
        guard[0]()   # (a loop with a break: the host loop may resume after the driver wrote)
    prepared = body.schedule_cache.get("region_prepared") or _prepared(call)
    inputs = [values[s] for s in slots.inputs]
    current = []
    for from_input, what, type_, copy in prepared.sources:
        value = inputs[what] if from_input else what
        if type_ is not None and (copy or value.__class__ is not np.ndarray or value.shape != tuple(
                [sizes[d] if d.__class__ is str else d for d in type_.shape])):
            value = _full(backend, value, type_, sizes, copy)   # (an array of its shape: as is)
        current.append(value)
    body_programs = programs[prepared.programs]
    carried_count = len(region.carried)
    rest = None   # the iterations the native loop left to the host loop
    if call.native is not None and backend.name in _NATIVE_TARGETS:
        start, stop, step = (_bound(b, inputs) for b in prepared.bounds)
        kernel = kernels[call.native_index] if kernels else call.native.kernel
        native = (backend, call.native, kernel, programs[call.native_index])
        if region.exit < 0:
            results = _run_native(*native, current, range(start, stop, step), sizes)
        else:
            results, rest = _run_pieces(native, current, range(start, stop, step), sizes,
                                        region.exit)
        if results is not None and not rest:   # then the scratch arrays it wrote, its
            results += [current[k] for k in region.private]   # own copies
            for slot, result in zip(slots.carries, results):
                values[slot] = result
            return
        if results is not None:
            current[:carried_count] = results
    stop_at = region.exit
    if region.kind == "for":
        start, stop, step = (_bound(b, inputs) for b in prepared.bounds)
        trip = range(start, stop, step) if rest is None else rest
        if stop_at >= 0 and bool(_scalar(current[stop_at])):
            trip = range(start, start, step)   # broken before the loop (a peeled iteration)
        native = run_native_region(backend, call, body_programs, current, trip, sizes)
    else:
        condition = _value(region.first, inputs)
        native = run_native_region(backend, call, body_programs, current, None, sizes,
                                   condition)
    if native is not None and not getattr(native, "rest", None):   # all of it
        results = list(native) + [current[k] for k in region.private]
        for slot, result in zip(slots.carries, results):
            if _owned(result, inputs):
                values[slot] = result
            else:   # an input (no iteration ran) or a view of one: copied, it is the CARRY's
                values[slot][...] = result
        return
    graph = body.graph
    carried, captured = current[:carried_count], current[carried_count:]
    take = None if guard is None else guard[0]
    prologue = bool(graph.prologue)
    # sizes that change per iteration (x[:i]) are bound at every iteration; those of a
    # body whose Python ints only index (u[t % 2]) or that holds a loop once, at the first
    dynamic = has_dynamic_sizes(body)
    moving = dynamic and moving_sizes(body)
    memo = LoopState(backend, not moving, sizes) if outer is None else outer.for_inner(
        call, sizes, not moving)
    own = None if dynamic else sizes   # the body's own sizes too (binding._bind_regions)

    def iterate(args: list[Any]) -> tuple:
        nonlocal own
        HOST_ITERATIONS[0] += 1
        if prologue:
            args = call_arguments(body, args)
            if args is None:
                raise RegionMiss("a Python scalar in the loop body changed its type")
        if own is None or moving:   # this iteration's sizes, NumPy's refusals
            found = bind_sizes(body, args)
            if found.__class__ is not dict:
                raise RegionMiss("a view or size of the loop body that NumPy refuses at "
                                 "this iteration")
            found = {**sizes, **found}
            if not moving:
                own = found
                if memo.bound != found and memo.launches:   # (a kept inner loop's state)
                    memo.launches.clear()
                memo.bound = found
            return run_plan(body, body_programs, backend, args, found, memo)
        return run_plan(body, body_programs, backend, args, own, memo)

    if take is not None:
        take()
    if region.kind == "for":
        if native is not None:   # a first part of the range ran natively (``Resumed``)
            carried, trip = list(native), native.rest
        if stop_at >= 0:   # a break: stop after the iteration that sets the flag
            for i in trip:
                carried = list(iterate([i, *carried, *captured]))
                if bool(_scalar(carried[stop_at])):
                    break
        else:
            for i in trip:
                carried = list(iterate([i, *carried, *captured]))
    else:
        while bool(_scalar(condition)):
            results = iterate([*carried, *captured])
            carried, condition = list(results[:-1]), results[-1]
    results = carried + [captured[k - carried_count] for k in region.private]
    for slot, result in zip(slots.carries, results):
        if _owned(result, inputs):
            values[slot] = result
        else:   # an input (no iteration ran) or a view of one: copied, it is the CARRY's
            values[slot][...] = result


def _element(array: Any, key: tuple[Any, ...], trip: range, current: Sequence[Any]
             ) -> Any:
    """The elements ``array[key]`` of every iteration as one 1-d strided view, or None when
    an index leaves the array (NumPy's IndexError) or is negative (Python counts it from
    the end) at some iteration: the host loop then runs (and raises) as Python does."""
    first, stride = [], 0
    for part, size, axis_stride in zip(key, array.shape, array.strides):
        if part.__class__ is tuple and part[0] == "affine":
            low, high = part[1] * trip[0] + part[2], part[1] * trip[-1] + part[2]
            stride += part[1] * trip.step * axis_stride
        else:
            low = high = part if part.__class__ is int else operator.index(
                current[part[1] - 1])
            if low < 0:   # a constant counts from the end, at every iteration alike
                low = high = low + size
        if min(low, high) < 0 or max(low, high) >= size:
            return None
        first.append(low)
    start = array[(*first, Ellipsis)]
    return np.lib.stride_tricks.as_strided(start, (len(trip),), (stride,))


#: the first piece of a native loop with a break (``_run_pieces``)
_FIRST_PIECE = 4096   # (past a break at once: ~20 us of a scalar body's iterations)


def _run_pieces(native: tuple, current: list[Any], trip: range, sizes: dict[str, int],
                exit_: int) -> tuple[list[Any] | None, range | None]:
    """Run a native loop with a break (its kernel guarded on the flag: iterations past
    the break change nothing) on doubling pieces of ``trip``, stopping after the piece
    whose iterations set the flag: the iterations past the break are at most as many as
    those before it, or the first piece's. Return the carried values and the iterations
    left to the host loop (a piece whose elements leave their arrays), or (None, None)
    where none ran."""
    if not trip or bool(_scalar(current[exit_])):
        return None, None
    results, done, size = None, 0, _FIRST_PIECE
    while done < len(trip):
        piece = trip[done:done + size]
        found = _run_native(*native, current, piece, sizes)
        if found is None:
            break
        results, current = found, [*found, *current[len(found):]]
        done, size = done + len(piece), size * 2
        if bool(_scalar(found[exit_])):
            return results, None
    if results is None:
        return None, None
    return results, (trip[done:] if done < len(trip) else None)


def _run_native(backend: Any, native: NativeLoop, kernel: Any, program: Any,
                current: Sequence[Any], trip: range, sizes: dict[str, int]
                ) -> list[Any] | None:
    """Run the loop as its one kernel (``fuse.native_loop``); return the carried values
    after it, or None when it cannot run so (an empty loop, an index out of range)."""
    if not trip:
        return None
    arrays: list[Any] = []
    results: list[Any] = []
    for (kind, what), buffer in zip(native.buffers, kernel.buffers):
        if kind == "access":
            view = _element(current[what.param - 1], what.key, trip, current)
            if view is None:
                return None
            arrays.append(view)
        elif kind == "param":
            arrays.append(current[what - 1])
        else:
            results.append(backend.empty((), buffer.dtype))
            arrays.append(results[-1])
    scalars = [trip.start if p == -1 else trip.step if p == -2 else current[p - 1]
               for p in native.scalars]
    own = {**sizes, native.trip: len(trip)}
    backend.launch(kernel, program, arrays, scalars, own, pack_meta(kernel, own, arrays).tolist())
    return results


def _scalar(value: Any) -> Any:
    """A 0-d array's value (a bound or condition read back from the device)."""
    if getattr(value, "ndim", None) == 0:
        item = getattr(value, "item", None)
        return item() if item is not None else value
    return value


def trip_count(start: int, stop: int, step: int) -> int:
    """``len(range(start, stop, step))`` (for reports)."""
    return max(0, math.ceil((stop - start) / step))
