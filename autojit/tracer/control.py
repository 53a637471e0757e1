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

Added by the convert branch (wave 3): ``convert(fn, *args)`` for the source's ``int(v)``,
``float(v)``, ``bool(v)``, ``len(v)``, ``max(a, b)``, ``min(a, b)``; ``flag(value)`` and
``unset(*flags)`` for the flags ``break``/``continue`` become; ``Names.flags``, a loop's
own carried break flag (the region a range loop becomes stops after the iteration that
sets it: ``Region.exit``). Inside a body the region tracer traces (``_BodyCall``), an
``if`` on a Python scalar is offered as a select and jump flags are graph bools.
``call(fn, *args, **kwargs)``: a call of a name or attribute of the source (``helper(n, a)``).
"""

from __future__ import annotations

import builtins
import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.ir.types import TensorType
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
    #: a loop's own carried break flag (``convert._Jumps``; an inner loop's is not one):
    #: a graph bool for the region tracer; a range loop's region stops after the
    #: iteration that sets it (``Region.exit``), a while loop's condition reads it; where
    #: Python runs a range loop it stops once it is set
    flags: tuple[str, ...] = ()
    #: the return flags a loop carries (``convert._LoopReturns``: ``return`` inside a loop
    #: sets one and breaks): graph bools in a loop the region tracer traces, as ``flags``
    returns: tuple[str, ...] = ()


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


def flag(value: bool) -> Any:
    """A ``continue`` flag's value (``convert._Jumps``): inside a loop body the region tracer
    traces, a graph bool (``if c: continue`` is then a select of two graph values, where two
    Python bools declined); anywhere else the Python bool itself."""
    state = CURRENT_TRACE.get()
    if state is None or not _IN_BODY.get():
        return value
    dtype = np.dtype(bool)
    return Proxy(state.add_const(value, dtype), TensorType(dtype, ()), None, True)


def unset(*flags: Any) -> Any:
    """``not (f1 or f2 ...)`` of jump flags (Python bools or graph bools): a graph bool
    where one is, so the statements a jump skips are an ``if`` the tracer can select."""
    if not any(isinstance(f, Proxy) for f in flags):
        return not any(flags)
    found = flags[0]
    for f in flags[1:]:
        found = np.logical_or(found, f)
    return np.logical_not(found)


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
    flags = [k for k, n in enumerate(getattr(names, "carried", ()))
             if n in getattr(names, "flags", ())]
    if range_fn is builtins.range and _traced(bounds, carried, captured):
        graph = _graph_flags(carried, names)
        result = regions.trace_for(bounds, _BodyCall(body), graph, captured, names)
        if result is not NotImplemented:
            return result
    token = _IN_BODY.set(False)   # Python runs the loop: its flags are Python bools
    try:
        for i in range_fn(*bounds):
            carried = body(i, carried, captured)
            if any(carried[k] is True for k in flags):   # a break: Python stops here
                break
    finally:
        _IN_BODY.reset(token)
    return carried


def _graph_flags(carried: tuple, names: Names) -> tuple:
    """``carried`` with the loop's break flag and return flags as graph bools."""
    jumps = (*getattr(names, "flags", ()), *getattr(names, "returns", ()))
    return tuple(_graph_flag(v) if n in jumps else v
                 for n, v in zip(getattr(names, "carried", ()), carried)) \
        + tuple(carried[len(getattr(names, "carried", ())):])


def _graph_flag(value: Any) -> Any:
    """A break flag entering a loop the region tracer traces: a graph bool (its value in
    the body is a select of graph bools, the type the same each iteration)."""
    if type(value) is not bool:
        return value
    state = CURRENT_TRACE.get()
    dtype = np.dtype(bool)
    return Proxy(state.add_const(value, dtype), TensorType(dtype, ()), None, True)


def while_loop(cond: Callable[[tuple, tuple], Any], body: Body, carried: tuple,
               captured: tuple, names: Names) -> tuple:
    """``while cond(carried, captured): carried = body(carried, captured)``."""
    if _traced(carried, captured):
        graph = _graph_flags(carried, names)   # (graph bools, as a range loop's)
        result = regions.trace_while(_BodyCall(cond), _BodyCall(body), graph, captured,
                                     names)
        if result is not NotImplemented:
            return result
    token = _IN_BODY.set(False)
    try:
        while cond(carried, captured):
            carried = body(carried, captured)
    finally:
        _IN_BODY.reset(token)
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


def _pick(greater: bool, a: Any, b: Any) -> Any:
    """Python's ``max(a, b)`` (``greater``) or ``min(a, b)``: ``b`` where it compares
    greater (less) than ``a``, else ``a`` (ties and NaN keep ``a``), as a host step for
    Python scalars and a select for two graph scalars of one type; anything else as
    Python does it (its truth test of a traced value falls back)."""
    builtin = builtins.max if greater else builtins.min
    if type(a) is host.HostScalar or type(b) is host.HostScalar:   # (__class__ lies)
        if all(type(v) in (host.HostScalar, bool, int, float) for v in (a, b)):
            return host.host_step("select", b > a if greater else b < a, b, a)
    elif isinstance(a, Proxy) and isinstance(b, Proxy) and a.ndim == b.ndim == 0 and \
            a.is_scalar and (a.dtype, a.weak, b.is_scalar) == (b.dtype, b.weak, True):
        # (NumPy scalars only: Python's max gives back one of the objects, and a scalar's
        # identity is not seen; a 0-d array's is)
        from autojit.ir.ops import Op
        from autojit.tracer.numpy_map import make_elementwise
        truth = np.greater(b, a) if greater else np.less(b, a)
        picked = make_elementwise(Op.SELECT, (truth, b, a), (np.dtype(bool), a.dtype,
                                                              a.dtype), a.dtype, a.is_scalar)
        picked.weak = a.weak
        return picked
    return builtin(a, b)


