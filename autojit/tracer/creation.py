"""Array creation inside a traced function: zeros, ones, full, empty and their ``_like``.

The new array's sizes come from a traced array (``np.zeros_like(x)``: symbolic, no
recompile) or from Python ints (``np.zeros(x.shape)`` reads the sizes: the trace is
specialised and guarded on them). ``empty`` is filled with zeros: any content is allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import TensorType, is_supported
from autojit.tracer.host import HostScalar, host_step
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location


def _filled(shape: tuple, value: Any, dtype: Any, like: Proxy | None = None) -> Proxy:
    """A new array of ``shape`` filled with ``value``; ``like``: the prototype of a
    ``_like`` creation, whose axis order NumPy's result takes (order 'K': an F-ordered
    prototype makes an F-ordered array, which a reduction then walks in that order)."""
    dtype = np.dtype(dtype)
    if not is_supported(dtype):
        raise UnsupportedError(f"creating a {dtype} array is not supported", user_location(3))
    cell = np.ndarray((), dtype)   # as np.full converts: copyto(casting="unsafe"), which
    try:                         # refuses a Python int out of the dtype's range
        np.copyto(cell, value, casting="unsafe")
    except (OverflowError, ValueError, TypeError) as exc:   # NumPy raises it: Python runs
        raise UnsupportedError(f"{type(exc).__name__}: {exc}", user_location(3)) from None
    python_value = cell.item()
    type_ = TensorType(dtype, shape)
    attrs: tuple = (("value", python_value),)
    if like is not None and like.ndim >= 2:
        attrs += (("like", like.node),)
    node = current_trace().add_node(Op.FILL, (), type_, attrs, user_location(3))
    return Proxy(node, type_, is_scalar=False)


def _scalar_size(size: HostScalar) -> str:
    """A size a Python int of the call gives (``np.empty((n, n))``, ``n - 2``): a symbol
    bound from its value at every call (``Graph.scalar_dims``; a negative one: NumPy
    raises, so the call runs as Python)."""
    if type(size.value) is not int:   # a float or bool size: NumPy raises TypeError/... as Python
        raise UnsupportedError(f"a Python {type(size.value).__name__} as an array size",
                               user_location(5))
    if size.value < 0:
        raise BroadcastError("negative dimensions are not allowed", user_location(5))
    state = current_trace()
    if size.symbol is not None:   # an array's size (x.shape[0]), or one np.zeros(n) gave
        return state.find(size.symbol)
    for symbol, ref in state.scalar_dims.items():   # the same value: the same symbol
        if ref == size.ref:
            return symbol
    symbol = state.new_symbol(size.value)
    state.scalar_dims[symbol] = size.ref
    return symbol


def _concrete_shape(shape: Any) -> tuple:
    sizes = shape if isinstance(shape, tuple | list) else (shape,)
    if any(type(s) is HostScalar for s in sizes):
        return tuple(_scalar_size(s) if type(s) is HostScalar
                     else _concrete_shape((s,))[0] for s in sizes)
    if not all(isinstance(s, int | np.integer) and s >= 0 for s in sizes):
        raise TraceError(f"array sizes must be non-negative integers, not {shape!r}",
                         user_location(4))
    state = current_trace()
    dims: list = []
    for size in sizes:
        if size == 1:
            dims.append(1)
            continue
        symbol = state.new_symbol(int(size))   # a size fixed by the code: a guarded symbol
        state.guards[symbol] = int(size)
        dims.append(symbol)
    return tuple(dims)


def _check(order: Any = "C", **unsupported: Any) -> None:
    if order not in ("C", "K", "A") or any(v is not None for v in unsupported.values()):
        raise UnsupportedError("only C-ordered creation without like=/device= is supported",
                               user_location(4))


def _new(value: Any) -> Callable[..., Proxy]:
    def handler(shape: Any, dtype: Any = float, order: Any = "C", *, like: Any = None,
                device: Any = None) -> Proxy:
        _check(order, like=like, device=device)
        return _filled(_concrete_shape(shape), value, dtype if dtype is not None else float)
    return handler


def full(shape: Any, fill_value: Any, dtype: Any = None, order: Any = "C", **kwargs: Any
         ) -> Proxy:
    """np.full: the dtype defaults to the fill value's NumPy type."""
    _check(order, **kwargs)
    if type(fill_value) is HostScalar:   # a Python scalar of the call: read per call
        return _scalar_full(_concrete_shape(shape), fill_value, dtype)
    dtype = dtype if dtype is not None else np.asarray(fill_value).dtype
    return _filled(_concrete_shape(shape), fill_value, dtype)


