"""Scalar dtypes and tensor types with symbolic sizes.

A size is either the literal ``1`` (a broadcast dimension: an argument's, part of the
signature, or a view's size the trace specialised on being 1, checked at each call) or a
symbol such as ``"n0"`` whose value arrives at run time. Sizes never enter a compile key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Dim = int | str
"""A dimension: the literal 1 (broadcastable) or a symbol name bound at call time."""

#: dtypes autojit compiles; anything else falls back to plain Python.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    )
)

_SHORT_NAMES = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64",
}


def is_supported(dtype: np.dtype) -> bool:
    """Return True when kernels can be generated for values of ``dtype``."""
    return np.dtype(dtype) in SUPPORTED_DTYPES


def short_name(dtype: np.dtype) -> str:
    """Return the printer's name of a dtype: ``f64``, ``i32``, ``bool``."""
    return _SHORT_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)


def kind_of(dtype: np.dtype) -> str:
    """Return the dtype family used by renderer tables: 'b', 'i', 'u' or 'f'."""
    return np.dtype(dtype).kind


@dataclass(frozen=True)
class TensorType:
    """An array value's type: dtype plus a shape of literal-1 or symbolic dimensions."""

    dtype: np.dtype
    shape: tuple[Dim, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{short_name(self.dtype)}[{dims}]"

    def with_dtype(self, dtype: np.dtype) -> TensorType:
        return TensorType(np.dtype(dtype), self.shape)


def broadcast_dims(shapes: list[tuple[Dim, ...]], broadcast: callable) -> tuple[Dim, ...]:
    """Broadcast symbolic shapes NumPy's way; ``broadcast(a, b)`` combines two symbols.

    Returns the broadcast shape. Literal 1 yields to anything; two symbols go to
    ``broadcast`` (the tracer's: equal sizes are unified, because NumPy raises unless they
    are equal at run time, and a derived size that is 1 at trace time is specialised on 1).
    """
    rank = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for axis in range(rank):
        dim: Dim = 1
        for shape in shapes:
            offset = axis - (rank - len(shape))
            if offset < 0:
                continue
            other = shape[offset]
            if other == 1:
                continue
            if dim == 1:
                dim = other
            elif dim != other:
                dim = broadcast(dim, other)
        result.append(dim)
    return tuple(result)
