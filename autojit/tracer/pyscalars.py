"""Python numbers computed from traced values: a Python float or int that a branch on array
data or a loop leaves (``hits = 0.0; if u[i] < 0.5: hits += 1.0``, a ``while`` loop's
counter ``sweeps += 1``), issue 15.

Such a value is a Proxy of a 0-d float64/int64 graph value with ``weak`` its Python type,
``is_scalar`` and ``param == -1`` (``is_python``): NEP 50 weak where NumPy meets it, as a
Python number is, and Python's own arithmetic under Python's operators, kept only where
float64/int64 arithmetic gives Python's answer bit for bit:

- ``+ - *`` of Python floats (and ints): IEEE double, as Python computes (no exception:
  an overflow is inf in both); ``/`` by a Python constant other than zero or by a Python
  scalar of the call guarded on being nonzero (Python raises ZeroDivisionError);
- ``+ -`` of a Python int and the constant 1 (a counter: int64 cannot overflow where
  Python's int would not, before 2**63 iterations); ``-``, ``+``, ``abs()``;
- comparisons: a traced bool that only a condition may read (``python_bools``: Python's
  ``True + 1`` is an int, a returned comparison a Python bool).

Anything else of such a value under a Python operator raises TraceError: the function
runs as Python. Returned, it is the Python number (``Graph.scalar_outputs`` 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.errors import TraceError
from autojit.ir.types import TensorType
from autojit.tracer.host import HostScalar
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location

_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply})
_COMPARE = frozenset({np.less, np.less_equal, np.greater, np.greater_equal, np.equal,
                      np.not_equal})
_DTYPES = {float: np.dtype(np.float64), int: np.dtype(np.int64)}


def is_python(value: Any) -> bool:
    """A Python number computed from traced values (see the module docstring)."""
    return (isinstance(value, Proxy) and value.weak in (int, float) and value.is_scalar
            and value.param < 0 and value.ndim == 0)


def is_python_bool(value: Any) -> bool:
    """A comparison of such numbers: a Python bool only a condition may read."""
    if not isinstance(value, Proxy):
        return False
    state = current_trace()
    return value.node in getattr(state, "python_bools", ())


def python_type(value: Any) -> type | None:
    """The Python number type of an operand Python arithmetic takes, else None."""
    if is_python(value):
        return value.weak
    if type(value) is HostScalar and value.python_type in (int, float):
        return value.python_type
    if type(value) in (int, float):
        return type(value)
    return None


def constant(value: int | float) -> Proxy:
    """A Python number of the trace as such a value (to be selected or carried)."""
    state = current_trace()
    kind = type(value)
    node = state.add_const(value, _DTYPES[kind])
    return Proxy(node, TensorType(_DTYPES[kind], ()), kind, True)


def _made(result: Any, kind: type) -> Proxy:
    return Proxy(result.node, TensorType(_DTYPES[kind], ()), kind, True)


def _refuse(what: str) -> TraceError:
    return TraceError(f"{what} of a Python number computed from array values (Python's "
                      "answer may differ from NumPy's)", user_location(4))


def _nonzero(divisor: Any) -> bool:
    """Whether ``divisor`` is known nonzero: a constant, or a Python scalar of the call
    (guarded: a call where it is zero decides otherwise and traces again)."""
    if type(divisor) is HostScalar:
        return bool(divisor != 0)   # a decision on the call's value
    return type(divisor) in (int, float) and divisor != 0 and abs(divisor) <= 2 ** 53


def binary(ufunc: np.ufunc, a: Any, b: Any) -> Any:
    """``a op b`` under a Python operator where ``a`` or ``b`` is such a value."""
    if is_python_bool(a) or is_python_bool(b):
        raise _refuse("arithmetic on a comparison")
    ta, tb = python_type(a), python_type(b)
    if ta is None or tb is None:   # with a NumPy value: NumPy's rules, the number weak
        return ufunc(a, b)
    kind = float if float in (ta, tb) else int
    # computed in float64/int64 (NumPy resolves two weak Python ints to object)
    sa, sb = (v.strong() if is_python(v) else v for v in (a, b))
    if ufunc in _COMPARE:
        result = ufunc(sa, sb)
        current_trace().python_bools.add(result.node)
        return result
    if ufunc in _ARITHMETIC and kind is float:
        return _made(ufunc(sa, sb), float)
    if ufunc in (np.add, np.subtract) and kind is int:
        other = b if is_python(a) else a
        if type(other) is int and abs(other) <= 1 and not (is_python(a) and is_python(b)):
            return _made(ufunc(sa, sb), int)
        raise _refuse("int arithmetic other than a counter's")
    if ufunc is np.true_divide and is_python(a) and a.weak is float and not is_python(b) \
            and _nonzero(b):
        return _made(ufunc(sa, sb), float)
    raise _refuse(f"{ufunc.__name__}")


def unary(ufunc: np.ufunc, a: Proxy) -> Any:
    """``-a``, ``+a``, ``abs(a)`` of such a value (Python's answers)."""
    if is_python_bool(a):
        raise _refuse("arithmetic on a comparison")
    if ufunc in (np.negative, np.positive, np.absolute):
        return _made(ufunc(a.strong()), a.weak)
    raise _refuse(ufunc.__name__)
