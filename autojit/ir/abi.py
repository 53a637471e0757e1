"""Packing a call's arrays into a kernel's ``(data, meta)`` arguments, for every target."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from autojit.ir.kernel import Kernel


def loop_extent(kernel: Kernel, sizes: dict[str, int]) -> list[int]:
    """Return the concrete loop sizes of ``kernel`` for the symbol values ``sizes``."""
    return [math.prod(sizes[s] for s in product) for product in kernel.loop_sizes]


def pack_meta(kernel: Kernel, sizes: dict[str, int], arrays: Sequence[Any]) -> np.ndarray:
    """Return ``meta``: loop sizes, then each runtime stride in elements.

    ``arrays`` follows ``kernel.buffers`` and may hold NumPy or CuPy arrays (anything with
    ``shape``, ``strides`` and ``itemsize``). A buffer of lower rank than the loop is aligned
    to the innermost loop dimensions, as NumPy broadcasting aligns shapes.
    """
    meta = loop_extent(kernel, sizes)
    for b, dim in kernel.runtime_strides():
        array = arrays[b]
        axis = kernel.array_axis(b, dim, array.ndim)
        meta.append(array.strides[axis] // array.itemsize if axis is not None else 0)
    return np.asarray(meta, dtype=np.int64)
