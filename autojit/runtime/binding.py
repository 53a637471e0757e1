"""Binding a call to a plan: each size symbol's value from the arguments, whether the plan
answers these arguments at all (sizes the trace specialised on, Python scalar types and
ranges, the host prologue's values), and which written arguments may overlap others.

Everything here is derived once per plan (cached in ``Plan.schedule_cache``) and read at
every call; nothing runs a kernel.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from autojit.fuse.partition import memory_param
from autojit.fuse.plan import Plan
from autojit.ir.host import compile_prologue, conversion_fails
from autojit.ir.ops import Op
from autojit.ir.views import apply_view, resolve_step, step_refs, view_shape

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
    refs: bool = False   # a view's index or slice bound is a Python int of the call


def _size_sources(plan: Plan) -> _SizeSources:
    found = plan.schedule_cache.get("size_sources")
    if found is None:   # once per plan: most plans have no views or writes at all
        graph = plan.graph
        special = tuple(n for n in graph.nodes if n.op in (Op.VIEW, Op.WRITE))
        # a guarded size no argument binds: fixed by the code, or one a view binds later
        # (preset to its guard: a view of another size then misses and retraces)
        bound = {s for s, _ in graph.dims} | {s for s, _ in graph.scalar_dims}
        refs = any(n.op is Op.VIEW and step_refs(n.attr("step")) for n in special)
        found = plan.schedule_cache["size_sources"] = _SizeSources(
            special, dict(graph.guards), tuple(g for g in graph.guards if g[0] not in bound),
            refs)
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
    values: bool = False   # sizes or views read Python ints of the call (prologue values)


def _binder(plan: Plan) -> _Binder:
    found = plan.schedule_cache.get("binder")
    if found is None:
        graph = plan.graph
        _, rank, literal = _value_shapes(plan)
        root = _integer_root(_MAX_ELEMENTS, rank) if rank else math.inf
        sources = _size_sources(plan)
        found = plan.schedule_cache["binder"] = _Binder(
            tuple((symbol, *sources[0], tuple(sources[1:])) for symbol, sources in graph.dims),
            bool(sources.special or graph.guards), tuple(graph.nonempty),
            root if literal <= root else -1, bool(graph.scalar_dims or sources.refs))
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
    values = args
    if binder.values:   # the call's Python ints, its prologue's values among them
        try:
            values = call_arguments(plan, args)
        except Exception:  # the prologue's Python arithmetic raised: so does the function
            return None
        if values is None:
            return SIZES_MISS   # traced for other Python scalar types
        found = _bind_scalar_sizes(plan, values, sizes)
        if found is not True:
            return found
    if binder.special:
        graph, sources = plan.graph, _size_sources(plan)
        if any(sizes.get(s, v) != v for s, v in graph.guards):
            return SIZES_MISS
        sizes.update(sources.fixed)   # sizes the code itself fixed (np.zeros(3))
        found = _bind_view_sizes(plan, sources, values, sizes)
        if found is not True:
            return found
    if binder.nonempty and any(sizes[s] == 0 for s in binder.nonempty):
        return None   # NumPy raises for a reduction of nothing without an identity
    if plan.regions:   # a loop body's own sizes (its views'), bound before anything runs
        found = _bind_regions(plan, sizes)
        if found is not True:
            return found
    # a bound from the largest size and rank first: the usual call stops there
    if sizes and max(sizes.values()) > binder.limit and _too_big(plan, sizes):
        return None   # NumPy raises ValueError ("iterator is too large", "array is too big")
    for alias, size in plan.graph.size_aliases:   # a loop body's older names of sizes
        if size.__class__ is not str:
            sizes[alias] = size
        elif size in sizes:   # (a body's own size: bound with its iteration)
            sizes[alias] = sizes[size]
    return sizes


def has_dynamic_sizes(body: Plan) -> bool:
    """Whether a body's sizes change from one iteration to the next: a view or size from a
    Python int of the body (the loop index), or a loop inside it. Those bodies bind their
    sizes at every iteration, from the iteration's own values (computed once per plan)."""
    found = body.schedule_cache.get("dynamic_sizes")
    if found is None:
        graph = body.graph
        found = bool(graph.scalar_dims or body.regions or any(
            n.op is Op.VIEW and step_refs(n.attr("step")) for n in graph.nodes))
        body.schedule_cache["dynamic_sizes"] = found
    return found