def _scalar_full(shape: tuple, value: HostScalar, dtype: Any) -> Proxy:
    """``np.full(shape, v)`` with ``v`` a Python scalar of the call, in its own dtype
    (bool, int64, float64): ones times the value (exact: 1 * v is v, its zero sign and NaN
    kept), the value converted per call as NumPy converts it (an int out of int64 raises)."""
    from autojit.tracer.host import python_scalar_dtype
    own = python_scalar_dtype(value.python_type)
    if dtype is not None and np.dtype(dtype) != own:
        raise UnsupportedError("np.full of a Python scalar of the call in another dtype",
                               user_location(4))
    state = current_trace()
    node = state.host_input(value.ref, own, value.python_type, ufunc_operand=False)
    return np.multiply(_filled(shape, 1, own), Proxy(node, TensorType(own, ()), is_scalar=True))


def _like(value: Any) -> Callable[..., Proxy]:
    def handler(prototype: Any, dtype: Any = None, order: Any = "K", subok: bool = True,
                shape: Any = None, *, device: Any = None) -> Proxy:
        _check(order, shape=shape, device=device)
        return _filled(prototype.type.shape, value, dtype or prototype.dtype, prototype)
    return handler


def full_like(prototype: Any, fill_value: Any, dtype: Any = None, order: Any = "K",
              subok: bool = True, shape: Any = None, *, device: Any = None) -> Proxy:
    _check(order, shape=shape, device=device)
    return _filled(prototype.type.shape, fill_value, dtype or prototype.dtype, prototype)


_NUMPY_ARANGE = np.arange   # NumPy's own, captured before any trace patches np.arange
_NUMPY_LINSPACE = np.linspace


def _positions(shape: tuple, axis: int) -> Proxy:
    """An int64 array of ``shape`` holding each element's position along ``axis``."""
    type_ = TensorType(np.dtype(np.int64), shape)
    node = current_trace().add_node(Op.INDEX, (), type_, (("axis", axis),), user_location(3))
    return Proxy(node, type_, is_scalar=False)


