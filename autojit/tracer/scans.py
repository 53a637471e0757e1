"""Scans: ``np.cumsum`` / ``np.cumprod`` (and ``np.cumulative_sum`` / ``cumulative_prod``,
``nancumsum`` / ``nancumprod``, the ndarray methods, and ``accumulate`` of add, multiply,
logical_or and logical_and),
NumPy's sequential ``ufunc.accumulate`` along one axis.

A scan is one SCAN node over ``axes``: the given axis, or for ``axis=None`` every axis in C
order followed by a reshape view to 1-d (rather than a reshape of the input, which would
store a computed input first: this way producers still fuse into the scan). A 0-d input
scans as one element of shape ``(1,)``, as NumPy's does. The result dtype comes from NumPy
itself (a scan of a one-element array: small ints accumulate in int64/uint64, bool in
int64), and the input is cast to it first, as ``np.add.accumulate(..., dtype=)`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import TensorType, is_supported
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location
from autojit.tracer.views import fresh_flat

#: on bools NumPy's add is logical or and multiply logical and (``dtype=bool``)
_BOOL_KINDS = {"add": "or", "mul": "and"}


def _result_dtype(fn: Callable, x: Proxy, dtype: Any, name: str) -> np.dtype:
    """Return the dtype NumPy's ``fn`` gives on an array like ``x`` (with ``dtype=``)."""
    sample = np.array([1], dtype=x.dtype)    # np.ones is traced here
    try:
        with np.errstate(all="ignore"):
            result = np.asarray(fn(sample, dtype=dtype)).dtype
    except (TypeError, ValueError) as exc:   # NumPy's own error: the fallback raises it
        raise TraceError(f"np.{name}: {exc}", user_location()) from None
    if not is_supported(result):
        raise UnsupportedError(f"np.{name} to dtype {result} is not supported "
                               "(bool, int8-64, uint8-64, float32, float64 are)",
                               user_location())
    return result


def _axis(x: Proxy, axis: Any) -> int:
    """Return ``axis`` normalised for ``x`` (a 0-d input counts as 1-d, as in NumPy)."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TraceError(f"axis {axis!r} is not an integer", user_location())
    try:
        return int(np.lib.array_utils.normalize_axis_index(int(axis), max(x.ndim, 1)))
    except np.exceptions.AxisError as exc:   # the fallback raises NumPy's AxisError
        raise TraceError(str(exc), user_location()) from None


def scan_proxy(x: Proxy, kind: str, axes: tuple[int, ...], dtype: np.dtype) -> Proxy:
    """Record scan ``kind`` (a SCAN_KINDS name; on bools add is or, mul is and) of ``x``
    cast to ``dtype`` along ``axes``."""
    state = current_trace()
    source = x if x.dtype == dtype else x.astype(dtype)
    kind = _BOOL_KINDS.get(kind, kind) if dtype.kind == "b" else kind
    type_ = TensorType(dtype, x.type.shape)
    node = state.add_node(Op.SCAN, (source.node,), type_, (("axes", axes), ("kind", kind)),
                          user_location())
    return Proxy(node, type_)


def _one_element(x: Proxy) -> Proxy:
    """Return 0-d ``x`` as shape ``(1,)`` (an elementwise select, so nothing is stored)."""
    return np.where(np.ones((1,), dtype=bool), x, x)


def _cumulative(kind: str, numpy_fn: Callable, axis_required: bool = False
                ) -> Callable[..., Proxy]:
    name = numpy_fn.__name__

    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                include_initial: bool = False) -> Proxy:
        if not isinstance(a, Proxy):
            raise UnsupportedError(f"np.{name} of a constant is not supported",
                                   user_location())
        if out is not None or include_initial:
            keyword = "out" if out is not None else "include_initial"
            raise UnsupportedError(f"np.{name}(..., {keyword}=...) is not supported yet",
                                   user_location())
        if axis_required and axis is None and a.ndim > 1:
            raise TraceError(f"np.{name} of a {a.ndim}-d array needs an axis",
                             user_location())
        result_dtype = _result_dtype(numpy_fn, a, dtype, name)
        if a.ndim == 0:
            a = _one_element(a)
        if axis is not None:
            return scan_proxy(a, kind, (_axis(a, axis),), result_dtype)
        flat = scan_proxy(a, kind, tuple(range(a.ndim)), result_dtype)
        return fresh_flat(flat) if a.ndim > 1 else flat
    handler.__name__ = name
    return handler


def _cumulative_new(kind: str, numpy_fn: Callable) -> Callable[..., Proxy]:
    """NumPy 2's ``cumulative_sum(x, /, *, axis, dtype, out, include_initial)``."""
    handler = _cumulative(kind, numpy_fn, axis_required=True)

    def keyword_only(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                     include_initial: bool = False) -> Proxy:
        return handler(x, axis, dtype, out, include_initial)
    return keyword_only


def _nan_cumulative(kind: str, numpy_fn: Callable, fill: int) -> Callable[..., Proxy]:
    """NumPy's ``nancumsum``/``nancumprod``: NaN replaced by ``fill`` (0 or 1), then scanned."""
    scan = _cumulative(kind, numpy_fn)

    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Proxy:
        if isinstance(a, Proxy) and a.dtype.kind == "f":
            a = np.where(np.isnan(a), fill, a)
        return scan(a, axis, dtype, out)
    return handler


#: ufuncs whose ``accumulate`` is a scan (logical ones on their bool result)
ACCUMULATE_KINDS: dict[np.ufunc, str] = {
    np.add: "add", np.multiply: "mul", np.logical_or: "or", np.logical_and: "and",
}


def accumulate(ufunc: np.ufunc, a: Any, axis: Any = 0, dtype: Any = None,
               out: Any = None) -> Proxy:
    """``np.add.accumulate(a, axis=0, dtype=None)`` and the other ACCUMULATE_KINDS."""
    name = f"{ufunc.__name__}.accumulate"
    kind = ACCUMULATE_KINDS.get(ufunc)
    if kind is None or out is not None or not isinstance(a, Proxy):
        what = "out=" if kind is not None and out is not None else "this call"
        raise UnsupportedError(f"np.{name}: {what} is not supported yet", user_location())
    if a.ndim == 0 or axis is None or isinstance(axis, tuple):
        raise TraceError(f"np.{name} needs an array and one axis", user_location())
    result_dtype = _result_dtype(ufunc.accumulate, a, dtype, name)
    if kind in ("or", "and") and result_dtype.kind != "b":
        raise UnsupportedError(f"np.{name} to {result_dtype} is not supported",
                               user_location())
    return scan_proxy(a, kind, (_axis(a, axis),), result_dtype)


SCAN_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.cumsum: _cumulative("add", np.cumsum),
    np.cumprod: _cumulative("mul", np.cumprod),
    np.cumulative_sum: _cumulative_new("add", np.cumulative_sum),
    np.cumulative_prod: _cumulative_new("mul", np.cumulative_prod),
    np.nancumsum: _nan_cumulative("add", np.nancumsum, 0),
    np.nancumprod: _nan_cumulative("mul", np.nancumprod, 1),
}

#: ndarray methods that are the same scans (``x.cumsum(axis, dtype, out)``).
SCAN_METHODS: dict[str, Callable] = {"cumsum": np.cumsum, "cumprod": np.cumprod}
