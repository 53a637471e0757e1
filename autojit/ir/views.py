"""View steps (``("getitem", key)``, ``("transpose", axes)``, ``("reshape", shape)``),
applied with the array library itself so indexing follows NumPy's rules exactly."""

from __future__ import annotations

from typing import Any


def apply_view(array: Any, step: tuple[str, Any]) -> Any:
    """Return ``array`` seen through one view step (NumPy or CuPy arrays alike).

    An index of one integer per axis (``a[0, 1]``) is taken as ``a[0, 1, ...]``: a 0-d view
    of the element, not the NumPy scalar NumPy's ``a[0, 1]`` returns, which is a copy (a
    write through it would be lost, a read of it would see the memory before the kernels
    ran). The values and shape are the same either way."""
    name, argument = step
    if name == "getitem":
        if not any(part is Ellipsis for part in argument):
            argument = (*argument, Ellipsis)
        return array[argument]
    if name == "reshape":
        return array.reshape(argument)
    return array.transpose(argument)