def _python_number(value: Any) -> Any:
    if isinstance(value, Proxy):
        raise UnsupportedError("arange/linspace/eye with traced bounds are not supported",
                               user_location(4))
    return value


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           like: Any = None, device: Any = None) -> Proxy:
    """NumPy's arange: ``out[i] = start + i * delta`` with ``delta = out[1] - out[0]``."""
    _check(like=like, device=device)
    start, stop, step = (_python_number(v) for v in (start, stop, step))
    if any(type(v) is HostScalar for v in (start, stop, step)):
        return _scalar_arange(start, stop, step, dtype)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    sample = _NUMPY_ARANGE(start, start + 2 * step, step, dtype=dtype)   # NumPy's dtype, delta
    if sample.dtype == np.bool_:   # NumPy refuses more than 2 booleans: ask it (cheap)
        try:
            _NUMPY_ARANGE(start, stop, step, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise TraceError(f"{type(exc).__name__}: {exc}", user_location(3)) from None
    length = len(range(0, max(0, int(np.ceil((stop - start) / step)))))
    if sample.dtype.kind == "f":
        delta = float(sample[1] - sample[0]) if sample.size > 1 else float(step)
        index = _positions(_concrete_shape((length,)), 0).astype(sample.dtype)
        return index * sample.dtype.type(delta) + sample.dtype.type(start)
    return (_positions(_concrete_shape((length,)), 0) * step + start).astype(sample.dtype)


def _scalar_arange(start: Any, stop: Any, step: Any, dtype: Any) -> Proxy:
    """``np.arange`` with Python int bounds of the call (``arange(n)``, ``arange(a, b)``):
    its length ``len(range(start, stop, step))`` is a host step, the size symbol bound from
    it at every call; the values ``start + i * step`` in int64, as NumPy computes them."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    bounds = (start, stop, step)
    if not all(type(v.value if type(v) is HostScalar else v) is int for v in bounds) \
            or (dtype is not None and np.dtype(dtype) != np.int64):
        raise UnsupportedError("np.arange of Python scalar bounds other than ints in int64",
                               user_location(4))
    if type(step) is not HostScalar and step == 0:
        raise TraceError("ZeroDivisionError: division by zero", user_location(4))
    if type(stop) is HostScalar and stop.symbol is not None and start == 0 and step == 1:
        index = _positions((_scalar_size(stop),), 0)   # arange(x.shape[0]): that size
    else:
        index = _positions((_scalar_size(host_step("range_len", *bounds)),), 0)
    values = index * step if type(step) is HostScalar or step != 1 else index
    return (values + start).astype(np.int64) if type(start) is HostScalar or start \
        else values.astype(np.int64)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Proxy:
    """NumPy's linspace, computed in NumPy's dtype for the bounds (``result_type(start,
    stop)``, inexact: Python numbers weak, so ``np.float32`` bounds compute in float32):
    ``i * step + start``, the last value exactly ``stop``; an integer ``dtype`` floors."""
    start, stop = _python_number(start), _python_number(stop)
    if retstep or axis != 0 or device is not None:
        raise UnsupportedError("linspace with retstep, axis or array bounds", user_location(3))
    if any(type(v) is HostScalar for v in (start, stop, num)):
        return _scalar_linspace(start, stop, num, endpoint, dtype)
    if np.ndim(start) or np.ndim(stop):
        raise UnsupportedError("linspace with retstep, axis or array bounds", user_location(3))
    try:   # NumPy's own dtype rule and errors, on two values (the bounds are constants)
        computed = _NUMPY_LINSPACE(start, stop, 2).dtype
        wanted = np.dtype(dtype) if dtype is not None else computed
    except (TypeError, ValueError) as exc:
        raise TraceError(f"np.linspace: {exc}", user_location(3)) from None
    if computed not in (np.float32, np.float64):
        raise UnsupportedError(f"np.linspace computed in {computed}", user_location(3))
    div = (num - 1) if endpoint else num
    delta = np.subtract(stop, start, dtype=computed)
    index = _positions(_concrete_shape((num,)), 0).astype(computed)
    if div <= 0:    # NumPy: 0 or 1 values with endpoint, step undefined: i * delta + start
        values = index * delta + start
    elif delta / div != 0:
        values = index * (delta / div) + start
    else:           # a step that underflows to 0 (denormal bounds)
        values = index / div * delta + start
    if endpoint and num > 1:
        values = np.where(_positions(_concrete_shape((num,)), 0) == num - 1,
                          computed.type(stop), values)
    if np.issubdtype(wanted, np.integer):
        values = np.floor(values)
    if wanted != computed:
        return values.astype(wanted)      # NumPy's astype(copy=False) copies: a new array
    if div > 0:   # NumPy scales ``arange(num).reshape(-1)`` in place: a view, if returned
        current_trace().numpy_views.add(values.node)
    return values


def _scalar_linspace(start: Any, stop: Any, num: Any, endpoint: bool, dtype: Any) -> Proxy:
    """``np.linspace`` with Python scalars of the call as bounds or count (float64 only):
    NumPy's steps (``div = num - 1``, ``step = delta / div``, ``i * step + start``, the
    last value ``stop``) as host steps, the branches NumPy takes on them as decisions."""
    plain = (int, float)
    if not all(type(v.value if type(v) is HostScalar else v) in plain for v in (start, stop)) \
            or type(num.value if type(num) is HostScalar else num) is not int \
            or (dtype is not None and np.dtype(dtype) != np.float64):
        raise UnsupportedError("np.linspace of Python scalars other than float64 values of "
                               "Python numbers and an int count", user_location(4))
    if type(num) is HostScalar:
        if num.value < 0:
            raise BroadcastError("Number of samples must be non-negative", user_location(4))
        shape: tuple = (_scalar_size(num),)
    else:
        shape = _concrete_shape((num,))
    div = num - 1 if endpoint else num
    first = host_step("float", start) if type(start) is HostScalar else float(start)
    last = host_step("float", stop) if type(stop) is HostScalar else float(stop)
    delta = last - first   # np.subtract in float64 of the two converted: Python's float -
    # NumPy's step: delta / div, or delta itself for 0 or 1 values (one trace for every num)
    positive = div > 0
    step = host_step("select", positive, delta / host_step("max", div, 1), delta)
    underflow = (step == 0) & (delta != 0) & positive   # a step too small for a float
    index = _positions(shape, 0).astype(np.float64)
    values = index / div * delta + first if underflow else index * step + first
    if endpoint:   # the last value is stop itself, where there are two or more
        # (compared as floats: the float64 positions are exact below 2**53, and no int
        # conversion of a Python int is guarded, which a loop body could not check)
        final = host_step("float", host_step("select", num > 1, num - 1, -1)) \
            if type(num) is HostScalar else (num - 1 if num > 1 else -1)
        values = np.where(index == final, last, values)
    if type(positive) is HostScalar:   # NumPy's is a view where div > 0: if it is returned,
        current_trace().conditional_views[values.node] = positive   # a decision on that
    elif positive:
        current_trace().numpy_views.add(values.node)
    return values


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C", *,
        device: Any = None, like: Any = None) -> Proxy:
    """NumPy's eye: ones where ``column - row == k``."""
    _check(order, device=device, like=like)
    shape = _concrete_shape((N, N if M is None else M))
    diagonal = (_positions(shape, 1) - _positions(shape, 0)) == k
    return np.where(diagonal, 1, 0).astype(dtype)


