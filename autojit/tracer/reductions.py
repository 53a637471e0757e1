"""Reductions: sum, prod, min/max, argmin/argmax, any/all, and mean/var/std and the nan*
family, which are written here the way NumPy's own ``_methods.py``/``nanfunctions.py``
write them, in terms of primitive reductions and elementwise ops on proxies.

Result dtypes come from NumPy (a reduction of a tiny array of the same dtype and rank).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import (
    ARG_KINDS,
    REDUCE_KINDS,
    WITHOUT_IDENTITY,
    Op,
    Reduction,
    reduce_result_dtype,
)
from autojit.ir.types import TensorType
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location

_NO_VALUE = np._NoValue


def _axes(x: Proxy, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    raw = axis if isinstance(axis, tuple) else (axis,)
    try:
        axes = tuple(sorted(np._core.numeric.normalize_axis_tuple(raw, x.ndim)))
    except Exception as exc:  # NumPy's AxisError / ValueError: the fallback raises it
        raise TraceError(str(exc), user_location(4)) from None
    return axes


def _ufunc_axes(x: Proxy, axis: Any) -> tuple[int, ...]:
    """``_axes`` for the ufunc reductions (sum, prod, max, min, argmax, any, ...), which
    NumPy lets take ``axis=0`` or ``-1`` on a 0-d array: a reduction over nothing."""
    if (x.ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
            and axis in (0, -1)):
        return ()
    return _axes(x, axis)


def _check_keywords(name: str, **given: Any) -> None:
    for key, value in given.items():
        if value is not None and value is not _NO_VALUE and value is not True:
            raise UnsupportedError(f"np.{name}(..., {key}=...) is not supported yet",
                                   user_location(4))


def _probe_dtype(fn: Callable, x: Proxy, **kwargs: Any) -> np.dtype:
    """Return the dtype NumPy gives for ``fn`` on an array like ``x``."""
    sample = np.array([1], dtype=x.dtype).reshape((1,) * x.ndim)   # np.ones is traced here
    with np.errstate(all="ignore"):
        return np.asarray(fn(sample, **kwargs)).dtype


#: what np.add / np.multiply / np.maximum / np.minimum reduce with on booleans
#: (``sum(..., dtype=bool)`` is an any, the max of booleans too): the kinds bool rows have
_BOOL_REDUCE_KINDS = {"add": "or", "mul": "and", "max": "or", "min": "and"}


def reduce_proxy(x: Any, kind: str, axes: tuple[int, ...], keepdims: bool,
                 dtype: np.dtype, seeded: bool = False) -> Proxy:
    """Record a primitive reduction of ``x`` (cast to ``dtype``) over ``axes``; ``seeded``:
    the caller combines an ``initial`` value in, so an empty row is no error (its value is
    the caller's to replace)."""
    state = current_trace()
    need_elements = kind in WITHOUT_IDENTITY and not seeded
    if np.dtype(dtype).kind == "b":
        kind = _BOOL_REDUCE_KINDS.get(kind, kind)
    if not isinstance(x, Proxy):
        raise UnsupportedError("reductions of constants are not supported", user_location(3))
    source = x if x.dtype == dtype or kind in ARG_KINDS else x.astype(dtype)
    if kind in ARG_KINDS and x.dtype.kind == "b":   # the same positions as 0/1:
        source = x.astype(np.uint8)                 # a kind argmax rows take
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.type.shape)
                  if keepdims or i not in axes)
    out_dtype = reduce_result_dtype(kind, dtype)
    if need_elements:
        for i in axes:  # NumPy raises for an empty reduction without identity
            dim = state.find(x.type.shape[i])
            if isinstance(dim, str):
                state.nonempty.add(dim)
    attrs = (("axes", axes), ("keepdims", bool(keepdims)), ("kind", kind))
    if source is not x:   # NumPy casts through its iterator's buffer, 8192 elements a time
        attrs = (("buffered", True), *attrs)
    node = state.add_node(Op.REDUCE, (source.node,), TensorType(out_dtype, shape), attrs,
                          user_location(3))
    return Proxy(node, TensorType(out_dtype, shape), is_scalar=not shape)


def element_count(x: Proxy, axes: tuple[int, ...]) -> Any:
    """Return how many elements a reduction over ``axes`` sees, as a weak Python int."""
    state = current_trace()
    symbols = tuple(sorted(str(state.find(x.type.shape[i])) for i in axes
                           if state.find(x.type.shape[i]) != 1))
    if not symbols:
        return 1
    key = ("size", symbols)
    if key not in state.consts:
        state.consts[key] = state.add_node(Op.SIZE, (), TensorType(np.dtype(np.int64), ()),
                                           (("symbols", symbols),), user_location(3))
    return Proxy(state.consts[key], TensorType(np.dtype(np.int64), ()), weak=int)


