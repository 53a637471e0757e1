"""The host prologue: Python-scalar arithmetic a traced function does, replayed in Python.

Arithmetic on Python scalars only (``dt * 0.5``, ``s * s``, ``3 / s``, ``~(s > 1)``) is
Python's, not NumPy's: arbitrary-precision ints, ZeroDivisionError, Python result types.
So it is not a graph value: the tracer records each such operation as a :class:`HostStep`,
and every call replays the steps on its actual arguments before any kernel runs. Step
``j``'s value becomes call argument ``len(args) + j``; kernels read it as a scalar (converted
to the dtype NumPy would use where it meets an array), and a function returning it returns
the Python object itself. Whatever the replay raises, the function itself raises: the
dispatcher then runs the original Python, which raises it at the right point.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The Python operators a step may apply (``operator`` module functions, by name).
HOST_OPS: dict[str, Callable[..., Any]] = {
    name: getattr(operator, name) for name in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
        "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert")
}

#: The Python scalar types a step may produce, by name (a pickled plan names them).
HOST_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float}


@dataclass(frozen=True)
class HostStep:
    """``result = HOST_OPS[op](*operands)``; an operand is ``("ref", call argument index)``
    or ``("const", a Python scalar)``. ``result_type`` names the type the trace saw: a call
    whose result has another type (``s ** t`` with ``t < 0`` is a float) does not match."""

    op: str
    operands: tuple[tuple[str, Any], ...]
    result_type: str


def run_prologue(prologue: Sequence[HostStep], args: Sequence[Any]) -> list[Any] | None:
    """Return ``args`` followed by each step's value; None when a value's type differs from
    the traced one. Raises what Python raises (ZeroDivisionError, OverflowError, ...)."""
    values = list(args)
    for step in prologue:
        operands = [values[v] if kind == "ref" else v for kind, v in step.operands]
        value = HOST_OPS[step.op](*operands)
        if type(value) is not HOST_TYPES[step.result_type]:
            return None
        values.append(value)
    return values


def conversion_fails(value: Any, dtype: str) -> bool:
    """Return True when NumPy refuses to convert the Python scalar ``value`` to ``dtype``
    (an int out of range: OverflowError; NaN or inf into an integer dtype), as a ufunc
    operand or an assigned value: the call must then run as plain Python, which raises."""
    if type(value) is int and dtype[0] in "iu":   # the common case, without NumPy
        info = np.iinfo(dtype)
        return not info.min <= value <= info.max
    try:
        np.array(value, dtype=dtype)
    except (OverflowError, ValueError):
        return True
    return False
