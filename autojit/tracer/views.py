"""Views of arguments: slicing, integer indexing, ``None``, ``...``, ``.T``, ``transpose``,
``swapaxes``, ``moveaxis``, ``reshape``, ``ravel``, ``squeeze``, ``expand_dims``.

A view is recorded as a VIEW node holding one NumPy step (``("getitem", key)``,
``("transpose", axes)``, ...). At run time the same step is applied with NumPy to the real
argument, so the kernel reads the argument's own memory through the view's strides: no
copy, and NumPy's exact indexing rules. Each dimension of a view gets a size symbol read
from the view itself at run time (``x[1:-1]`` needs no recompile when ``x`` grows), even
when it is 1 at trace time: only where NumPy broadcasting (or squeeze) treats such a size
as 1 is the trace specialised on it, and a call where it is not 1 retraces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import Dim, TensorType
from autojit.ir.views import ScalarRef, apply_view, resolve_step, view_shape
from autojit.tracer.host import HostScalar
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location, view_key


def _view_dims(state: Any, dims: tuple[Dim, ...], step: tuple[str, Any],
               sizes: tuple[int, ...]) -> tuple[Dim, ...]:
    """Return the view's symbolic shape (``sizes``: its sizes at trace time).

    A size the view keeps (a full slice, a transposed axis) stays the same symbol; a size
    1 for every call (``None``, ``reshape(1, -1)``, a slice of a literal 1) is the literal
    1; any other size (``x[1:]``, ``reshape(-1)``) gets a symbol of its own, read from the
    view at run time, even when it is 1 now: only NumPy broadcasting may treat it as 1."""
    name, argument = step
    dims = tuple(state.find(d) for d in dims)
    if name == "transpose":
        return tuple(dims[axis] for axis in argument)
    if name == "reshape":
        return tuple(1 if wanted == 1 else state.new_symbol(size)
                     for wanted, size in zip(argument, sizes))
    if name == "ravel":   # one axis of all the elements: 1 for every call only if every size is
        return (1 if all(d == 1 for d in dims) else state.new_symbol(sizes[0]),)
    consumed = sum(1 for p in argument if p is not None and p is not Ellipsis
                   and p.__class__ is not bool)
    parts: list[Any] = []
    for part in argument:
        parts += [slice(None)] * (len(dims) - consumed) if part is Ellipsis else [part]
    if not any(part is Ellipsis for part in argument):
        parts += [slice(None)] * (len(dims) - consumed)
    result: list[Dim] = []
    axis = 0
    for part in parts:
        if part is None or part is True or part is False:   # a new axis (bool: a mask)
            result.append(1 if sizes[len(result)] == 1 else state.new_symbol(0))
            continue
        dim, axis = dims[axis], axis + 1
        if isinstance(part, int) or part.__class__ is ScalarRef:
            continue
        size = sizes[len(result)]
        forward = part.step in (None, 1) and part.start in (None, 0)
        if part.stop is None and (forward or part.step == -1 and part.start is None):
            result.append(dim)       # every element (reversed or not): the same size
        elif dim == 1 and size == 1:    # a slice of a literal 1 is the same for every call
            result.append(1)
        else:
            result.append(state.new_symbol(size))
    return tuple(result)


def record_view(proxy: Proxy, step: tuple[str, Any], scalar: bool = False,
                fresh: bool = False) -> Proxy:
    """Record ``step`` applied to ``proxy`` (an argument, or a computed value, which the
    plan then stores so the view can read it). ``fresh``: the view is the tracer's own way
    to a value NumPy returns as a new array (the 1-d result of a scan over every axis); the
    plan then allocates the memory in the view's shape, so a returned one owns its data."""
    state = current_trace()
    proxy.node = state.rebase(proxy.node, user_location(3))   # after a write: its memory now
    key = view_key(proxy.node, step)
    if key in state.seen:   # the same view again (a[1:] += 1 reads and writes one region)
        found = state.nodes[state.seen[key]]
        return Proxy(found.id, found.type, is_scalar=scalar and not found.type.shape)
    try:
        sizes = view_shape(tuple(state.example_of(d) for d in proxy.type.shape),
                           resolve_step(step, state.ref_values))
    except (IndexError, ValueError, TypeError) as exc:   # NumPy's own error: fallback raises
        # it depends on sizes (the signature fixes the rest): not cached as a fallback
        raise BroadcastError(f"{type(exc).__name__}: {exc}", user_location(3)) from None
    shape = _view_dims(state, proxy.type.shape, step, sizes)
    type_ = TensorType(proxy.dtype, shape)
    attrs = (("fresh", True), ("step", step)) if fresh else (("step", step),)
    node = state.add_node(Op.VIEW, (proxy.node,), type_, attrs, user_location(3))
    state.seen[key] = node
    return Proxy(node, type_, is_scalar=scalar and not shape)


