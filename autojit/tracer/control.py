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
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autojit.tracer import regions
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
        result = regions.trace_for(bounds, body, carried, captured, names)
        if result is not NotImplemented:
            return result
    for i in range_fn(*bounds):
        carried = body(i, carried, captured)
    return carried


def while_loop(cond: Callable[[tuple, tuple], Any], body: Body, carried: tuple,
               captured: tuple, names: Names) -> tuple:
    """``while cond(carried, captured): carried = body(carried, captured)``."""
    if _traced(carried, captured):
        result = regions.trace_while(cond, body, carried, captured, names)
        if result is not NotImplemented:
            return result
    while cond(carried, captured):
        carried = body(carried, captured)
    return carried


def if_else(pred: Any, then: Body, orelse: Body, carried: tuple, captured: tuple,
            names: Names) -> tuple:
    """``carried = (then if pred else orelse)(carried, captured)``."""
    if _traced((pred,), carried, captured):
        result = regions.trace_if(pred, then, orelse, carried, captured, names)
        if result is not NotImplemented:
            return result
    return then(carried, captured) if pred else orelse(carried, captured)


# -- and/or/not in a test, builtin max/min (``convert._Converter.truth``, ``convert._MinMax``)
def and_left(value: Any) -> bool:
    """Whether ``value and B`` evaluates ``B``: Python's truth of ``value``; always for a
    traced scalar (then both decide, ``and_``)."""
    return True if regions.traced_scalar(value) else bool(value)


def or_left(value: Any) -> bool:
    """Whether ``value or B`` evaluates ``B`` (see ``and_left``)."""
    return True if regions.traced_scalar(value) else not value


def and_(left: Any, right: Any) -> Any:
    """``left and right`` as a test, ``right`` evaluated (``and_left``)."""
    return regions.traced_truth("and", left, right) if regions.traced_scalar(left) else right


def or_(left: Any, right: Any) -> Any:
    """``left or right`` as a test, ``right`` evaluated (``or_left``)."""
    return regions.traced_truth("or", left, right) if regions.traced_scalar(left) else right


def not_(value: Any) -> Any:
    """``not value`` as a test."""
    return regions.traced_truth("not", value, None) if regions.traced_scalar(value) \
        else not value


def minmax(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` where ``fn`` is what the name ``max``/``min`` was at the call."""
    if (fn is builtins.max or fn is builtins.min) and _traced(args):
        result = regions.trace_minmax(fn is builtins.max, args)
        if result is not NotImplemented:
            return result
    return fn(*args)


def select_test(cond: Any) -> bool:
    """``A if cond else B``: whether both sides are evaluated for a select (``select``)."""
    return regions.select_test(cond)


def select(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` on a traced scalar ``cond``, both sides evaluated."""
    return regions.trace_select(cond, a, b)

