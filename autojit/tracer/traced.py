"""What every traced value (a Proxy array, a HostScalar) answers NumPy and Python with.

NumPy hands ufunc and function calls on it to the tracer; anything that needs its concrete
value (``if x:``, ``float(x)``, ``np.asarray(x)``, an index) raises a TraceError naming the
user's line, and the dispatcher runs the function as plain Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.errors import TraceError
from autojit.tracer.state import user_location


class Traced:
    """NumPy's protocols and Python's conversions, shared by the traced value kinds; each
    names what is unknown (``_unknown``), the value (``_noun``) and its use as an index."""

    __slots__ = ()
    _unknown = "the array's values, which are unknown while tracing"
    _noun = "an array"
    _as_index = "using an array as an index"

    def _value_needed(self, what: str) -> TraceError:
        return TraceError(f"{what} needs {self._unknown} (value-dependent Python control "
                          "flow?)", user_location(3))

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any):
        from autojit.tracer.numpy_map import apply_ufunc
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any):
        from autojit.tracer.numpy_map import apply_function
        return apply_function(func, args, kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise self._value_needed("converting to a NumPy array")

    def __bool__(self) -> bool:
        raise self._value_needed(f"truth-testing {self._noun} (if/while/and/or)")

    def __float__(self) -> float:
        raise self._value_needed("float()")

    def __int__(self) -> int:
        raise self._value_needed("int()")

    def __index__(self) -> int:
        raise self._value_needed(self._as_index)