def _index_key(key: Any) -> tuple:
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if type(part) is HostScalar:   # (its __class__ answers as its value's type)
            continue
        if isinstance(part, Proxy | np.ndarray | list):
            raise UnsupportedError("boolean masks and fancy indexing are not supported yet",
                                   user_location(4))
        if not (part is None or part is Ellipsis or isinstance(part, slice | int | np.integer)):
            raise UnsupportedError(f"index {part!r} is not supported", user_location(4))
    return tuple(_plain(p) for p in parts)


def _scalar_ref(scalar: HostScalar) -> ScalarRef:
    """A Python int the call passes as an index or slice bound: read at every call (Python's
    and NumPy's rules for negatives, clamping and IndexError apply to its value then)."""
    if type(scalar.value) is not int:   # a bool is a mask index, a float raises: Python runs
        raise UnsupportedError(f"a Python {type(scalar.value).__name__} as an index",
                               user_location(6))
    current_trace().ref_values[scalar.ref] = scalar.value
    return ScalarRef(scalar.ref)


def _plain(part: Any) -> Any:
    """Return an index part with NumPy integers (also slice bounds) as Python ints and
    Python int scalars of the call as ScalarRefs."""
    if type(part) is HostScalar:
        return _scalar_ref(part)
    if isinstance(part, np.integer):
        return int(part)
    if isinstance(part, slice):
        bounds = (part.start, part.stop, part.step)
        if type(part.step) is HostScalar:
            raise UnsupportedError("a slice step from a Python scalar", user_location(5))
        if not all(v is None or type(v) is HostScalar or isinstance(v, int | np.integer)
                   for v in bounds):
            from autojit.tracer.pyscalars import is_python
            if any(is_python(v) for v in bounds):   # (a counter ``k`` a loop leaves)
                raise UnsupportedError(
                    "a slice bound that is a Python int computed from array values or by a "
                    "loop (its value is known only once the compiled code ran; a view's "
                    "size must be known before)", user_location(5))
            raise UnsupportedError(f"slice {part!r} is not supported", user_location(5))
        return slice(*(None if v is None else _scalar_ref(v) if type(v) is HostScalar
                       else int(v) for v in bounds))
    return part


def getitem(proxy: Proxy, key: Any) -> Proxy:
    """``x[1:-1, ::2]``, ``x[0]``, ``x[None]``, ``x[..., 1]``: a view of an argument.
    An element is a NumPy scalar only when integers index every axis and no ``...`` is
    given (``x[..., -1]`` of a 1-D array is a 0-d array)."""
    key = _index_key(key)
    integers = sum(isinstance(p, int) and p.__class__ is not bool or p.__class__ is ScalarRef
                   for p in key)
    scalar = integers == proxy.ndim and not any(p is Ellipsis for p in key)
    return record_view(proxy, ("getitem", key), scalar=scalar)


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
    # a Python int of the call (``n``, ``x.shape[0] // 2``) is read at every call
    sizes = tuple(_scalar_ref(s) if type(s) is HostScalar else int(s) for s in shape)
    return record_view(_copy_if_viewed(proxy), ("reshape", sizes))


