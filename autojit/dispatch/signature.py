"""Call signatures (contract 3): what a compiled version depends on, never the sizes."""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.ir.types import SUPPORTED_DTYPES, is_supported
from autojit.runtime.arrays import (
    ARRAY_TYPES,
    ArgKey,
    ArrayKey,
    ScalarKey,
    Signature,
    is_cupy_array,
)

_PYTHON_SCALARS = {float: ScalarKey("py", "float"), int: ScalarKey("py", "int"),
                   bool: ScalarKey("py", "bool")}
# A dict lookup answers the common dtypes in ~50 ns (``is_supported`` compares against each
# supported dtype: ~1.5 us); map() with bound methods avoids a generator per call.
_SUPPORTED_CHARS = {dtype: dtype.char for dtype in SUPPORTED_DTYPES}
_IS_ONE = (1).__eq__
#: every key made so far, by its plain tuple: a NamedTuple costs ~0.4 us to construct, a
#: lookup ~60 ns (a key hashes and compares as its tuple)
_KEYS: dict[tuple, ArgKey] = {}


def _interned(raw: tuple, make: type[ArrayKey] | type[ScalarKey]) -> ArgKey:
    key = _KEYS.get(raw)
    if key is None:
        key = _KEYS.setdefault(raw, make._make(raw))
    return key


#: (kind, dtype, shape, strides) -> its key (None: strides that are no multiple of the item
#: size), for arrays of the supported dtypes seen lately: everything in a key but the
#: alignment (read per call: it depends on the address) follows from these, so a warm
#: call's array costs one lookup instead of walking its shape and strides (~0.4 µs)
_BY_LAYOUT: dict[tuple, ArgKey | None] = {}
_LAYOUTS_KEPT = 4096
_UNSEEN = object()


def _array_key(kind: str, value: Any) -> ArgKey | None:
    dtype = value.dtype
    flags = value.flags
    shape, strides = value.shape, value.strides
    layout = (kind, dtype, shape, strides)
    key = _BY_LAYOUT.get(layout, _UNSEEN)
    if key is not _UNSEEN:
        return key if flags.aligned else None
    char = _SUPPORTED_CHARS.get(dtype)
    known = char is not None   # (other dtypes equal to a supported one: not kept)
    if char is None:
        if not is_supported(dtype):
            return None
        char = dtype.char
    if not flags.aligned:
        return None  # unaligned data: plain Python runs it
    if any(map(dtype.itemsize.__rmod__, strides)):
        key = None   # strides between items (views into records): plain Python runs them
    else:
        ones = tuple(map(_IS_ONE, shape))
        contiguous = bool(flags.c_contiguous)
        key = _interned((kind, char, value.ndim, ones, contiguous,
                         not contiguous and c_ordered_strided(shape, strides)), ArrayKey)
    if known:
        if len(_BY_LAYOUT) >= _LAYOUTS_KEPT:
            _BY_LAYOUT.clear()
        _BY_LAYOUT[layout] = key
    return key


def c_ordered_strided(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether NumPy's reductions walk an array of this layout in C index order: every
    axis longer than 1 has a nonzero stride, and the strides' sizes do not grow along
    those axes (any sign: NumPy's reduction iterator does not flip reversed axes). Every
    slice of a C-contiguous array is so (``x[:, ::2]``, ``x[1:, :-1]``, ``x[::-1]``,
    ``x[3, ::-2]``); broadcast (stride 0), transposed and Fortran-ordered arrays are not.
    Such an array's float sums equal those of its C-contiguous copy except sums over
    several axes (NumPy's pairwise runs follow the strides): see
    ``autojit.fuse.plan.numpy_ordered_reductions``. Verified bit for bit against
    NumPy 2.4 (tests/cpu/test_strided_reduction_order.py); fastcall.c computes the same."""
    last = -1
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        step = -stride if stride < 0 else stride
        if step == 0 or (last >= 0 and step > last):
            return False
        last = step
    return True


def argument_key(value: Any) -> ArgKey | None:
    """Return the signature entry of one argument, or None if autojit cannot compile it."""
    scalar = _PYTHON_SCALARS.get(type(value))
    if scalar is not None:
        return scalar
    kind = type(value)
    if kind in ARRAY_TYPES:
        return _array_key("a", value)
    if isinstance(value, np.generic):
        dtype = value.dtype
        if kind is dtype.type and is_supported(dtype):
            return _interned(("np", dtype.char), ScalarKey)
        return None
    if is_cupy_array(value):
        return _array_key("g", value)
    return None


def signature_of(args: tuple) -> Signature | None:
    """Return the call's signature, or None when some argument is not compilable."""
    keys = []
    for value in args:
        key = argument_key(value)
        if key is None:
            return None
        keys.append(key)
    return tuple(keys)


def describe_argument(key: ArgKey) -> str:
    """Return a short human form of a signature entry: ``f64[1d,C]``, ``f64[2d,C-strided]``
    (a C-ordered slice), ``f64[2d,strided]``, ``py float``."""
    if isinstance(key, ArrayKey):
        layout = "C" if key.contiguous else "C-strided" if key.c_strided else "strided"
        where = "" if key.kind == "a" else " cupy"
        return f"{np.dtype(key.dtype).name}[{key.ndim}d,{layout}]{where}"
    return f"{key.kind} {key.dtype if key.kind == 'py' else np.dtype(key.dtype).name}"


#: what a recompile's reason says where only which axes have size 1 changed
SIZE_ONE_CHANGE = "a size 1 (specialised for broadcasting)"


def describe_change(before: ArgKey, after: ArgKey) -> str:
    """``before -> after`` of a signature entry (``describe_argument``); where the two differ
    only in which axes have size 1, names the axes: a size 1 is specialised (NumPy
    broadcasts it), so such a call compiles again by design."""
    old, new = describe_argument(before), describe_argument(after)
    if old == new and isinstance(before, ArrayKey) and isinstance(after, ArrayKey):
        axes = [str(k) for k, (a, b) in enumerate(zip(before.ones, after.ones)) if a != b]
        if axes:
            return f"{old}, {SIZE_ONE_CHANGE} on axis {', '.join(axes)}"
    return f"{old} -> {new}"