def moving_sizes(body: Plan) -> bool:
    """Whether a body's sizes may change from one iteration to the next: sizes from its
    Python ints (``Graph.scalar_dims``), or a view whose shape reads one (a slice bound
    ``x[:i]``, a reshape's size). A view whose Python ints are only integer indices
    (``u[t % 2]``) keeps its shape, only where it starts moves: such a body binds its
    sizes once per loop and takes that view at every iteration (NumPy's IndexError there
    ends the loop as a ``RegionMiss``)."""
    found = body.schedule_cache.get("moving_sizes")
    if found is None:
        found = body.schedule_cache["moving_sizes"] = bool(body.graph.scalar_dims or any(
            n.op is Op.VIEW and _shape_refs(n.attr("step")) for n in body.graph.nodes))
    return found


def _shape_refs(step: tuple[str, Any]) -> bool:
    """Whether a view step's shape reads a Python int of the call (not an integer index)."""
    name, argument = step
    if name != "getitem":
        return bool(step_refs(step))
    return any(part.__class__ is slice and step_refs((name, part))
               for part in (argument if isinstance(argument, tuple) else (argument,)))


#: shapes a loop body's bound sizes are kept for (``_bind_regions``)
_BOUND_SHAPES = 64


def _bind_regions(plan: Plan, sizes: dict[str, int]) -> Mapping[str, int] | None | bool:
    """Bind each loop body's sizes (the sizes of its views) from the shapes its parameters
    have at this call, into ``sizes`` (the body shares the trace's size symbols); True when
    bound, else what ``bind_sizes`` returns. Where the body's views or broadcasts make NumPy
    raise, the call runs as Python, which raises it at the right point (if the loop runs)."""
    for call in plan.regions:
        if has_dynamic_sizes(call.body):   # bound at every iteration, from its own values
            continue
        region, body, graph = call.region, call.body, plan.graph
        first = 1 if region.kind == "for" else 0
        params = body.graph.params[first:]
        shapes = tuple(None if param.kind != "array" or source[0] != "input" else tuple(
            sizes[d] if d.__class__ is str else d
            for d in graph.node(call.inputs[source[1]]).type.shape)
            for source, param in zip(region.sources, params))
        # the body's sizes follow from these shapes alone: bound once per shape (a warm
        # call of a small loop spent ~40% of its time making the stand-ins and binding)
        memo = body.schedule_cache.setdefault("bound_by_shapes", {})
        found = memo.get(shapes)
        if found is None:
            args: list[Any] = [0] * first
            for source, param, shape in zip(region.sources, params, shapes):
                if shape is None:
                    args.append(source[1] if source[0] != "input" else 0)
                    continue
                # a stand-in of the parameter's shape (no memory: every stride 0), writeable
                args.append(np.lib.stride_tricks.as_strided(
                    np.zeros(1, param.type.dtype), shape, (0,) * len(shape), writeable=True))
            found = bind_sizes(body, args)
            if len(memo) >= _BOUND_SHAPES:
                memo.clear()
            memo[shapes] = found
        if found is None or found is SIZES_MISS:
            return found
        sizes.update(found)
    return True


def _bind_scalar_sizes(plan: Plan, values: Sequence[Any],
                       sizes: dict[str, int]) -> Mapping[str, int] | None | bool:
    """Bind the sizes Python ints of the call give (``Graph.scalar_dims``); True when bound,
    else what ``bind_sizes`` returns: None where NumPy raises (a negative size, sizes that
    must be equal and are not), SIZES_MISS where a size the trace took as 1 is not, or one
    that may broadcast as 1 differs."""
    for symbol, ref in plan.graph.scalar_dims:
        value = values[ref]
        if value < 0:
            return None   # NumPy raises: negative dimensions are not allowed
        if symbol.__class__ is not str:
            if value != symbol:
                return SIZES_MISS
            continue
        known = sizes.setdefault(symbol, value)
        if known != value:
            return SIZES_MISS if 1 in (known, value) else None
    return True


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


#: how a view's base is found at a call (``_view_table``)
_OF_VIEW, _OF_ARGUMENT, _OF_SHAPE = 0, 1, 2


