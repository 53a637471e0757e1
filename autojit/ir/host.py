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

import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: ``math`` functions of Python scalars a step may apply (the tracer patches them in).
MATH_FUNCTIONS = tuple(name for name in (
    "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot",
    "fabs", "copysign", "pow", "isnan", "isinf", "isfinite", "erf", "erfc", "gamma",
    "lgamma", "degrees", "radians", "cbrt", "exp2") if hasattr(math, name))

#: What a step may apply, by name: Python's operators (``operator`` functions), the
#: rounding builtins (``round``, ``math.floor``/``ceil``/``trunc`` through the scalar's
#: own methods) and ``math`` functions.
HOST_OPS: dict[str, Callable[..., Any]] = {
    **{name: getattr(operator, name) for name in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
        "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert")},
    "round": round, "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
    # conversions and sizes: truth (bool()), int(), float(), max(), len(range(...))
    "truth": operator.truth, "int": int, "float": float, "max": max,
    "select": lambda condition, a, b: a if condition else b,
    "range_len": lambda *bounds: len(range(*bounds)),
    "dim": lambda array, axis: array.shape[axis],   # an array argument's size
    **{f"math.{name}": getattr(math, name) for name in MATH_FUNCTIONS},
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


#: Python's spelling of each operator, for the compiled replay.
_SYNTAX: dict[str, str] = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "truediv": "{} / {}",
    "floordiv": "{} // {}", "mod": "{} % {}", "pow": "{} ** {}", "and_": "{} & {}",
    "or_": "{} | {}", "xor": "{} ^ {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "le": "{} <= {}", "gt": "{} > {}",
    "ge": "{} >= {}", "neg": "-{}", "pos": "+{}", "abs": "abs({})", "invert": "~{}",
}


@functools.lru_cache(maxsize=256)
def compile_prologue(prologue: tuple[HostStep, ...]) -> Callable[[Sequence[Any]], tuple | None]:
    """Return the prologue as one Python function of the call's arguments (a warm call
    replays it in well under a microsecond): the same operators on the same values."""
    namespace: dict[str, Any] = {}
    lines = ["def replay(args):", "    values = list(args)"]
    for j, step in enumerate(prologue):
        operands = []
        for kind, v in step.operands:
            if kind == "ref":
                operands.append(f"values[{v}]")
            else:   # constants by name: NaN, inf and -0.0 have no exact literal
                namespace[f"c{len(namespace)}"] = v
                operands.append(f"c{len(namespace) - 1}")
        namespace[f"t{j}"] = HOST_TYPES[step.result_type]
        syntax = _SYNTAX.get(step.op)
        if syntax is None:   # a function: called by name
            namespace[f"f{j}"] = HOST_OPS[step.op]
            syntax = f"f{j}(" + ", ".join("{}" for _ in operands) + ")"
        lines += [f"    v = {syntax.format(*operands)}",
                  f"    if v.__class__ is not t{j}:", "        return None",
                  "    values.append(v)"]
    lines.append("    return values")
    exec("\n".join(lines), namespace)   # noqa: S102 (generated from the table above)
    return namespace["replay"]


def run_prologue(prologue: Sequence[HostStep], args: Sequence[Any]) -> list[Any] | None:
    """Return ``args`` followed by each step's value; None when a value's type differs from
    the traced one. Raises what Python raises (ZeroDivisionError, OverflowError, ...)."""
    return compile_prologue(tuple(prologue))(args)


#: dtype name -> (min, max) of an integer dtype (``np.iinfo`` builds an object per call)
_INT_RANGES: dict[str, tuple[int, int]] = {}


def _int_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    found = _INT_RANGES[dtype] = (int(info.min), int(info.max))
    return found


def conversion_fails(value: Any, dtype: str) -> bool:
    """Return True when NumPy refuses to convert the Python scalar ``value`` to ``dtype``
    (an int out of range: OverflowError; NaN or inf into an integer dtype), as a ufunc
    operand or an assigned value: the call must then run as plain Python, which raises."""
    if type(value) is int and dtype[0] in "iu":   # the common case, without NumPy
        low, high = _INT_RANGES.get(dtype) or _int_range(dtype)
        return not low <= value <= high
    try:
        np.array(value, dtype=dtype)
    except (OverflowError, ValueError):
        return True
    return False
