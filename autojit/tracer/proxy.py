"""Proxy arrays: stand-ins for the user's arrays that record what is done to them.

NumPy hands every ufunc call to ``__array_ufunc__`` and every NumPy function call to
``__array_function__``; operators are spelled as ufunc calls. Anything that needs a
concrete value (``if x > 0:``, ``float(x)``, ``np.asarray(x)``) raises a TraceError naming
the user's line, and the caller falls back to plain Python.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from autojit.errors import UnsupportedError
from autojit.ir.types import TensorType
from autojit.tracer.state import current_trace, user_location
from autojit.tracer.traced import Traced


def _python(*operands: Any) -> bool:
    """Whether a Python operator meets a Python number computed from traced values (or a
    comparison of them): ``tracer/pyscalars.py`` keeps Python's answer or refuses."""
    state = current_trace()
    return any(isinstance(v, Proxy) and ((v.weak is not None and v.is_scalar and v.param < 0)
                                         or v.node in state.python_bools) for v in operands)


def _binary(ufunc: np.ufunc, reflected: bool = False):
    def method(self: Proxy, other: Any) -> Any:
        a, b = (other, self) if reflected else (self, other)
        if _python(a, b):
            from autojit.tracer.pyscalars import binary
            return binary(ufunc, a, b)
        return ufunc(a, b)
    return method


def _unary(ufunc: np.ufunc):
    def method(self: Proxy) -> Any:
        if _python(self):
            from autojit.tracer.pyscalars import unary
            return unary(ufunc, self)
        return ufunc(self)
    return method


def _in_place(ufunc: np.ufunc):
    def method(self: Proxy, other: Any) -> Proxy:
        if _python(self, other):   # a Python number is immutable: ``+=`` makes a new one
            from autojit.tracer.pyscalars import binary
            return binary(ufunc, self, other)
        from autojit.tracer.writes import augmented
        return augmented(self, ufunc, other)
    return method


