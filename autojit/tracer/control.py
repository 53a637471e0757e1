"""Control flow as calls: what ``tracer/convert.py`` turns ``for``/``while``/``if`` into.

The converted function calls these instead of running the statement itself (TensorFlow
AutoGraph's design). Each takes the statement's body as a function of the values it
rebinds (``carried``, in ``names.carried`` order) and the values it only reads
(``captured``, in ``names.captured`` order) and returns the carried values after it.
While a trace records and a bound, a condition or a value is traced, the tracer is asked
to make the statement a region (``tracer/regions.py``); where it declines, or no trace
runs, the statement runs as Python runs it.

Interface (fixed for issue 15's helpers; the bodies are filled in by the convert branch):

- ``for_range(bounds, body, carried, captured, names)``: ``for i in range(*bounds)``,
  ``carried = body(i, carried, captured)``. The converter also passes ``range_fn``, what
  the name ``range`` was when the loop started: a user's own ``range`` runs as Python.
- ``while_loop(cond, body, carried, captured, names)``: ``while cond(carried, captured)``,
  ``carried = body(carried, captured)``.
- ``if_else(pred, then, orelse, carried, captured, names)``: ``carried = (then if pred
  else orelse)(carried, captured)``.

And ``convert(fn, value)``: ``int(v)``, ``float(v)``, ``bool(v)``, ``len(v)`` of the source;
``call(fn, *args, **kwargs)``: a call of a name or attribute of the source (``helper(n, a)``).
"""

from __future__ import annotations

import builtins
import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autojit.tracer import host, regions
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import CURRENT_TRACE
from autojit.tracer.traced import Traced


class _Undefined:
    """A name the statement rebinds that was not bound before it (Python would raise
    NameError/UnboundLocalError reading it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<undefined>"


UNDEFINED = _Undefined()


@dataclass(frozen=True)
class Names:
    """What the converter knows of one statement: the names it carries and captures, and
    where it is in the user's source (file, line)."""

    carried: tuple[str, ...]
    captured: tuple[str, ...]
    file: str = ""
    line: int = 0


Body = Callable[..., tuple]


#: True while a loop body (or its condition) runs for the region tracer: an ``if`` on a
#: Python scalar there is a select, not a decision (a decision holds for one iteration)
_IN_BODY: contextvars.ContextVar[bool] = contextvars.ContextVar("autojit_in_body",
                                                                default=False)


class _BodyCall:
    """A body function as the region tracer calls it (marking ``_IN_BODY``); ``__code__``
    is the body's own (the tracer names the loop variable from it)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.__code__ = getattr(fn, "__code__", None)

    def __call__(self, *args: Any) -> Any:
        token = _IN_BODY.set(True)
        try:
            return self.fn(*args)
        finally:
            _IN_BODY.reset(token)


def _branch_pred(pred: Any) -> Any:
    """The predicate the region tracer is given: inside a loop body a Python scalar's truth
    becomes a graph bool (the branch a select of both, exact); elsewhere it stays a
    Python scalar (the trace guards on the decision, a call deciding otherwise retraces)."""
    if type(pred) is not host.HostScalar or not _IN_BODY.get():   # (__class__ answers
        return pred                                                # as its value's)
    from autojit.tracer.numpy_map import host_proxy
    truth = pred if pred.python_type is bool else host.python_bool(pred)
    return host_proxy(truth)


def _traced(*groups: tuple) -> bool:
    """True while a trace records and one of the values is traced: the tracer is asked to
    make the statement a region."""
    if CURRENT_TRACE.get() is None:
        return False
    return any(isinstance(v, Traced) for group in groups for v in group)


def for_range(bounds: tuple, body: Body, carried: tuple, captured: tuple,
              names: Names, range_fn: Callable = builtins.range) -> tuple:
    """``for i in range_fn(*bounds): carried = body(i, carried, captured)``; ``range_fn``
    is what the name ``range`` was where the loop started (a user may shadow it: then the
    loop is only Python's)."""
    if range_fn is builtins.range and _traced(bounds, carried, captured):
        result = regions.trace_for(bounds, _BodyCall(body), carried, captured, names)
        if result is not NotImplemented:
            return result
    for i in range_fn(*bounds):
        carried = body(i, carried, captured)
    return carried


def while_loop(cond: Callable[[tuple, tuple], Any], body: Body, carried: tuple,
               captured: tuple, names: Names) -> tuple:
    """``while cond(carried, captured): carried = body(carried, captured)``."""
    if _traced(carried, captured):
        result = regions.trace_while(_BodyCall(cond), _BodyCall(body), carried, captured,
                                     names)
        if result is not NotImplemented:
            return result
    while cond(carried, captured):
        carried = body(carried, captured)
    return carried


def _length(value: Any) -> Any:
    """``len()`` of a traced array: its first size as the trace knows it (an argument's
    size is a host value read per call, as ``x.shape[0]``: no guard on the size)."""
    if isinstance(value, Proxy) and value.ndim:
        return value.shape[0]
    return len(value)


#: the builtins ``convert`` hands to the tracer for a traced argument
_CONVERSIONS: tuple[tuple[Callable, Callable], ...] = (
    (builtins.int, host.python_int), (builtins.float, host.python_float),
    (builtins.bool, host.python_bool), (builtins.len, _length))


def convert(fn: Callable, value: Any) -> Any:
    """``fn(value)`` where the source says ``int(value)``, ``float(value)``,
    ``bool(value)`` or ``len(value)``: for the builtin of that name and a traced value,
    the tracer's own (a host step for a Python scalar: its value per call, not the
    example's); for anything else what Python does."""
    if isinstance(value, Traced) and CURRENT_TRACE.get() is not None:
        for builtin, traced in _CONVERSIONS:
            if fn is builtin:
                return traced(value)
    return fn(value)


def if_else(pred: Any, then: Body, orelse: Body, carried: tuple, captured: tuple,
            names: Names) -> tuple:
    """``carried = (then if pred else orelse)(carried, captured)``."""
    if _traced((pred,), carried, captured):
        result = regions.trace_if(_branch_pred(pred), then, orelse, carried, captured,
                                  names)
        if result is not NotImplemented:
            return result
    return then(carried, captured) if pred else orelse(carried, captured)


def call(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` where the source calls a name or an attribute (AutoGraph's
    ``converted_call``): a function of the user's own code (or a method of one) is called
    converted, so the loops and branches of a helper the traced function calls become
    regions of the same trace; NumPy's, autojit's, the standard library's and installed
    packages' functions, builtins, classes and other callables are called as they are."""
    from autojit.tracer.convert import converted_callee  # (convert imports control)
    return converted_callee(fn)(*args, **kwargs)