def _given(value: Any) -> bool:
    return value is not _NO_VALUE and value is not None


def _seeding(name: str, initial: Any, where: Any) -> bool:
    """Whether a reduction takes the seeded path; ``initial=None`` (NumPy: no identity, so
    an empty sum raises) falls back."""
    if initial is None:
        raise UnsupportedError(f"np.{name}(..., initial=None) is not supported",
                               user_location(4))
    return _given(initial) or (_given(where) and where is not True)


def _initial_value(numpy_fn: Callable, a: Proxy, initial: Any,
                   kwargs: dict[str, Any]) -> np.generic:
    """Return ``initial`` as NumPy's reduction holds it: cast to the result dtype, the way
    NumPy casts it (``1.5`` is ``int8(1)`` for an int8 max; an out-of-range Python int
    raises). Asked of NumPy itself: the reduction of an empty row is its initial value."""
    if isinstance(initial, Proxy):
        raise UnsupportedError(f"np.{numpy_fn.__name__}(..., initial=<traced value>) is not "
                               "supported yet", user_location(4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = numpy_fn(np.array([1], dtype=a.dtype)[:0], initial=initial, **kwargs)
        except Exception as exc:  # NumPy's OverflowError / TypeError: the fallback raises it
            raise TraceError(str(exc), user_location(4)) from None
    if caught or not isinstance(value, np.generic):
        raise UnsupportedError(f"np.{numpy_fn.__name__}(..., initial={initial!r}): NumPy "
                               "warns casting it", user_location(4))
    return value


def _masked(a: Proxy, where: Any, fill: Any, name: str) -> Proxy:
    """``a`` with the elements ``where`` leaves out replaced by ``fill``, a value the
    reduction's combine leaves the accumulator unchanged by (bit for bit)."""
    if where is True:
        return a
    if not isinstance(where, (Proxy, bool, np.bool_)):
        raise UnsupportedError(f"np.{name}(..., where=<constant array>) is not supported "
                               "(a mask from the arguments is)", user_location(4))
    if isinstance(where, Proxy) and where.dtype.kind != "b":   # NumPy's TypeError (safe cast)
        raise TraceError(f"Cannot cast array data from dtype('{where.dtype}') to "
                         "dtype('bool') according to the rule 'safe'", user_location(4))
    masked = np.where(where, a, a.dtype.type(fill))
    if not isinstance(masked, Proxy) or masked.type.shape != a.type.shape:
        raise UnsupportedError(f"np.{name}(..., where=...) of a mask that broadcasts the "
                               "array to another shape is not supported", user_location(4))
    return masked


#: how the initial value ``v`` (a NumPy scalar, the row's first element in NumPy's loop)
#: combines with the row's reduction ``r``: np.maximum's rule ``(v > r || isnan(v)) ? v : r``
#: (a NaN initial wins, ties go to the row: its last zero keeps its sign), and the sums and
#: products of integers and booleans, which any order gives exactly
_SEED_COMBINE: dict[str, Callable[[Any, Proxy], Proxy]] = {
    "add": lambda v, r: r + v,
    "mul": lambda v, r: r * v,
    "max": lambda v, r: np.where(np.logical_or(r < v, np.isnan(v)), v, r),
    "min": lambda v, r: np.where(np.logical_or(r > v, np.isnan(v)), v, r),
}

#: the element a masked-out position stands for: the combine's identity for the dtype
_MASK_FILL: dict[str, Callable[[np.dtype], Any]] = {
    "add": lambda d: False if d.kind == "b" else 0,
    "mul": lambda d: True if d.kind == "b" else 1,
    "max": lambda d: REDUCE_KINDS[Reduction.MAX].start(d),
    "min": lambda d: REDUCE_KINDS[Reduction.MIN].start(d),
}


def _seeded(kind: str, numpy_fn: Callable, a: Any, axes: tuple[int, ...], keepdims: bool,
            dtype: np.dtype, initial: Any, where: Any, kwargs: dict[str, Any]) -> Proxy:
    """``numpy_fn(a, initial=..., where=...)``: NumPy starts each row's accumulator at the
    initial value and folds the (unmasked) elements in, so the result is the initial value
    combined with the row's reduction, or the initial value alone for an empty row.
    Float sums and products fall back: NumPy's order of additions with an initial depends
    on the layout (along a non-contiguous axis it is ``((v + x0) + x1) ...``)."""
    name = numpy_fn.__name__
    if not isinstance(a, Proxy):
        raise UnsupportedError("reductions of constants are not supported", user_location(3))
    if kind in ("add", "mul") and (dtype.kind not in "biu" or a.dtype.kind not in "biu"):
        raise UnsupportedError(f"np.{name}(..., initial=/where=) of {a.dtype} in {dtype}: "
                               "NumPy's order of operations depends on the layout",
                               user_location(3))
    if not _given(initial):
        if kind in ("max", "min"):   # NumPy's own error: where= needs an initial here
            raise TraceError(f"reduction operation '{numpy_fn.__name__}' does not have an "
                             "identity, so to use a where mask one has to specify 'initial'",
                             user_location(3))
        initial = _MASK_FILL[kind](np.dtype(dtype))
    value = _initial_value(numpy_fn, a, initial, kwargs)
    if _given(where):
        a = _masked(a, where, _MASK_FILL[kind](a.dtype), name)
    # a whole-array reduction combines as a 1-element array, not as NumPy scalars (whose
    # integer arithmetic warns on overflow, where the reduction wraps silently)
    whole = a.ndim == 0 or (len(axes) == a.ndim and not keepdims)
    row = reduce_proxy(a, kind, axes, keepdims or whole, dtype, seeded=True)
    result = _SEED_COMBINE[kind](value, row)
    state = current_trace()
    static_empty = any(state.find(a.type.shape[i]) == 0 for i in axes)
    count = 0 if static_empty else element_count(a, axes)
    if isinstance(count, Proxy):
        result = np.where(count.strong() == np.int64(0), value, result)
    elif count == 0:
        result = np.where(np.isnan(row) | True, value, row)
    if result.dtype != row.dtype:
        raise UnsupportedError(f"np.{name}(..., initial={initial!r}) combines to "
                               f"{result.dtype}", user_location(3))
    if not whole:
        return result
    flat = result.reshape(())
    return Proxy(flat.node, flat.type, is_scalar=True)


def _simple(kind: str, numpy_fn: Callable) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = _NO_VALUE, where: Any = _NO_VALUE
                ) -> Proxy:
        _check_keywords(numpy_fn.__name__, out=out)
        axes = _ufunc_axes(a, axis)
        kwargs = {"dtype": dtype} if dtype is not None else {}
        acc = _probe_dtype(numpy_fn, a, **kwargs)
        if _seeding(numpy_fn.__name__, initial, where):
            return _seeded(kind, numpy_fn, a, axes, keepdims, acc, initial, where, kwargs)
        return reduce_proxy(a, kind, axes, keepdims, acc)
    return handler


def _extremum(kind: str, numpy_fn: Callable) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                initial: Any = _NO_VALUE, where: Any = _NO_VALUE) -> Proxy:
        if kind in ("max", "min"):
            _check_keywords(numpy_fn.__name__, out=out)
            if _seeding(numpy_fn.__name__, initial, where):
                return _seeded(kind, numpy_fn, a, _ufunc_axes(a, axis), keepdims, a.dtype,
                               initial, where, {})
        _check_keywords(numpy_fn.__name__, out=out, initial=initial, where=where)
        if kind in ("fmax", "fmin") and a.dtype.kind != "f":
            return reduce_proxy(a, kind[1:], _ufunc_axes(a, axis), keepdims, a.dtype)
        return reduce_proxy(a, kind, _ufunc_axes(a, axis), keepdims, a.dtype)
    return handler