def _view_table(plan: Plan, sources: _SizeSources) -> tuple[tuple, ...]:
    """Per view or write of ``sources.special``, what binding it reads, derived once per
    plan (a loop body with sizes from its index binds at every iteration): a write's
    argument (None: a scratch array's), or a view's base (another view, an argument, or
    the shape of a computed value), its step, whether it may copy, and its dims."""
    found = plan.schedule_cache.get("view_table")
    if found is None:
        graph, rows = plan.graph, []
        for node in sources.special:
            if node.op is Op.WRITE:
                if node.attr("root") is None:
                    rows.append((None, node.attr("param"), None, None, False, ()))
                continue
            base = graph.node(node.inputs[0])
            param = None if base.op is Op.VIEW else memory_param(graph, base.id)
            kind, where = ((_OF_VIEW, base.id) if base.op is Op.VIEW else
                           (_OF_ARGUMENT, param) if param is not None else
                           (_OF_SHAPE, base.type.shape))
            step = node.attr("step")
            rows.append((node.id, kind, where, step, step[0] in ("reshape", "ravel"),
                         node.type.shape))
        found = plan.schedule_cache["view_table"] = tuple(rows)
    return found


def _bind_view_sizes(plan: Plan, sources: _SizeSources, args: Sequence[Any],
                     sizes: dict[str, int]) -> Mapping[str, int] | None | bool:
    """Bind the sizes of views; True when bound, else what ``bind_sizes`` returns: a view
    whose size differs from what it must equal misses where NumPy might broadcast (a size 1)
    or the trace depends on it (a guard, a literal 1), and raises otherwise."""
    views: dict[int, Any] = {}   # an array where the view of an argument is cheap, else a shape
    refs, guards = sources.refs, sources.guards
    for node, kind, where, step, copies, dims in (plan.schedule_cache.get("view_table")
                                                  or _view_table(plan, sources)):
        if node is None:   # a write into argument ``kind``
            if not getattr(args[kind].flags, "writeable", True):
                return None   # NumPy raises: assignment destination is read-only
            continue
        base = (views[where] if kind == _OF_VIEW else args[where] if kind == _OF_ARGUMENT
                else tuple(sizes[d] if d.__class__ is str else d for d in where))
        if refs:
            step = resolve_step(step, args)
        try:
            if base.__class__ is tuple or copies:   # may copy
                view = view_shape(base if base.__class__ is tuple else base.shape, step)
                shape = view
            else:
                view = apply_view(base, step)
                shape = view.shape
        except (IndexError, ValueError, TypeError):
            return None   # NumPy raises for this view of these arguments
        views[node] = view
        for dim, size in zip(dims, shape):
            if dim.__class__ is not str:
                if size != 1:
                    return SIZES_MISS   # the trace took this size as a broadcast 1
                continue
            known = sizes.setdefault(dim, size)
            if known != size:
                return SIZES_MISS if 1 in (known, size) or dim in guards else None
            if guards.get(dim, size) != size:
                return SIZES_MISS
    if len(args) > 1:
        for written, other in argument_overlaps(plan).python:
            if _shares_memory(args[written], args[other]):
                return None   # the trace assumed distinct memory: plain Python runs it
    return True


def shared_arguments(plan: Plan, args: Sequence[Any]) -> tuple[int, int] | None:
    """The first pair (written argument, other argument) whose memory overlaps at this call
    where the trace took them for distinct arrays (``Overlaps.python``): why
    ``bind_sizes`` answered None for a call NumPy does not refuse, for its fallback note."""
    for written, other in argument_overlaps(plan).python:
        if _shares_memory(args[written], args[other]):
            return written, other
    return None


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
        if node.op is Op.WRITE and node.attr("root") is None:   # (not a scratch array)
            # a loop's writes (a region WRITE) happen as it reads
            at = node.inputs[1] - 0.5 if node.attr("region") else node.id
            first_write.setdefault(node.attr("param"), at)
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
    if plan.graph.decisions and changed_decision(plan, values) is not None:
        return CALL_MISS   # Python takes another branch for these values: another trace
    return CALL_OK


def changed_decision(plan: Plan, values: Sequence[Any]) -> str | None:
    """Return the first decision the trace took (``if n > 100:``) that these call values
    (:func:`call_arguments`) take otherwise, in words; None when every one holds."""
    for ref, taken, where in plan.graph.decisions:
        if values[ref] is not taken:
            return f"a decision on Python scalars at {where} was {taken}, now {not taken}"
    return None