def fresh_flat(proxy: Proxy) -> Proxy:
    """``proxy`` (a computed, C-contiguous value) as 1-d, where NumPy's result is a new
    array (a scan over every axis): a view the plan allocates in its own shape."""
    return record_view(proxy, ("reshape", (-1,)), fresh=True)


def ravel(proxy: Proxy, order: str = "C") -> Proxy:
    """np.ravel / ndarray.ravel: unlike ``reshape(-1)``, a view only of a C-contiguous
    array; any other is copied, even where its strides would allow a view (a (7, 1) column
    of a (7, 2) array: a later write into the array does not show in the ravel)."""
    if order != "C":
        raise UnsupportedError("ravel with order other than 'C'", user_location(3))
    if proxy.is_scalar:
        return reshape(proxy, -1)
    copied = _copy_if_viewed(proxy)
    # NumPy's ravel of a view that is not C-contiguous is a new array (judged at the trace's
    # sizes, over a computed value's C layout): ours is then the copy, made in its 1-d shape
    fresh = copied is not proxy and _computed_view_copies(proxy)
    return record_view(copied, ("ravel", None), fresh=fresh)


def _computed_view_copies(proxy: Proxy) -> bool:
    """Return True when ``proxy`` is a view of a computed (C-contiguous) value, or of an
    argument (after a write), that is not C-contiguous at the trace's sizes: where NumPy's
    ravel copies. An argument's C-contiguity is part of the signature; the strides of one
    that is not are the caller's: only the argument itself is judged then."""
    state = current_trace()
    steps, node = [], state.nodes[proxy.node]
    while node.op in (Op.VIEW, Op.WRITE):
        if node.op is Op.VIEW:
            steps.append(node.attr("step"))
        node = state.nodes[node.inputs[0]]
    if node.op is Op.ARG and node.attr("index") not in state.c_contiguous_args:
        return not steps   # the argument itself, not C-contiguous: NumPy copies
    shape = tuple(state.example_of(d) for d in node.type.shape)
    stand_in = np.lib.stride_tricks.as_strided(np.array([0], np.uint8), shape,
                                               _c_strides(shape))
    for step in reversed(steps):   # flags only: no element is read
        stand_in = apply_view(stand_in, step) if step[0] != "reshape" else None
        if stand_in is None:
            return False
    return not stand_in.flags.c_contiguous


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _copy_if_viewed(proxy: Proxy) -> Proxy:
    """Return what a reshape may view: NumPy copies a reshaped strided view, and the plan
    takes its views before any kernel runs, so a reshape of a view of a computed value (or
    of an argument after a write) would copy memory not yet filled. Such a value is first
    copied by a kernel (a cast to its own dtype) into memory the plan owns, C-contiguous."""
    state = current_trace()
    node, written = state.nodes[proxy.node], False
    root = node
    while root.op in (Op.VIEW, Op.WRITE):
        written |= root.op is Op.WRITE
        root = state.nodes[root.inputs[0]]
    if not written and (node.op is not Op.VIEW or root.op is Op.ARG):
        return proxy
    copy = state.add_node(Op.CAST, (proxy.node,), proxy.type, (), user_location(4))
    memory = state.memory_of.get(root.id)
    if memory is not None:   # NumPy's reshape may view the array: later writes show
        state.copy_of(copy, memory)
    return Proxy(copy, proxy.type, is_scalar=proxy.is_scalar)


def _check_axes(numpy_fn: Callable, a: Proxy, *args: Any) -> None:
    """Raise (the call runs as Python, which raises NumPy's own error) where ``numpy_fn``
    refuses these axis arguments for an array of ``a``'s rank: out of bounds (AxisError),
    repeated (ValueError). Asked of NumPy on a size-1 array of that rank, so its rules,
    0-d special cases included, are written nowhere else."""
    try:
        numpy_fn(np.array([0.0]).reshape((1,) * a.ndim), *args)   # np.empty is traced here
    except Exception as exc:  # noqa: BLE001 — NumPy's AxisError / ValueError
        raise TraceError(f"{type(exc).__name__}: {exc}", user_location(4)) from None


