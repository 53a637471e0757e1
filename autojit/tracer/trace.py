"""``trace_function``: run a Python function on proxies and freeze what it did into a Graph."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.graph import Graph, Param, SourceLoc
from autojit.ir.host import HOST_TYPES
from autojit.ir.ops import Op
from autojit.ir.types import TensorType, is_supported
from autojit.tracer.convert import convert_function
from autojit.tracer.creation import creation_patches
from autojit.tracer.host import HostScalar, math_patches, python_constant, python_scalar_dtype
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import CURRENT_TRACE, TraceState

#: Python scalar types and the dtype NumPy gives them on their own (np.asarray).
_PYTHON_SCALARS: dict[type, tuple[np.dtype, type | None]] = {
    bool: (np.dtype(bool), None),          # NEP 50: Python bool is not weak
    int: (np.dtype(np.int64), int),
    float: (np.dtype(np.float64), float),
}


def classify_argument(value: Any) -> tuple[str, np.dtype, tuple[int, ...], type | None, bool]:
    """Return (kind, dtype, example shape, weak python type, is NumPy scalar) of an argument.

    Raises UnsupportedError for arguments autojit does not compile.
    """
    if type(value) in _PYTHON_SCALARS:
        dtype, weak = _PYTHON_SCALARS[type(value)]
        return "scalar", dtype, (), weak, False
    if isinstance(value, np.generic):
        return "scalar", value.dtype, (), None, True
    if isinstance(value, np.ndarray):
        return "array", value.dtype, value.shape, None, False
    raise UnsupportedError(f"argument of type {type(value).__name__} is not supported")


def _argument_proxy(state: TraceState, index: int, name: str, value: Any,
                    loc: SourceLoc | None) -> tuple[Param, Proxy | HostScalar]:
    """A Python scalar is a HostScalar (no graph value until it meets an array)."""
    kind, dtype, shape, weak, is_scalar = classify_argument(value)
    if not is_supported(dtype):
        raise UnsupportedError(f"argument '{name}' has dtype {dtype}, which is not supported")
    if type(value) in _PYTHON_SCALARS:
        return Param(name, kind, TensorType(dtype, ())), HostScalar(index, value)
    dims = tuple(1 if size == 1 else state.new_symbol(size) for size in shape)
    state.argument_symbols.update(d for d in dims if d != 1)
    state.symbol_sources.update((d, (index, axis)) for axis, d in enumerate(dims) if d != 1)
    type_ = TensorType(dtype, dims)
    node = state.add_node(Op.ARG, (), type_, (("index", index),), loc)
    if isinstance(value, np.ndarray) and value.flags.c_contiguous:
        state.c_contiguous_args.add(index)   # the signature keeps it so (ArrayKey)
    return Param(name, kind, type_), Proxy(node, type_, weak, is_scalar, index)


def parameter_names(fn: Callable, count: int) -> list[str]:
    """Return names for ``count`` positional arguments of ``fn``."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names += [f"arg{i}" for i in range(len(names), count)]
    return names[:count]


def _name_declined_loop(exc: TraceError, state: TraceState) -> None:
    """A loop the region tracer declined ran as Python, and what stopped the trace is often
    what that did (``range(n)`` needing n's value): the reason says why it was no region."""
    if not state.declined:
        return
    kind, where, why = state.declined[-1]
    exc.reason = f"{exc.reason} (the {kind} at {where} is not a region: {why})"
    exc.args = (f"{exc.loc}: {exc.reason}" if exc.loc else exc.reason,)


def _output_node(state: TraceState, value: Any) -> tuple[int, bool]:
    if type(value) in _PYTHON_SCALARS:   # a constant (``acc = 0.0`` never updated)
        value = python_constant(state, value)
    if isinstance(value, HostScalar):   # the call argument itself: the Python object
        type_ = TensorType(python_scalar_dtype(value.python_type), ())
        return state.add_node(Op.ARG, (), type_, (("index", value.ref),)), True
    if isinstance(value, Proxy):
        if value.node in state.stale and (value.is_scalar or value.node in state.view_copies):
            state.rebase(value.node)   # raises: a copy made before a later write
        if value.node in state.stale and state.memory_of.get(value.node, 0) < 0:
            # a scratch array's view taken before a write: the same view of it now (its
            # views are taken once their base is computed; a reshape may have copied)
            value.node = state.rebase(value.node)
        view = value.node in state.numpy_views
        condition = state.conditional_views.get(value.node)
        if condition is not None:   # it depends on the call's values: a decision on them
            view = bool(condition.value)
            state.decisions.setdefault(condition.ref, (view, "the returned value's base"))
        if view:   # NumPy's is a view: so is ours (no copy)
            step = ("step", ("reshape", (-1,)))
            return state.add_node(Op.VIEW, (value.node,), value.type, (step,)), False
        from autojit.tracer.pyscalars import is_python
        if is_python(value):   # a Python number computed from traced values: the number
            return value.node, 2
        return value.node, value.is_scalar
    if isinstance(value, np.generic) and is_supported(value.dtype):
        if type(value) is not np.dtype(value.dtype.str).type:
            # np.ulonglong is not np.uint64 (np.ulong here), np.longlong not np.int64: one
            # dtype, two scalar types; the graph's dtypes keep only the first
            raise UnsupportedError(f"the function returns a NumPy {type(value).__name__} "
                                   f"scalar: its dtype's other scalar type than "
                                   f"np.{np.dtype(value.dtype.str).type.__name__}")
        return state.add_const(value.item(), value.dtype), True
    raise UnsupportedError(f"the function returns a {type(value).__name__}; autojit compiles "
                           "functions returning arrays or tuples of arrays")