def _arg_extremum(kind: str) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Proxy:
        _check_keywords(kind, out=out)
        if isinstance(axis, tuple):
            raise TraceError("axis must be an integer for argmax/argmin", user_location(3))
        return reduce_proxy(a, kind, _ufunc_axes(a, axis), keepdims, a.dtype)
    return handler


def _mean_dtype(a: Proxy, dtype: Any) -> np.dtype:
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype


def _divide_unsafe(total: Proxy, count: Any, dtype: np.dtype) -> Proxy:
    """NumPy's ``true_divide(total, intp count, out=total, casting='unsafe')``: the division
    runs in float64 and the result is cast back to the reduction's dtype."""
    if dtype == np.float64:
        return total / count
    return (total.astype(np.float64) / count).astype(dtype)


def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
         keepdims: bool = False, *, where: Any = _NO_VALUE) -> Proxy:
    """NumPy's ``_mean``: sum in the mean's dtype, divided by the element count."""
    _check_keywords("mean", out=out, where=where)
    axes = _axes(a, axis)
    acc = _mean_dtype(a, dtype)
    return _divide_unsafe(reduce_proxy(a, "add", axes, keepdims, acc), element_count(a, axes),
                          acc)


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = _NO_VALUE, mean: Any = _NO_VALUE,
        correction: Any = _NO_VALUE) -> Proxy:
    """NumPy's ``_var``: mean (kept dims), squared deviations, their sum / (n - ddof).
    ``_var`` converts its input with ``asanyarray`` first, so a Python float is a strong
    float64 there: ``1e-7 - float32 mean`` is float64, not float32 (NEP 50 weak)."""
    _check_keywords("var", out=out, where=where, mean=mean, correction=correction)
    if isinstance(ddof, Proxy):
        raise UnsupportedError("a traced ddof is not supported", user_location(3))
    if isinstance(a, Proxy):
        a = a.strong()
    axes = _axes(a, axis)
    acc = _mean_dtype(a, dtype)
    count = element_count(a, axes)
    centre = _divide_unsafe(reduce_proxy(a, "add", axes, True, acc), count, acc)
    deviation = a - centre
    squares = reduce_proxy(deviation * deviation, "add", axes, keepdims, acc)
    return _divide_unsafe(squares, np.maximum(count - ddof, 0), acc)


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, **kwargs: Any) -> Proxy:
    """NumPy's ``_std``: the square root of ``var``. For a variance of integers, NumPy's
    ``sqrt(ret, out=ret)`` on an array raises (a float cannot be cast back under
    same_kind), and a scalar is converted back with ``ret.dtype.type(sqrt(ret))``."""
    variance = var(a, axis, dtype, out, ddof, keepdims, **kwargs)
    if variance.dtype.kind == "f":
        return np.sqrt(variance)
    if not variance.is_scalar:
        raise TraceError(f"np.std(..., dtype={variance.dtype}): NumPy's sqrt cannot cast "
                         f"its float result to {variance.dtype} (same_kind)", user_location(2))
    return np.sqrt(variance).astype(variance.dtype)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, initial: Any = _NO_VALUE, where: Any = _NO_VALUE) -> Proxy:
    """NumPy's ``nansum``: NaN replaced by 0, then ``sum``."""
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), 0, a)
    return _simple("add", np.sum)(a, axis, dtype, out, keepdims, initial, where)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, *, where: Any = _NO_VALUE) -> Proxy:
    """NumPy's ``nanmean``: sum of non-NaN values over their count (NaN where none)."""
    if a.dtype.kind != "f":
        return mean(a, axis, dtype, out, keepdims, where=where)
    _check_keywords("nanmean", out=out, where=where)
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TraceError("If a is inexact, then dtype must be inexact", user_location(2))
    axes = _axes(a, axis)
    acc = np.dtype(dtype) if dtype is not None else a.dtype
    valid = np.logical_not(np.isnan(a))
    total = reduce_proxy(np.where(valid, a, 0), "add", axes, keepdims, acc)
    count = reduce_proxy(valid, "add", axes, keepdims, np.dtype(np.intp))
    # NumPy divides in float64 into the float output (true_divide with casting='unsafe')
    return (total.astype(np.float64) / count.astype(np.float64)).astype(acc)