def _squeeze(a: Proxy, axis: Any = None) -> Proxy:
    """np.squeeze: which sizes are 1 decides the result, so a derived size (a view's,
    which may be 1 or not at another call) is read and guarded."""
    state = current_trace()
    if axis is None:
        axis = tuple(i for i, d in enumerate(a.type.shape)
                     if state.find(d) == 1 or state.may_be_one(d) and state.concrete(d) == 1)
    _check_axes(np.squeeze, a, axis)
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(x % max(a.ndim, 1) for x in axes)
    if not all(state.as_one(a.type.shape[x]) for x in axes):
        raise BroadcastError("cannot select an axis to squeeze out which has size not "
                             "equal to one", user_location(3))
    if not axes:   # NumPy returns the array itself when there is nothing to squeeze
        return a
    key = tuple(0 if i in axes else slice(None) for i in range(a.ndim))
    return record_view(a, ("getitem", key))


def _expand_dims(a: Proxy, axis: Any) -> Proxy:
    _check_axes(np.expand_dims, a, axis)
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = a.ndim + len(axes)
    targets = {x % ndim for x in axes}
    return record_view(a, ("getitem", tuple(None if i in targets else slice(None)
                                            for i in range(ndim))))


def _moveaxis(a: Proxy, source: Any, destination: Any) -> Proxy:
    _check_axes(np.moveaxis, a, source, destination)
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
    _check_axes(np.swapaxes, a, axis1, axis2)
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


def _flip(a: Proxy, axis: Any = None) -> Proxy:
    """np.flip: ``a[::-1]`` along ``axis`` (every axis when None), a view with negative
    strides as NumPy's; NumPy's own indexing, a 0-d array's ``a[()]`` (a scalar) included."""
    if axis is None:
        return getitem(a, (slice(None, None, -1),) * a.ndim)
    _check_axes(np.flip, a, axis)
    axes = {x % max(a.ndim, 1) for x in (axis if isinstance(axis, tuple | list) else (axis,))}
    return getitem(a, tuple(slice(None, None, -1) if i in axes else slice(None)
                            for i in range(a.ndim)))


def _flip_axis(numpy_fn: Callable, axis: int) -> Callable[[Proxy], Proxy]:
    """np.flipud (axis 0) and np.fliplr (axis 1): np.flip of one axis, NumPy's ValueError
    for an array of too few dimensions."""
    def flip(a: Proxy) -> Proxy:
        _check_axes(numpy_fn, a)
        return _flip(a, axis)
    return flip


VIEW_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.diff: _diff,
    np.flip: _flip,
    np.flipud: _flip_axis(np.flipud, 0),
    np.fliplr: _flip_axis(np.fliplr, 1),
    np.transpose: lambda a, axes=None: transpose(a, axes),
    np.reshape: lambda a, shape=None, order="C", **kw: reshape(a, shape, order=order),
    np.ravel: lambda a, order="C": ravel(a, order),
    np.squeeze: _squeeze,
    np.expand_dims: _expand_dims,
    np.moveaxis: _moveaxis,
    np.swapaxes: _swapaxes,
}

#: NumPy functions of those that take a Python int of the call as it is (a size read per
#: call: ``np.reshape(x, (n, -1))``), not as a graph value or a guarded int
TAKE_PYTHON_INTS = frozenset({np.reshape})

#: ndarray methods and properties that are views.
VIEW_METHODS: dict[str, Callable[..., Proxy]] = {
    "transpose": transpose, "reshape": reshape, "ravel": lambda a, order="C": ravel(a, order),
    "squeeze": _squeeze, "swapaxes": _swapaxes,
}