def convert(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` where the source says ``int(v)``, ``float(v)``, ``bool(v)``,
    ``len(v)``, ``max(a, b)`` or ``min(a, b)``: for the builtin of that name and a traced
    value, the tracer's own (a host step for a Python scalar: its value per call, not the
    example's); for anything else what Python does."""
    if CURRENT_TRACE.get() is not None and any(isinstance(a, Traced) for a in args):
        if len(args) == 2 and (fn is builtins.max or fn is builtins.min):
            # Python numbers of the graph (a carried float sum) first, as ``minmax`` does
            found = regions.trace_minmax(fn is builtins.max, args)
            return _pick(fn is builtins.max, *args) if found is NotImplemented else found
        for builtin, traced in _CONVERSIONS:
            if fn is builtin and len(args) == 1:
                return traced(args[0])
    return fn(*args)


def if_else(pred: Any, then: Body, orelse: Body, carried: tuple, captured: tuple,
            names: Names) -> tuple:
    """``carried = (then if pred else orelse)(carried, captured)``."""
    known = _constant_truth(pred)
    if known is not None:   # (a return flag no iteration set: the branch Python takes)
        return then(carried, captured) if known else orelse(carried, captured)
    if _traced((pred,), carried, captured):
        result = regions.trace_if(_branch_pred(pred), then, orelse, carried, captured,
                                  names)
        if result is not NotImplemented:
            return result
    return then(carried, captured) if pred else orelse(carried, captured)


def _constant_truth(pred: Any) -> bool | None:
    """The value of a graph bool that is a constant of the trace (a jump or return flag a
    loop that runs no iteration leaves as it entered), else None: deciding on it is exact,
    and the branch that cannot run is not traced (``if returned: return value`` reads
    names only an iteration binds)."""
    state = CURRENT_TRACE.get()
    if state is None or type(pred) is not Proxy or pred.dtype != np.bool_ or pred.ndim:
        return None
    from autojit.ir.ops import Op
    node = state.nodes[pred.node]
    return bool(node.attr("value")) if node.op is Op.CONST else None


# -- and/or/not in a test, builtin max/min (``convert._Converter.truth``, ``convert._MinMax``)
def _test(value: Any) -> Any:
    """An operand of a test: inside a loop body the region tracer traces, a Python scalar's
    truth is a graph bool (``while i % 2 == 0 and it < 5`` decides per iteration: a
    Python decision there would hold for one); elsewhere the value itself."""
    state = CURRENT_TRACE.get()
    if type(value) is not host.HostScalar or state is None or not state.in_body:
        return value
    from autojit.tracer.numpy_map import host_proxy
    return host_proxy(value if value.python_type is bool else host.python_bool(value))


def _speculate(value: Any) -> bool:
    """A traced left operand: ``B`` is evaluated whichever way it decides (counted on the
    trace while it is, ``host._speculative``; ``_joined`` ends it)."""
    if not regions.traced_scalar(_test(value)):
        return False
    CURRENT_TRACE.get().speculative += 1
    return True


def _joined(op: str, left: Any, right: Any) -> Any:
    left, right = _test(left), _test(right)
    if not regions.traced_scalar(left):
        return right
    CURRENT_TRACE.get().speculative -= 1
    return regions.traced_truth(op, left, right)


def and_left(value: Any) -> bool:
    """Whether ``value and B`` evaluates ``B``: Python's truth of ``value``; always for a
    traced scalar (then both decide, ``and_``)."""
    return True if _speculate(value) else bool(value)


def or_left(value: Any) -> bool:
    """Whether ``value or B`` evaluates ``B`` (see ``and_left``)."""
    return True if _speculate(value) else not value


def and_(left: Any, right: Any) -> Any:
    """``left and right`` as a test, ``right`` evaluated (``and_left``)."""
    return _joined("and", left, right)


def or_(left: Any, right: Any) -> Any:
    """``left or right`` as a test, ``right`` evaluated (``or_left``)."""
    return _joined("or", left, right)


def not_(value: Any) -> Any:
    """``not value`` as a test."""
    value = _test(value)
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


def call(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` where the source calls a name or an attribute (AutoGraph's
    ``converted_call``): a function of the user's own code (or a method of one) is called
    converted, so the loops and branches of a helper the traced function calls become
    regions of the same trace; NumPy's, autojit's, the standard library's and installed
    packages' functions, builtins, classes and other callables are called as they are."""
    from autojit.tracer.convert import converted_callee  # (convert imports control)
    return converted_callee(fn)(*args, **kwargs)
