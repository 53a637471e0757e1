"""The NumPy API map: how each ufunc, function and method call becomes graph nodes.

Dtypes come from NumPy itself (``ufunc.resolve_dtypes``, ``np.result_type``), so NumPy 2
promotion (NEP 50: Python scalars are weak) holds by construction. Operands are cast to the
loop dtype NumPy picks, so every graph op sees operands of one dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import UFUNC_OPS, Op
from autojit.ir.types import TensorType, broadcast_dims, is_supported
from autojit.tracer.contractions import CONTRACTION_HANDLERS
from autojit.tracer.creation import CREATION_HANDLERS
from autojit.tracer.host import HostScalar, python_scalar_dtype
from autojit.tracer.proxy import Proxy
from autojit.tracer.reductions import REDUCTION_HANDLERS
from autojit.tracer.scans import SCAN_HANDLERS, accumulate
from autojit.tracer.state import TraceState, current_trace, user_location
from autojit.tracer.views import TAKE_PYTHON_INTS, VIEW_HANDLERS

_WEAK_PYTHON_TYPES = (int, float)
_IGNORED_UFUNC_KWARGS = {"out": None, "where": True, "casting": "same_kind", "order": "K",
                         "dtype": None, "subok": True, "signature": None}


def _unsupported(reason: str) -> UnsupportedError:
    return UnsupportedError(reason, user_location(3))


def host_proxy(value: HostScalar, strong: bool = False) -> Proxy:
    """A Python scalar as a graph value of its default dtype (int64, float64, bool): weak
    (NEP 50) unless ``strong`` (what ``np.asarray`` makes of it)."""
    python_type = value.python_type
    dtype = python_scalar_dtype(python_type)
    node = current_trace().host_input(value.ref, dtype, python_type)
    weak = None if strong or python_type is bool else python_type
    return Proxy(node, TensorType(dtype, ()), weak, True, value.ref)


def _descriptor(operand: Any) -> np.dtype | type:
    """Return what NumPy's dtype resolution sees: a dtype, or ``int``/``float`` if weak."""
    if isinstance(operand, HostScalar):
        python_type = operand.python_type
        return np.dtype(bool) if python_type is bool else python_type
    if isinstance(operand, Proxy):
        return operand.weak or operand.type.dtype
    if isinstance(operand, bool | np.bool_):
        return np.dtype(bool)
    if isinstance(operand, _WEAK_PYTHON_TYPES) and not isinstance(operand, np.generic):
        return type(operand)
    if isinstance(operand, np.generic | np.ndarray) and np.ndim(operand) == 0:
        return np.asarray(operand).dtype
    if isinstance(operand, np.ndarray):
        raise _unsupported("an array captured from outside the function (pass it as an "
                           "argument)")
    raise _unsupported(f"operand of type {type(operand).__name__} is not supported")


def _check_dtype(dtype: np.dtype) -> None:
    if not is_supported(dtype):
        raise _unsupported(f"dtype {dtype} is not supported (bool, int8-64, uint8-64, "
                           f"float32, float64 are)")


def _operand_node(state: TraceState, operand: Any, dtype: np.dtype, op: Op) -> int:
    """Return a node holding ``operand`` converted to ``dtype`` (a CAST, a constant, or a
    Python scalar converted to ``dtype`` by NumPy at call time)."""
    if isinstance(operand, HostScalar):
        if operand.source is not None and operand._ref is None and dtype in _SIZE_DTYPES:
            return _size_node(state, operand.symbol, dtype)   # no prologue step needed
        return state.host_input(operand.ref, dtype, operand.python_type)
    if isinstance(operand, Proxy):
        if operand.type.dtype == dtype:
            return operand.node
        if operand.weak is not None and operand.param >= 0:
            return state.host_input(operand.param, dtype, operand.weak)
        return state.add_node(Op.CAST, (operand.node,), operand.type.with_dtype(dtype))
    value = np.asarray(operand).item()
    if isinstance(value, int) and not isinstance(value, bool) and dtype.kind in "iub":
        info = np.iinfo(np.int64 if dtype.kind == "b" else dtype)   # bool: through C long
        if not info.min <= value <= info.max:
            # NumPy raises OverflowError here, or (comparisons) special-cases it.
            raise _unsupported(f"Python integer {value} is out of bounds for {dtype}")
    return state.add_const(value, dtype)


