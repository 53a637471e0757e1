"""View steps (``("getitem", key)``, ``("transpose", axes)``, ``("reshape", shape)``),
applied with the array library itself so indexing follows NumPy's rules exactly."""

from __future__ import annotations

from typing import Any


def apply_view(array: Any, step: tuple[str, Any]) -> Any:
    """Return ``array`` seen through one view step (NumPy or CuPy arrays alike)."""
    name, argument = step
    if name == "getitem":   # with an Ellipsis, integers alone still give a (0-d) view, not
        key = argument if isinstance(argument, tuple) else (argument,)   # a scalar copy
        if not any(k is Ellipsis for k in key):
            key = (*key, Ellipsis)
        return array[key]
    if name == "reshape":
        return array.reshape(argument)
    return array.transpose(argument)
