"""What the runtime runs on: the array types compiled as plain arrays, how a CuPy array is
told apart without importing CuPy, and the typed key of one call argument (a compiled
version's signature is a tuple of them: contract 3, never the sizes)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class ArrayKey(NamedTuple):
    """A NumPy (``kind`` "a") or CuPy ("g") array argument: dtype character, rank, which
    axes have size 1, C-contiguous, and C-ordered strided (a slice of a C-contiguous array:
    ``signature.c_ordered_strided``)."""

    kind: str
    dtype: str
    ndim: int
    ones: tuple[bool, ...]
    contiguous: bool
    c_strided: bool


class ScalarKey(NamedTuple):
    """A Python scalar (``kind`` "py", ``dtype`` the type name "float"/"int"/"bool") or a
    NumPy scalar ("np", its dtype character)."""

    kind: str
    dtype: str


ArgKey = ArrayKey | ScalarKey

Signature = tuple[ArgKey, ...]
"""Per argument its :data:`ArgKey`. Keys compare and hash as the plain tuples they are
(the disk cache keys on ``repr(tuple(map(tuple, signature)))``)."""

#: the argument kinds: a host array, a GPU array, a Python scalar, a NumPy scalar
HOST_ARRAY, GPU_ARRAY, PY_SCALAR, NP_SCALAR = "a", "g", "py", "np"

#: Array types compiled as plain arrays. Exactly ``np.ndarray``, not its subclasses: a
#: subclass may override operators, ``__array_ufunc__`` or ``__array_function__`` (np.matrix's
#: ``*`` is a matrix product, masked arrays carry a mask) and the compiled kernels would
#: silently compute the plain-array answer; such arguments run as plain Python. Subclasses
#: known to behave exactly like ndarray join with :func:`register_array_type`.
ARRAY_TYPES: set[type] = {np.ndarray}


def register_array_type(kind: type) -> type:
    """Declare the ndarray subclass ``kind`` safe to compile as a plain array; return it."""
    ARRAY_TYPES.add(kind)
    return kind


def is_cupy_array(value: Any) -> bool:
    """Return True for a CuPy array, without importing CuPy."""
    return type(value).__module__.startswith("cupy") and hasattr(value, "__cuda_array_interface__")