#: dtypes every array size converts to exactly as NumPy converts the Python int (no range
#: check needed): an argument's size meeting such an array is read from the sizes bound.
_SIZE_DTYPES = (np.dtype(np.int64), np.dtype(np.float64))


def _size_node(state: TraceState, symbol: str, dtype: np.dtype) -> int:
    """A kernel scalar holding size ``symbol`` as ``dtype`` (a SIZE node, cast)."""
    root = state.find(symbol)
    if root.__class__ is not str:
        return state.add_const(root, dtype)
    key = ("size", (root,))
    if key not in state.consts:
        state.consts[key] = state.add_node(Op.SIZE, (), TensorType(np.dtype(np.int64), ()),
                                           (("symbols", (root,)),), user_location(4))
    node = state.consts[key]
    if dtype == np.int64:
        return node
    return state.add_node(Op.CAST, (node,), TensorType(dtype, ()))


def _shape_of(operand: Any) -> tuple:
    return operand.type.shape if isinstance(operand, Proxy) else ()


def _host_free(value: Any) -> Any:
    """``value`` with Python scalars (top level, or in a tuple/list) as weak graph values:
    what NumPy functions other than ufuncs receive."""
    if isinstance(value, HostScalar):   # an array's size (a shape): the int, guarded
        return value.concrete("") if value.sizes is not None else host_proxy(value)
    if isinstance(value, tuple | list) and any(isinstance(v, HostScalar) for v in value):
        return type(value)(_host_free(v) for v in value)
    return value


def make_elementwise(op: Op, operands: tuple[Any, ...], loop: tuple[np.dtype, ...],
                     out_dtype: np.dtype, is_scalar: bool,
                     attrs: tuple[tuple[str, Any], ...] = ()) -> Proxy:
    """Record ``op`` over ``operands`` cast to the ``loop`` dtypes; return the result proxy."""
    state = current_trace()
    for dtype in (*loop, out_dtype):
        _check_dtype(dtype)
    shape = broadcast_dims([_shape_of(o) for o in operands], state.broadcast)
    inputs = tuple(_operand_node(state, o, d, op) for o, d in zip(operands, loop))
    node = state.add_node(op, inputs, TensorType(out_dtype, shape), attrs)
    return Proxy(node, TensorType(out_dtype, shape), is_scalar=is_scalar)


def _check_special_cases(op: Op, operands: tuple[Any, ...], loop: tuple[np.dtype, ...]) -> None:
    """Refuse value-dependent NumPy behaviour kernels cannot reproduce."""
    if op is Op.POWER and loop[0].kind in "iu":
        exponent = operands[1]
        if isinstance(exponent, Proxy | HostScalar):
            raise _unsupported("integer power with a non-constant exponent")
        if int(exponent) < 0:
            raise TraceError("Integers to negative integer powers are not allowed.",
                             user_location(3))
    if op is Op.SIGN and loop[0].kind == "b":
        raise _unsupported("sign of booleans")


