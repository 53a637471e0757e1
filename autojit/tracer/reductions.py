"""Reductions: sum, prod, min/max, argmin/argmax, any/all, and mean/var/std and the nan*
family, which are written here the way NumPy's own ``_methods.py``/``nanfunctions.py``
write them, in terms of primitive reductions and elementwise ops on proxies.

Result dtypes come from NumPy (a reduction of a tiny array of the same dtype and rank).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import ARG_KINDS, WITHOUT_IDENTITY, Op, reduce_result_dtype
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
                 dtype: np.dtype) -> Proxy:
    """Record a primitive reduction of ``x`` (cast to ``dtype``) over ``axes``."""
    state = current_trace()
    need_elements = kind in WITHOUT_IDENTITY
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


def _simple(kind: str, numpy_fn: Callable) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = _NO_VALUE, where: Any = _NO_VALUE
                ) -> Proxy:
        _check_keywords(numpy_fn.__name__, out=out, initial=initial, where=where)
        axes = _ufunc_axes(a, axis)
        kwargs = {"dtype": dtype} if dtype is not None else {}
        return reduce_proxy(a, kind, axes, keepdims, _probe_dtype(numpy_fn, a, **kwargs))
    return handler


def _extremum(kind: str, numpy_fn: Callable) -> Callable[..., Proxy]:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                initial: Any = _NO_VALUE, where: Any = _NO_VALUE) -> Proxy:
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
