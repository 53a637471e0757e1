"""View steps (``("getitem", key)``, ``("transpose", axes)``, ``("reshape", shape)``),
applied with the array library itself so indexing follows NumPy's rules exactly."""

from __future__ import annotations

from typing import Any


def apply_view(array: Any, step: tuple[str, Any]) -> Any:
    """Return ``array`` seen through one view step (NumPy or CuPy arrays alike)."""
    name, argument = step
    if name == "getitem":
        return array[argument]
    if name == "reshape":
        return array.reshape(argument)
    return array.transpose(argument)