def _python_ints_as_int64(inputs: tuple[Any, ...]) -> None:
    """A ufunc of Python scalars only converts each int by value (``np.asarray``): int64 if
    it fits, else uint64 or an object array. Only int64 is the weak int of NEP 50, so other
    values run as Python (a guard; a literal is refused)."""
    state = current_trace()
    for operand in inputs:
        if isinstance(operand, HostScalar) and operand.python_type is int:
            state.int_guards.add((operand.ref, "int64"))
        elif type(operand) is int and not -(2**63) <= operand < 2**63:
            raise _unsupported(f"a ufunc of the Python int {operand} alone (NumPy converts "
                               "it by value)")


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any], attrs: tuple[tuple[str, Any], ...] = ()) -> Proxy:
    """Record a ufunc call (``attrs``: the graph node's, see ``decompose.ATTR_VARIANTS``);
    return the result proxy."""
    if ufunc is np.matmul and method == "__call__" and not kwargs:
        from autojit.tracer.contractions import matmul
        return matmul(*inputs)
    if method == "accumulate":   # np.add.accumulate: a scan (out= included: refused there)
        return accumulate(ufunc, *inputs, **kwargs)
    out = kwargs.pop("out", None)
    if out is not None:   # np.add(a, b, out=c): compute, then write into c (same_kind)
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if not isinstance(target, Proxy):
            raise _unsupported("out= must be an argument of the function")
        if target.is_scalar or target.weak is not None:   # a NumPy or Python scalar
            raise TraceError("TypeError: return arrays must be of ArrayType", user_location(2))
        from autojit.tracer.writes import augmented_into
        return augmented_into(target, apply_ufunc(ufunc, method, inputs, kwargs))
    op = UFUNC_OPS.get(ufunc)
    if op is None or method != "__call__":
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        raise _unsupported(f"np.{name} is not supported")
    for key, value in kwargs.items():
        if key not in _IGNORED_UFUNC_KWARGS or value is not _IGNORED_UFUNC_KWARGS[key] and \
                value != _IGNORED_UFUNC_KWARGS[key]:
            raise _unsupported(f"np.{ufunc.__name__}(..., {key}=...) is not supported")
    if not any(isinstance(o, Proxy) for o in inputs):
        _python_ints_as_int64(inputs)
    descriptors = tuple(_descriptor(o) for o in inputs)
    try:
        resolved = ufunc.resolve_dtypes(descriptors + (None,) * ufunc.nout)
    except Exception as exc:  # NumPy's own error: the fallback run will raise it
        raise TraceError(f"np.{ufunc.__name__}: {exc}", user_location(2)) from None
    loop, out_dtype = resolved[: ufunc.nin], resolved[ufunc.nin]
    _check_special_cases(op, inputs, loop)
    is_scalar = all(len(_shape_of(o)) == 0 for o in inputs)
    if op is Op.POWER and all(d == 1 for d in _shape_of(inputs[1])):
        attrs = attrs + (("scalar_exponent", True),)   # NumPy's loop: x ** 0.5 is sqrt(x)
    return make_elementwise(op, inputs, loop, out_dtype, is_scalar, attrs)


def _result_type_operand(operand: Any) -> Any:
    if isinstance(operand, HostScalar):
        return operand.python_type(0)
    if isinstance(operand, Proxy):
        return operand.weak(0) if operand.weak else operand.type.dtype
    _descriptor(operand)  # refuses unsupported operands
    return operand


def _where(condition: Any, x: Any = None, y: Any = None) -> Proxy:
    if x is None or y is None:
        raise _unsupported("np.where with one argument (np.nonzero) is not supported")
    dtype = np.result_type(_result_type_operand(x), _result_type_operand(y))
    if isinstance(condition, HostScalar):
        condition = host_proxy(condition, strong=True)
    cond = condition if isinstance(condition, Proxy) else np.asarray(condition, dtype=bool)
    return make_elementwise(Op.SELECT, (cond, x, y), (np.dtype(bool), dtype, dtype), dtype,
                            is_scalar=False)


def _broadcast_along(shape: tuple, out: tuple, axis: int) -> bool:
    """Whether ``shape`` (right-aligned to ``out``) repeats one value along ``axis``."""
    position = axis - (len(out) - len(shape))
    return out[axis] != 1 and (position < 0 or shape[position] == 1)


def _clip_loop_attrs(a: Any, a_min: Any, a_max: Any) -> tuple[tuple[str, Any], ...] | None:
    """Which of NumPy's two float clip loops runs (they differ on ties with ±0 and on which
    NaN wins; see ``decompose._clip_constant_bounds``): the constant-bounds loop when both
    bounds are 0-d, the array loop when a bound varies along NumPy's inner loop. None where
    NumPy's iterator decides by its buffering setup: both bounds of size one but not 0-d, or
    bounds repeated along the inner axis of a broadcast x (measured on NumPy 2.4)."""
    low, high, x = _shape_of(a_min), _shape_of(a_max), _shape_of(a)
    if not low and not high:
        return (("constant_bounds", True),)
    if all(d == 1 for d in low + high):
        return None
    out = tuple(broadcast_dims([x, low, high], lambda d, e: d if d != 1 else e))
    inner = [axis for axis in range(len(out)) if out[axis] != 1]
    if inner and all(_broadcast_along(s, out, inner[-1]) for s in (low, high)) and \
            any(_broadcast_along(x, out, axis) for axis in inner):
        return None
    return ()