def _function_loc(fn: Callable) -> SourceLoc | None:
    code = getattr(fn, "__code__", None)
    return SourceLoc(code.co_filename, code.co_firstlineno) if code else None


def trace_function(fn: Callable, args: Sequence[Any], name: str | None = None) -> Graph:
    """Trace ``fn(*args)``; return its Graph. Raises TraceError when it cannot be traced."""
    state = TraceState(arg_count=len(args))
    names = parameter_names(fn, len(args))
    loc = _function_loc(fn)
    params, proxies = zip(*(_argument_proxy(state, i, n, a, loc)
                            for i, (n, a) in enumerate(zip(names, args)))) if args else ((), ())
    state.params_kind = [p.kind for p in params]
    traced = convert_function(fn)   # loops and branches as control calls (the dispatcher
    token = CURRENT_TRACE.set(state)   # still runs the original ``fn`` as the fallback)
    try:
        with creation_patches, math_patches:
            result = traced(*proxies)
    except TraceError as exc:
        _name_declined_loop(exc, state)
        raise
    except Exception as exc:
        raise TraceError(f"{type(exc).__name__} while tracing: {exc}") from exc
    finally:
        CURRENT_TRACE.reset(token)
    is_tuple = isinstance(result, tuple)
    if result is None and state.stale:      # a function that only writes into its arguments
        return _freeze(state, fn, name, params, [], False)
    returned = result if is_tuple else (result,)
    if any(isinstance(r, Proxy) and r.node in state.python_bools for r in returned):
        raise UnsupportedError("the function returns a comparison of Python numbers "
                               "computed from array values (a Python bool)")
    outputs = [_output_node(state, r) for r in returned]
    return _freeze(state, fn, name, params, outputs, is_tuple)


def _freeze(state: TraceState, fn: Callable, name: str | None, params: Sequence[Param],
            outputs: list[tuple[int, bool]], is_tuple: bool) -> Graph:
    params = tuple(Param(p.name, p.kind, TensorType(
        p.type.dtype, tuple(state.find(d) for d in p.type.shape))) for p in params)
    params += tuple(Param(f"host{j}", "scalar", TensorType(python_scalar_dtype(
        HOST_TYPES[step.result_type]), ())) for j, step in enumerate(state.host_steps))
    sources: dict[str, list[tuple[int, int]]] = {}
    for index, param in enumerate(params):
        for axis, dim in enumerate(param.type.shape):
            if isinstance(dim, str):
                sources.setdefault(dim, []).append((index, axis))
    # a symbol specialised to 1 is checked where it is read, on its views (bind_sizes)
    guards = sorted({(state.find(s), v) for s, v in state.guards.items()
                     if state.find(s).__class__ is str})
    return Graph(
        name=name or getattr(fn, "__name__", "fn"),
        params=params,
        nodes=tuple(state.canonical_nodes()),
        outputs=tuple(o for o, _ in outputs),
        output_tuple=is_tuple,
        scalar_outputs=tuple(s for _, s in outputs),
        guards=tuple(guards),
        dims=tuple((s, tuple(v)) for s, v in sorted(sources.items())),
        int_guards=tuple(sorted(state.int_guards)),
        nonempty=tuple(sorted({state.find(s) for s in state.nonempty} - {1})),
        loc=_function_loc(fn),
        prologue=tuple(state.host_steps),
        scalar_dims=tuple(sorted(((state.find(s), ref) for s, ref in state.scalar_dims.items()),
                                 key=repr)),
        decisions=tuple((ref, value, where) for ref, (value, where) in state.decisions.items()),
        declined=tuple(state.declined),
        size_aliases=_region_aliases(state),
    )


def _region_aliases(state: TraceState) -> tuple[tuple[str, Any], ...]:
    """The symbols in loop bodies (frozen when their loop was traced) that the trace merged
    since with another size: bound under both names (``binding.bind_sizes``)."""
    bodies = [n.attr("region").body for n in state.nodes if n.op is Op.REGION]
    found: set[str] = set()
    while bodies:   # nested loops: walked, not recursed
        body = bodies.pop()
        for node in (*body.params, *body.nodes):
            found.update(d for d in node.type.shape if d.__class__ is str)
        bodies += [n.attr("region").body for n in body.nodes if n.op is Op.REGION]
    return tuple(sorted((s, state.find(s)) for s in found if state.find(s) != s))