def _any_all(kind: str, name: str) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *,
                where: Any = _NO_VALUE) -> Proxy:
        _check_keywords(name, out=out, where=where)
        return reduce_proxy(a.astype(bool), kind, _ufunc_axes(a, axis), keepdims,
                            np.dtype(bool))
    return handler


REDUCTION_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.sum: _simple("add", np.sum),
    np.prod: _simple("mul", np.prod),
    np.max: _extremum("max", np.max),
    np.amax: _extremum("max", np.amax),
    np.min: _extremum("min", np.min),
    np.amin: _extremum("min", np.amin),
    np.nanmax: _extremum("fmax", np.nanmax),
    np.nanmin: _extremum("fmin", np.nanmin),
    np.argmax: _arg_extremum("argmax"),
    np.argmin: _arg_extremum("argmin"),
    np.any: _any_all("or", "any"),
    np.all: _any_all("and", "all"),
    np.mean: mean,
    np.var: var,
    np.std: std,
    np.nansum: nansum,
    np.nanmean: nanmean,
}

#: ndarray methods that are the same reductions.
REDUCTION_METHODS: dict[str, Callable] = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "argmax": np.argmax,
    "argmin": np.argmin, "any": np.any, "all": np.all, "mean": np.mean, "var": np.var,
    "std": np.std,
}