def _as_array_operand(value: Any) -> Any:
    """What ``np.asarray(value)`` makes of a Python scalar: a strong (not NEP 50 weak)
    value of the default dtype; functions that convert their input first (``np.clip``'s
    ``a``: ``np.clip(5, np.int16(-53), None)`` is int64, not int16) promote it like an
    array."""
    if isinstance(value, HostScalar):
        return host_proxy(value, strong=True)
    if isinstance(value, Proxy):
        return value.strong()
    if type(value) in (int, float):
        return np.asarray(value)[()]
    return value


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Proxy:
    if out is not None or kwargs:
        raise _unsupported("np.clip with out= or other keywords is not supported")
    if a_min is None and a_max is None:
        raise TraceError("One of max or min must be given", user_location(2))
    a = _as_array_operand(a)
    if a_max is None:
        return apply_ufunc(np.maximum, "__call__", (a, a_min), {})
    if a_min is None:
        return apply_ufunc(np.minimum, "__call__", (a, a_max), {})
    attrs = _clip_loop_attrs(a, a_min, a_max)
    result = apply_ufunc(np._core.umath.clip, "__call__", (a, a_min, a_max), {}, attrs or ())
    if attrs is None and result.type.dtype.kind == "f":
        raise _unsupported("np.clip of floats with these bound shapes: NumPy's iterator "
                           "picks one of two loops that differ on zero signs and NaNs")
    return result


def astype(proxy: Proxy, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: Any = True) -> Proxy:
    """Record ``proxy.astype(dtype)``: NumPy's ``np.can_cast(from, to, casting)`` check
    (its TypeError comes from the Python run), a new array, or with ``copy=False`` and the
    same dtype the array itself, as NumPy returns it. Orders other than K/C (the result's
    memory layout) are not supported."""
    try:
        dtype = np.dtype(dtype)
        allowed = np.can_cast(proxy.dtype, dtype, casting=casting)
    except Exception as exc:  # an invalid dtype or casting rule: NumPy's error on fallback
        raise TraceError(f"astype: {exc}", user_location(2)) from None
    if not allowed:
        raise TraceError(f"Cannot cast array data from {proxy.dtype!r} to {dtype!r} "
                         f"according to the rule {casting!r}", user_location(2))
    if order not in ("K", "C") or not isinstance(subok, bool):
        raise _unsupported(f"astype(..., order={order!r}) is not supported")
    _check_dtype(dtype)
    if dtype == proxy.dtype and not copy and not proxy.is_scalar:
        return proxy
    state = current_trace()
    node = state.add_node(Op.CAST, (proxy.node,), proxy.type.with_dtype(dtype))
    return Proxy(node, proxy.type.with_dtype(dtype), is_scalar=proxy.is_scalar)


#: Handlers that take Python scalars (HostScalar) as NumPy does themselves.
_WEAK_AWARE = (_where, _clip)

FUNCTION_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.where: _where,
    np.clip: _clip,
    **REDUCTION_HANDLERS,
    **SCAN_HANDLERS,
    **CREATION_HANDLERS,
    **VIEW_HANDLERS,
    **CONTRACTION_HANDLERS,
}


def apply_function(func: Callable, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy:
    """Record a NumPy function call dispatched through ``__array_function__``."""
    handler = FUNCTION_HANDLERS.get(func)
    if handler is None:
        module = (getattr(func, "__module__", None) or "numpy").replace("numpy", "np", 1)
        module = "np" if module.startswith("np._") else module   # private homes of np.sort
        raise _unsupported(f"{module}.{func.__name__} is not supported")
    if handler not in _WEAK_AWARE and func not in TAKE_PYTHON_INTS:
        args = tuple(_host_free(a) for a in args)
        kwargs = {k: _host_free(v) for k, v in kwargs.items()}
    return handler(*args, **kwargs)
