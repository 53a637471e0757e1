"""Views of arguments: slicing, integer indexing, ``None``, ``...``, ``.T``, ``transpose``,
``swapaxes``, ``moveaxis``, ``reshape``, ``ravel``, ``squeeze``, ``expand_dims``.

A view is recorded as a VIEW node holding one NumPy step (``("getitem", key)``,
``("transpose", axes)``, ...). At run time the same step is applied with NumPy to the real
argument, so the kernel reads the argument's own memory through the view's strides: no
copy, and NumPy's exact indexing rules. Each dimension of a view gets a size symbol read
from the view itself at run time (``x[1:-1]`` needs no recompile when ``x`` grows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import TensorType
from autojit.ir.views import apply_view
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location


def _example(state: Any, proxy: Proxy) -> np.ndarray:
    """A zero-strided stand-in with the proxy's trace-time shape (no memory)."""
    shape = tuple(state.example_sizes[state.find(d)] if isinstance(d, str) else d
                  for d in proxy.type.shape)
    one = np.array([0], dtype=proxy.dtype)   # (np.zeros is traced inside a trace)
    return np.lib.stride_tricks.as_strided(one, shape, (0,) * len(shape))


def record_view(proxy: Proxy, step: tuple[str, Any], scalar: bool = False) -> Proxy:
    """Record ``step`` applied to ``proxy`` (an argument, or a computed value, which the
    plan then stores so the view can read it)."""
    state = current_trace()
    try:
        example = apply_view(_example(state, proxy), step)
    except (IndexError, ValueError, TypeError) as exc:   # NumPy's own error: fallback raises
        raise TraceError(f"{type(exc).__name__}: {exc}", user_location(3)) from None
    shape = tuple(1 if size == 1 else state.new_symbol(size) for size in example.shape)
    type_ = TensorType(proxy.dtype, shape)
    node = state.add_node(Op.VIEW, (proxy.node,), type_, (("step", step),), user_location(3))
    return Proxy(node, type_, is_scalar=scalar and not shape)


def _index_key(key: Any) -> tuple:
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if isinstance(part, Proxy | np.ndarray | list):
            raise UnsupportedError("boolean masks and fancy indexing are not supported yet",
                                   user_location(4))
        if not (part is None or part is Ellipsis or isinstance(part, slice | int | np.integer)):
            raise UnsupportedError(f"index {part!r} is not supported", user_location(4))
    return tuple(int(p) if isinstance(p, np.integer) else p for p in parts)


def getitem(proxy: Proxy, key: Any) -> Proxy:
    """``x[1:-1, ::2]``, ``x[0]``, ``x[None]``, ``x[..., 1]``: a view of an argument."""
    key = _index_key(key)
    every_axis_an_int = sum(isinstance(p, int) for p in key) == proxy.ndim
    return record_view(proxy, ("getitem", key), scalar=every_axis_an_int)


def transpose(proxy: Proxy, *axes: Any) -> Proxy:
    if proxy.is_scalar:   # a NumPy scalar's .T / np.transpose is the scalar itself
        return proxy
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
        axes = axes[0] or ()
    order = tuple(axes) if axes else tuple(reversed(range(proxy.ndim)))
    return record_view(proxy, ("transpose", order))


def reshape(proxy: Proxy, *shape: Any, order: str = "C", **kwargs: Any) -> Proxy:
    if order != "C" or kwargs:
        raise UnsupportedError("reshape with order other than 'C'", user_location(3))
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    return record_view(proxy, ("reshape", tuple(int(s) for s in shape)))


def _squeeze(a: Proxy, axis: Any = None) -> Proxy:
    if axis is None:
        axis = tuple(i for i, d in enumerate(a.type.shape) if d == 1)
    axes = axis if isinstance(axis, tuple) else (axis,)
    key = tuple(0 if i in [x % a.ndim for x in axes] else slice(None) for i in range(a.ndim))
    return record_view(a, ("getitem", key))


def _expand_dims(a: Proxy, axis: Any) -> Proxy:
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = a.ndim + len(axes)
    targets = {x % ndim for x in axes}
    return record_view(a, ("getitem", tuple(None if i in targets else slice(None)
                                            for i in range(ndim))))


def _moveaxis(a: Proxy, source: Any, destination: Any) -> Proxy:
    return record_view(a, ("transpose", _moved_order(a.ndim, source, destination)))


def _moved_order(ndim: int, source: Any, destination: Any) -> tuple[int, ...]:
    sources = [s % ndim for s in (source if isinstance(source, tuple | list) else (source,))]
    targets = [d % ndim for d in (destination if isinstance(destination, tuple | list)
                                  else (destination,))]
    order = [n for n in range(ndim) if n not in sources]
    for target, src in sorted(zip(targets, sources)):
        order.insert(target, src)
    return tuple(order)


def _swapaxes(a: Proxy, axis1: int, axis2: int) -> Proxy:
    order = list(range(a.ndim))
    order[axis1], order[axis2] = order[axis2], order[axis1]
    return record_view(a, ("transpose", tuple(order)))


def _diff(a: Proxy, n: int = 1, axis: int = -1, prepend: Any = np._NoValue,
          append: Any = np._NoValue) -> Proxy:
    """np.diff as two views of the argument: ``a[1:] - a[:-1]`` along ``axis``."""
    if n != 1 or prepend is not np._NoValue or append is not np._NoValue:
        raise UnsupportedError("np.diff with n > 1, prepend or append is not supported yet",
                               user_location(3))
    axis %= max(a.ndim, 1)
    head = tuple(slice(1, None) if i == axis else slice(None) for i in range(a.ndim))
    tail = tuple(slice(None, -1) if i == axis else slice(None) for i in range(a.ndim))
    later, earlier = getitem(a, head), getitem(a, tail)
    return np.not_equal(later, earlier) if a.dtype == np.bool_ else later - earlier


VIEW_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.diff: _diff,
    np.transpose: lambda a, axes=None: transpose(a, axes),
    np.reshape: lambda a, shape=None, order="C", **kw: reshape(a, shape, order=order),
    np.ravel: lambda a, order="C": reshape(a, -1, order=order),
    np.squeeze: _squeeze,
    np.expand_dims: _expand_dims,
    np.moveaxis: _moveaxis,
    np.swapaxes: _swapaxes,
}

#: ndarray methods and properties that are views.
VIEW_METHODS: dict[str, Callable[..., Proxy]] = {
    "transpose": transpose, "reshape": reshape, "ravel": lambda a, order="C":
    reshape(a, -1, order=order), "squeeze": _squeeze, "swapaxes": _swapaxes,
}
