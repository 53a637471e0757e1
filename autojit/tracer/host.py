"""Python scalars while tracing: values of the host prologue (``autojit.ir.host``).

A Python int, float or bool argument is a :class:`HostScalar`, not a graph value. Python
arithmetic on host scalars (and Python literals) is recorded as a host step, computed now
on the example values (so the trace knows each result's Python type) and replayed on every
call. Only where a host scalar meets an array or a NumPy function does it become a graph
value: a kernel scalar of the dtype NumPy converts it to (NEP 50: weak ints and floats).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from autojit.errors import CallRaisesError, TraceError
from autojit.ir.host import HOST_OPS, MATH_FUNCTIONS, HostStep
from autojit.tracer.state import current_trace, user_location
from autojit.tracer.traced import Traced

#: Python scalar types a host value may have, and the dtype NumPy gives each on its own.
_DEFAULT_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64)}
PYTHON_SCALARS = tuple(_DEFAULT_DTYPES)


def python_scalar_dtype(python_type: type) -> np.dtype:
    """Return the dtype ``np.asarray`` gives a Python scalar of ``python_type``."""
    return _DEFAULT_DTYPES[python_type]


def _operand(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, HostScalar):
        return ("ref", value.ref)
    if type(value) in PYTHON_SCALARS:
        return ("const", value)
    return None


def _sizes_of(operands: tuple) -> frozenset | None:
    """The size symbols a result of ``operands`` is a function of (with constants); None
    where one depends on a Python scalar argument of the call."""
    found: frozenset = frozenset()
    for o in operands:
        if isinstance(o, HostScalar):
            if o.sizes is None:
                return None
            found |= o.sizes
    return found


#: host steps Python raises in for some values (ZeroDivisionError, OverflowError, ValueError)
_RAISING = frozenset({"truediv", "floordiv", "mod", "pow", "lshift", "rshift", "int", "float",
                      "round", "floor", "ceil", "trunc"})


def _may_raise(state: Any, op: str, operands: tuple, examples: list) -> bool:
    """Whether Python may raise computing step ``op`` for some call (a division by a
    Python scalar that may be zero, ``int()`` of a float that may be inf, ``math.sqrt``).
    A division by an array's size (``i % x.shape[0]``) is guarded on the size being
    nonzero (``Graph.nonempty``: a call where it is 0 runs as Python)."""
    if op.startswith("math."):
        return True
    if op not in _RAISING:
        return False
    if op in ("truediv", "floordiv", "mod"):   # by a nonzero constant: never (inf at most)
        divisor = operands[1]
        if type(divisor) is HostScalar and divisor.symbol is not None and examples[1] != 0:
            (state.outer_nonempty if state.in_body else state.nonempty).add(divisor.symbol)
            return False
        return not (type(divisor) in (int, float) and divisor != 0)
    if op in ("int", "round", "floor", "ceil", "trunc"):
        return type(examples[0]) is float
    return True


def _speculative(state: Any) -> bool:
    """Whether the trace evaluates code Python may not run: a branch of an ``if`` on a
    traced value (both are computed, one selected), a side of a conditional expression, the
    right operand of ``and``/``or`` after a traced one."""
    return state.predicate is not None or bool(state.select_marks) or state.speculative > 0


def _record(op: str, *operands: Any) -> Any:
    """Record ``HOST_OPS[op](*operands)`` as a host step; return its HostScalar, or
    NotImplemented for an operand that is not a Python scalar (an array: its own method).
    A step Python may raise in is refused where the trace evaluates it speculatively: the
    prologue computes every step at every call (or iteration), raising where Python, not
    taking that branch, would not."""
    refs = tuple(_operand(o) for o in operands)
    if None in refs:
        return NotImplemented
    examples = [o.value if isinstance(o, HostScalar) else o for o in operands]
    state = current_trace()
    if _speculative(state) and _may_raise(state, op, operands, examples):
        raise TraceError(f"Python scalar arithmetic ({op}) that may raise, in a branch or "
                         "operand the compiled code computes whichever way its traced "
                         "condition goes", user_location(3))
    try:
        value = HOST_OPS[op](*examples)
    except Exception as exc:   # Python raises for the example values: so will the call
        raise CallRaisesError(f"{type(exc).__name__} in Python scalar arithmetic: {exc}",
                              user_location(3)) from None
    if type(value) not in PYTHON_SCALARS:   # (-1) ** 0.5 is complex: for these values
        raise CallRaisesError(f"Python scalar arithmetic gave a {type(value).__name__}",
                              user_location(3))
    return HostScalar(state.add_host_step(HostStep(op, refs, type(value).__name__), value),
                      value, _sizes_of(operands))


def _binary(op: str):
    return lambda self, other: _record(op, self, other)


def _reflected(op: str):
    return lambda self, other: _record(op, other, self)


class HostScalar(Traced):
    """A Python scalar of the traced function: call argument ``ref`` (a real argument, or a
    host step's value) with the example value the trace runs on. Where it meets NumPy, the
    tracer takes it (``Traced``'s protocols); a use needing its value falls back.

    An array argument's size (``a.shape[0]``, ``len`` aside) is one too: ``symbol`` is its
    size symbol, ``source`` the (argument, axis) the prologue reads it from, first when a
    use needs it as a value of the call (``ref``; as a size it is the symbol itself).
    ``sizes`` are the size symbols the value is a function of (with constants; None: it
    depends on a Python scalar argument): a use that needs the concrete int (``range()``
    of a loop Python runs, ``hash``) guards on those sizes, as reading ``x.shape`` did
    before."""

    __slots__ = ("_ref", "value", "sizes", "symbol", "source")
    _unknown = "the Python scalar's value, which changes from call to call"
    _noun = "a Python scalar"
    _as_index = "using a Python scalar as an index or size"

    def __init__(self, ref: int | None, value: Any, sizes: frozenset | None = None,
                 symbol: str | None = None, source: tuple[int, int] | None = None) -> None:
        self._ref, self.value, self.sizes = ref, value, sizes
        self.symbol, self.source = symbol, source

    @property
    def ref(self) -> int:
        """The call argument holding the value (an array's size: a prologue step reading
        it, made on first use)."""
        return self._ref if self._ref is not None else self.ref_in(current_trace())

    def ref_in(self, state: Any) -> int:
        """``ref`` in trace ``state`` (a loop body's enclosing trace, not the current one)."""
        if self._ref is None:
            self._ref = state.size_ref(*self.source)
        return self._ref

    def concrete(self, what: str) -> Any:
        """The value as a plain Python scalar for a use that needs it: guarded on the
        sizes it derives from; one that depends on a scalar argument falls back."""
        if self.sizes is None:
            raise self._value_needed(what)
        state = current_trace()
        for symbol in self.sizes:
            state.concrete(symbol)
        return self.value

    def __index__(self) -> int:
        if type(self.value) is not int:
            raise TypeError(f"'{type(self.value).__name__}' object cannot be interpreted as "
                            "an integer")
        return self.concrete(self._as_index)

    def __int__(self) -> int:
        return int(self.concrete("int()"))

    def __float__(self) -> float:
        return float(self.concrete("float()"))

    def __str__(self) -> str:
        return str(self.concrete("str()"))

    def __format__(self, spec: str) -> str:
        return format(self.concrete("formatting"), spec)

    @property
    def python_type(self) -> type:
        return type(self.value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:   # noqa: N802 (Python's name)
        """``isinstance(s, float)`` answers as for the real argument, so code that branches
        on it traces the branch Python takes (``type(s)`` is still HostScalar)."""
        return type(self.value)

    def __hash__(self) -> int:
        return id(self) if self.sizes is None else hash(self.concrete("hash()"))

    def __bool__(self) -> bool:
        """Python branches on the value (``if n > 100:``): the trace takes the branch the
        example value takes and guards on the *decision* (the bool prologue value), not on
        the value: a call deciding otherwise misses and retraces (a counted recompile)."""
        truth = self if type(self.value) is bool else _record("truth", self)
        loc = user_location(2)
        current_trace().decisions.setdefault(truth.ref, (bool(self.value), str(loc or "?")))
        return bool(self.value)

    def __repr__(self) -> str:
        return f"<traced Python {type(self.value).__name__} @{self.ref}>"

    # -- Python's operators, recorded ----------------------------------------------------------
    __add__, __radd__ = _binary("add"), _reflected("add")
    __sub__, __rsub__ = _binary("sub"), _reflected("sub")
    __mul__, __rmul__ = _binary("mul"), _reflected("mul")
    __truediv__, __rtruediv__ = _binary("truediv"), _reflected("truediv")
    __floordiv__, __rfloordiv__ = _binary("floordiv"), _reflected("floordiv")
    __mod__, __rmod__ = _binary("mod"), _reflected("mod")
    __pow__, __rpow__ = _binary("pow"), _reflected("pow")
    __and__, __rand__ = _binary("and_"), _reflected("and_")
    __or__, __ror__ = _binary("or_"), _reflected("or_")
    __xor__, __rxor__ = _binary("xor"), _reflected("xor")
    __lshift__, __rlshift__ = _binary("lshift"), _reflected("lshift")
    __rshift__, __rrshift__ = _binary("rshift"), _reflected("rshift")
    __eq__, __ne__ = _binary("eq"), _binary("ne")  # type: ignore[assignment]
    __lt__, __le__ = _binary("lt"), _binary("le")
    __gt__, __ge__ = _binary("gt"), _binary("ge")

    def __neg__(self) -> Any:
        return _record("neg", self)

    def __pos__(self) -> Any:
        return _record("pos", self)

    def __abs__(self) -> Any:
        return _record("abs", self)

    def __invert__(self) -> Any:
        return _record("invert", self)

    # round(), math.floor/ceil/trunc ask the scalar itself
    def __round__(self, ndigits: Any = None) -> Any:
        return _record("round", self) if ndigits is None else _record("round", self, ndigits)

    def __floor__(self) -> Any:
        return _record("floor", self)

    def __ceil__(self) -> Any:
        return _record("ceil", self)

    def __trunc__(self) -> Any:
        return _record("trunc", self)


def host_step(op: str, *operands: Any) -> Any:
    """Record ``HOST_OPS[op](*operands)`` on Python scalars of the call (the tracer's own
    prologue arithmetic: a size ``len(range(a, b))``, a conversion ``float(n)``)."""
    return _record(op, *operands)


#: the host step that gives a Python scalar of each type back as itself (a constant)
_IDENTITY = {bool: "truth", int: "int", float: "float"}


def python_constant(state: Any, value: bool | int | float) -> HostScalar:
    """A Python scalar constant as a host value of trace ``state`` (a step of a constant
    operand, giving it back): a function returning it returns a Python object of its
    type, as Python does (never a NumPy scalar or a 0-d array)."""
    step = HostStep(_IDENTITY[type(value)], (("const", value),), type(value).__name__)
    return HostScalar(state.add_host_step(step), value, frozenset())


def python_int(value: Any) -> Any:
    """``int(value)`` inside a trace: a host step for a traced Python scalar (Python's own
    conversion per call: a float's truncation, OverflowError for inf); else ``int``."""
    return _record("int", value) if isinstance(value, HostScalar) else int(value)


def python_float(value: Any) -> Any:
    """``float(value)`` inside a trace: a host step for a traced Python scalar."""
    return _record("float", value) if isinstance(value, HostScalar) else float(value)


def python_bool(value: Any) -> Any:
    """``bool(value)`` inside a trace: a host step for a traced Python scalar (a value,
    not a decision: branching on it later guards on the decision)."""
    return _record("truth", value) if isinstance(value, HostScalar) else bool(value)


class _MathPatches:
    """While any trace runs, ``math.sqrt`` & co. record a host step when given a traced
    Python scalar; for anything else (and in other threads) they are ``math``'s own."""

    def __init__(self) -> None:
        import threading
        self.lock, self.depth = threading.Lock(), 0

    @staticmethod
    def _wrapper(name: str) -> Any:
        original = HOST_OPS[f"math.{name}"]

        def function(*args: Any) -> Any:
            if any(isinstance(a, HostScalar) for a in args):
                result = _record(f"math.{name}", *args)
                if result is not NotImplemented:
                    return result
            return original(*args)

        function.__name__ = function.__qualname__ = name
        return function

    def __enter__(self) -> None:
        with self.lock:
            if self.depth == 0:
                for name in MATH_FUNCTIONS:
                    setattr(math, name, self._wrapper(name))
            self.depth += 1

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                for name in MATH_FUNCTIONS:
                    setattr(math, name, HOST_OPS[f"math.{name}"])


math_patches = _MathPatches()