class Proxy(Traced):
    """A traced array value: graph node id plus its symbolic type.

    ``weak`` is ``int`` or ``float`` for a Python scalar made a graph value (NEP 50 weak
    promotion; Python scalars themselves are ``tracer.host.HostScalar``s), ``param`` then
    its call argument index;
    ``is_scalar`` marks values NumPy would return as a scalar rather than a 0-d array;
    ``param`` is the argument index for arguments (-1 otherwise).
    """

    __slots__ = ("node", "type", "weak", "is_scalar", "param")
    __array_priority__ = 1000.0

    def __init__(self, node: int, type_: TensorType, weak: type | None = None,
                 is_scalar: bool = False, param: int = -1) -> None:
        self.node, self.type, self.weak = node, type_, weak
        self.is_scalar, self.param = is_scalar, param

    def strong(self) -> Proxy:
        """This value as ``np.asarray`` makes it: a Python scalar is no longer NEP 50 weak
        (functions that convert their input first promote it like an array)."""
        if self.weak is None:
            return self
        return Proxy(self.node, self.type, None, self.is_scalar, self.param)

    # -- attributes --------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim

    @property
    def shape(self) -> tuple[Any, ...]:
        """The sizes as Python ints of the call: an argument's size is a HostScalar (no
        guard until a use needs the concrete int: ``range()`` unrolled); a view's size is
        concrete, specialising the trace on it (a guarded recompile)."""
        state = current_trace()
        return tuple(state.size_value(d) for d in self.type.shape)

    @property
    def size(self) -> Any:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.type.shape:
            raise TypeError("len() of unsized object")
        return operator.index(self.shape[0])   # Python's len() needs the int: guarded

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Proxy:
        from autojit.tracer.numpy_map import astype
        return astype(self, dtype, *args, **kwargs)

    def copy(self, order: str = "C") -> Proxy:
        """``a.copy()``: a new array of the same values (NumPy's in C order; the layout
        changes no value, nor who owns the memory)."""
        from autojit.tracer.creation import copied
        if order not in ("C", "K", "A"):
            raise UnsupportedError(f"ndarray.copy(order={order!r}) is not supported",
                                   user_location(2))
        return copied(self, self.is_scalar)

    def clip(self, a_min: Any = None, a_max: Any = None, **kwargs: Any) -> Proxy:
        return np.clip(self, a_min, a_max, **kwargs)

    @property
    def T(self) -> Proxy:  # noqa: N802 (NumPy's name)
        from autojit.tracer.views import transpose
        return transpose(self)

    def __getattr__(self, name: str) -> Any:
        from autojit.tracer.reductions import REDUCTION_METHODS
        from autojit.tracer.scans import SCAN_METHODS
        from autojit.tracer.views import VIEW_METHODS
        if name in REDUCTION_METHODS:
            return functools.partial(REDUCTION_METHODS[name], self)
        if name in SCAN_METHODS:
            return functools.partial(SCAN_METHODS[name], self)
        if name in VIEW_METHODS:
            return functools.partial(VIEW_METHODS[name], self)
        raise UnsupportedError(f"ndarray.{name} is not supported yet", user_location(2))

    def __getitem__(self, index: Any) -> Any:
        from autojit.tracer.views import getitem
        return getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        from autojit.tracer.writes import write
        write(self, None if index is Ellipsis else index, value)

    # -- values that Python needs concretely (the rest: Traced) ---------------------------------
    def __iter__(self):
        raise self._value_needed("iterating over an array")

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<traced %{self.node}: {self.type}>"

    # -- operators as ufuncs ---------------------------------------------------------------
    __add__, __radd__ = _binary(np.add), _binary(np.add, True)
    __sub__, __rsub__ = _binary(np.subtract), _binary(np.subtract, True)
    __mul__, __rmul__ = _binary(np.multiply), _binary(np.multiply, True)
    __truediv__, __rtruediv__ = _binary(np.true_divide), _binary(np.true_divide, True)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide), _binary(np.floor_divide, True)
    __mod__, __rmod__ = _binary(np.remainder), _binary(np.remainder, True)
    __rpow__ = _binary(np.power, True)
    __and__, __rand__ = _binary(np.bitwise_and), _binary(np.bitwise_and, True)
    __or__, __ror__ = _binary(np.bitwise_or), _binary(np.bitwise_or, True)
    __xor__, __rxor__ = _binary(np.bitwise_xor), _binary(np.bitwise_xor, True)
    # the shifts are ufuncs too: without them ``a << b`` fell back as a TypeError while
    # tracing, not as the ufunc (unsupported, with the user's line)
    __lshift__, __rlshift__ = _binary(np.left_shift), _binary(np.left_shift, True)
    __rshift__, __rrshift__ = _binary(np.right_shift), _binary(np.right_shift, True)
    __eq__, __ne__ = _binary(np.equal), _binary(np.not_equal)  # type: ignore[assignment]
    __lt__, __le__ = _binary(np.less), _binary(np.less_equal)
    __gt__, __ge__ = _binary(np.greater), _binary(np.greater_equal)

    def __pow__(self, other: Any) -> Proxy:
        """``a ** 2`` of an array is ``np.square`` in NumPy (``ndarray.__pow__``'s fast path
        for an exact Python int 2), which differs from ``np.power`` only for bool: int8."""
        if _python(self, other):
            from autojit.tracer.pyscalars import binary
            return binary(np.power, self, other)
        if type(other) is int and other == 2 and not self.is_scalar \
                and self.type.dtype.kind == "b":
            return np.square(self)
        return np.power(self, other)

    __neg__, __pos__ = _unary(np.negative), _unary(np.positive)
    __abs__, __invert__ = _unary(np.absolute), _unary(np.invert)
    __matmul__, __rmatmul__ = _binary(np.matmul), _binary(np.matmul, True)

    __iadd__, __isub__ = _in_place(np.add), _in_place(np.subtract)
    __imul__, __itruediv__ = _in_place(np.multiply), _in_place(np.true_divide)
    __ifloordiv__, __imod__ = _in_place(np.floor_divide), _in_place(np.remainder)
    __ipow__, __iand__ = _in_place(np.power), _in_place(np.bitwise_and)
    __ior__, __ixor__ = _in_place(np.bitwise_or), _in_place(np.bitwise_xor)
    __ilshift__, __irshift__ = _in_place(np.left_shift), _in_place(np.right_shift)