def copied(a: Proxy, is_scalar: bool, why: str = "copy") -> Proxy:
    """A new array holding ``a``'s values: a node of its own (never merged with an equal
    copy: either may be written into as a scratch array)."""
    state = current_trace()
    node = state.add_node(Op.CAST, (a.node,), a.type, ((why, len(state.nodes)),),
                          user_location(4))
    return Proxy(node, a.type, is_scalar=is_scalar)


def copy(a: Any, order: str = "K", subok: bool = False) -> Proxy:
    """NumPy's ``np.copy``: a new array (of a NumPy scalar too: a 0-d array)."""
    if order not in ("C", "K", "A") or not isinstance(a, Proxy):
        raise UnsupportedError("np.copy of this value or order is not supported",
                               user_location(3))
    return copied(a, False)


CREATION_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(0),
    np.full_like: full_like, np.copy: copy,
}
#: called without a traced argument, these never reach __array_function__: the tracer
#: patches them while a trace runs (see ``trace.py``).
PLAIN_CREATION: dict[str, Callable[..., Proxy]] = {
    "zeros": _new(0), "ones": _new(1), "empty": _new(0), "full": full,
    "arange": arange, "linspace": linspace, "eye": eye,
}


class _Patches:
    """While any trace runs, ``np.zeros`` & co. dispatch to the tracer *in the tracing
    context only*; other threads and code outside traces get NumPy's functions untouched."""

    def __init__(self) -> None:
        import threading
        self.lock, self.depth, self.originals = threading.Lock(), 0, {}

    def _wrapper(self, name: str) -> Callable[..., Any]:
        original, handler = getattr(np, name), PLAIN_CREATION[name]

        def creation(*args: Any, **kwargs: Any) -> Any:
            from autojit.tracer.state import CURRENT_TRACE
            if CURRENT_TRACE.get() is None:
                return original(*args, **kwargs)
            return handler(*args, **kwargs)
        creation.__wrapped__ = original
        return creation

    def __enter__(self) -> None:
        with self.lock:
            if self.depth == 0:
                self.originals = {name: getattr(np, name) for name in PLAIN_CREATION}
                for name in PLAIN_CREATION:
                    setattr(np, name, self._wrapper(name))
            self.depth += 1

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                for name, original in self.originals.items():
                    setattr(np, name, original)


creation_patches = _Patches()
