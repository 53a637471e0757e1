"""Python numbers computed from traced values: a Python float or int that a branch on array
data or a loop leaves (``hits = 0.0; if u[i] < 0.5: hits += 1.0``, a ``while`` loop's
counter ``sweeps += 1``, ``cnt += k // 2`` in a ``for`` loop), issue 15.

Such a value is a Proxy of a 0-d float64/int64 graph value with ``weak`` its Python type,
``is_scalar`` and ``param == -1`` (``is_python``): NEP 50 weak where NumPy meets it, as a
Python number is, and Python's own arithmetic under Python's operators, kept only where
float64/int64 arithmetic gives Python's answer bit for bit:

- ``+ - *`` of Python floats (and ints): IEEE double, as Python computes (no exception:
  an overflow is inf in both); ``/`` by a Python constant other than zero or by a Python
  scalar of the call guarded on being nonzero (Python raises ZeroDivisionError);
- ``+ - *`` of Python ints, ``//`` and ``%`` by a nonzero int constant (int64's floor
  division and remainder are Python's for values that fit): exact only while no value
  leaves int64, which Python's ints never do. Each such int has a **magnitude bound**
  (``IntBounds``), an expression of the call's Python scalars computed in the host
  prologue (arbitrary precision): a constant's own, a Python int of the call's ``abs()``,
  ``|a| + |b|`` for a sum, ``|a| * |b|`` for a product, ``|a|`` for ``a // c``, ``|c|`` for
  ``a % c``. A loop's carried int grows per iteration by at most its body's bound: it is
  bounded by ``|start| + trips * growth`` (``guard_loop_ints``; a carried int the body
  multiplies, ``c * 2``, has no such bound and declines). Every bound is guarded to fit
  int64 (a decision of the prologue: a call whose values could overflow traces again and
  runs as Python, as does one whose example values could);
- ``-``, ``+``, ``abs()``;
- comparisons: a traced bool that only a condition may read (``python_bools``: Python's
  ``True + 1`` is an int, a returned comparison a Python bool).

Anything else of such a value under a Python operator raises TraceError: the function
runs as Python (``/`` of ints, ``**``, ``//`` and ``%`` of floats or by a traced divisor,
shifts and bit operations). Returned, it is the Python number (``Graph.scalar_outputs`` 2).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError
from autojit.ir.ops import Op
from autojit.ir.types import TensorType
from autojit.tracer.host import HostScalar, host_step
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location

_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply})
_INT_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply, np.floor_divide, np.remainder})
_COMPARE = frozenset({np.less, np.less_equal, np.greater, np.greater_equal, np.equal,
                      np.not_equal})
_DTYPES = {float: np.dtype(np.float64), int: np.dtype(np.int64)}
INT64_MAX = 2 ** 63 - 1
#: the trips a loop whose trip count the prologue does not know (a ``while`` loop, a range
#: over traced bounds) is taken to run at most: 2**56 iterations take years (a bound
#: ``start + 2**56 * g`` that fits int64 takes at least that many to leave it), and two
#: such loops' counters still add up within int64
UNKNOWN_TRIPS = 2 ** 56


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
    if kind is int and abs(value) > INT64_MAX:
        raise _refuse("an int beyond int64")
    node = state.add_const(value, _DTYPES[kind])
    return Proxy(node, TensorType(_DTYPES[kind], ()), kind, True)


def from_host(value: HostScalar) -> Proxy:
    """A Python int or float of the call (or of a loop body's prologue: ``i // 2``) as such
    a value. An int is read as int64 without the int guard a NumPy operand gets: its
    magnitude bound (``abs()`` of it, in the prologue) is guarded with the int's others."""
    state = current_trace()
    kind = value.python_type
    if kind is float:
        node = state.host_input(value.ref, _DTYPES[float], float)
    else:
        node = state.add_node(Op.ARG, (), TensorType(_DTYPES[int], ()),
                              (("index", value.ref),), user_location(3))
        bounds(state).leaves[node] = ("host", value)
    return Proxy(node, TensorType(_DTYPES[kind], ()), kind, True)


def as_python(value: Any) -> Proxy | None:
    """``value`` (a Python int/float, one of the call, or such a value) as such a value."""
    if is_python(value):
        return value
    if type(value) is HostScalar and value.python_type in (int, float):
        return from_host(value)
    if type(value) in (int, float):
        return constant(value)
    return None


def _made(result: Any, kind: type) -> Proxy:
    made = Proxy(result.node, TensorType(_DTYPES[kind], ()), kind, True)
    if kind is int:
        state = current_trace()
        bounds(state).derived.add(result.node)
        if not state.in_body:   # no loop: its bound is known now (guarded where it is made)
            guard_fits(bounds(state).magnitude(state, result.node), "a Python int")
    return made


def _refuse(what: str) -> TraceError:
    return TraceError(f"{what} of a Python number computed from array values (Python's "
                      "answer may differ from NumPy's)", user_location(4))


def _nonzero(divisor: Any) -> bool:
    """Whether ``divisor`` is known nonzero: a constant, or a Python scalar of the call
    (guarded: a call where it is zero decides otherwise and traces again)."""
    if type(divisor) is HostScalar:
        return bool(divisor != 0)   # a decision on the call's value
    return type(divisor) in (int, float) and divisor != 0 and abs(divisor) <= 2 ** 53


def _int_operand(value: Any) -> Any:
    """An operand of int arithmetic as the graph computes it: int64, not weak (NumPy
    resolves two weak Python ints to object); a Python bool constant is the int it acts as."""
    if is_python(value):
        return value.strong()
    if type(value) is HostScalar:
        return from_host(value).strong()
    if type(value) is bool:
        return int(value)
    return value


def binary(ufunc: np.ufunc, a: Any, b: Any) -> Any:
    """``a op b`` under a Python operator where ``a`` or ``b`` is such a value."""
    if is_python_bool(a) or is_python_bool(b):
        raise _refuse("arithmetic on a comparison")
    ta, tb = (bool if type(v) is bool else python_type(v) for v in (a, b))
    if ta is None or tb is None:   # with a NumPy value: NumPy's rules, the number weak
        return ufunc(a, b)
    kind = float if float in (ta, tb) else int
    if ufunc in _COMPARE:
        sa, sb = (_int_operand(v) if kind is int else v.strong() if is_python(v) else v
                  for v in (a, b))
        result = ufunc(sa, sb)
        current_trace().python_bools.add(result.node)
        return result
    if kind is int and ufunc in _INT_ARITHMETIC:
        if ufunc in (np.floor_divide, np.remainder) and not (
                is_python(a) and type(b) is int and b != 0):
            raise _refuse(f"{ufunc.__name__} by other than a nonzero int constant")
        for v in (a, b):
            if type(v) is int and abs(v) > INT64_MAX:
                raise _refuse("arithmetic with an int beyond int64")
        return _made(ufunc(_int_operand(a), _int_operand(b)), int)
    sa, sb = (v.strong() if is_python(v) else int(v) if type(v) is bool else v
              for v in (a, b))
    if ufunc in _ARITHMETIC and kind is float:
        return _made(ufunc(sa, sb), float)
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


def selected(select: Proxy) -> Proxy:
    """A select of two such ints (an ``if``, ``max()``): its bound is derived from theirs."""
    if select.weak is int:
        state = current_trace()
        bounds(state).derived.add(select.node)
        if not state.in_body:
            guard_fits(bounds(state).magnitude(state, select.node), "a Python int")
    return select


# -- magnitude bounds of Python ints -----------------------------------------------------------
#: a bound: an int, a HostScalar int of the outermost trace's prologue, or (made while a
#: loop body traces: an inner loop's, no prologue steps there) a small tree of them,
#: ``("+"|"*"|"max", a, b)`` and ``("host", s)`` (``|s|`` of a Python int of that body),
#: evaluated when the enclosing loop is bounded (``_evaluated``)
Bound = Any


def _symbolic(*operands: Any) -> bool:
    return any(type(v) is tuple for v in operands) or (
        any(type(v) is HostScalar for v in operands) and current_trace().in_body)


def _add(a: Bound, b: Bound) -> Bound:
    return ("+", a, b) if _symbolic(a, b) else a + b


def _mul(a: Bound, b: Bound) -> Bound:
    return ("*", a, b) if _symbolic(a, b) else a * b


def _max(a: Bound, b: Bound) -> Bound:
    if type(a) is int and type(b) is int:
        return builtins.max(a, b)
    return ("max", a, b) if _symbolic(a, b) else host_step("max", a, b)


def _abs(value: Any) -> Bound:
    if type(value) is HostScalar:
        if value.python_type is bool:
            return 1
        return ("host", value) if current_trace().in_body else abs(value)
    return abs(int(value))


def trips_bound(start: Any, stop: Any, step: int) -> Bound:
    """A bound of ``len(range(start, stop, step))`` (exact outside loop bodies)."""
    if type(start) is int and type(stop) is int:
        return len(range(start, stop, step))
    if current_trace().in_body:   # |start| + |stop| >= the trip count
        return _add(_abs(start), _abs(stop))
    return host_step("range_len", start, stop, step)


def _evaluated(bound: Bound, host_bounds: Callable[[int], Bound]) -> Bound:
    """A tree of an inner loop's bound in the enclosing loop's terms (``|s|`` of a Python
    int of its body: ``host_bounds``). Trees are a handful of nodes (one per loop level)."""
    if type(bound) is not tuple:
        return bound
    if bound[0] == "host":
        return host_bounds(bound[1].ref)
    a, b = (_evaluated(v, host_bounds) for v in bound[1:])
    return {"+": _add, "*": _mul, "max": _max}[bound[0]](a, b)


class Unbounded(Exception):
    """A Python int whose magnitude the trace cannot bound (``c * 2`` of a carried ``c``)."""


class IntBounds:
    """What bounds the magnitude of each Python int of one trace's graph: ``leaves`` (node
    -> ``("host", HostScalar)``, ``("carried", k)`` a loop body's carried value k,
    ``("outer", k)`` an outer value the body reads, ``("bound", b)`` a region's CARRY
    bounded by ``b``), and ``derived``, nodes computed from others (their op says how).

    A form is ``(k, b)``: ``|value| <= |carried k| + b`` (``k`` None: ``|value| <= b``),
    ``b`` a bound of the outer trace. Forms are computed in node order (no recursion)."""

    def __init__(self) -> None:
        self.leaves: dict[int, tuple] = {}
        self.derived: set[int] = set()
        self.forms: dict[int, tuple[int | None, Bound] | None] = {}
        self.cursor = 0

    def walk(self, state: Any, until: int, leaf: Callable[[tuple], tuple]) -> None:
        """Compute the forms of the nodes before ``until`` not yet walked (None for one
        without a bound)."""
        forms = self.forms
        for node in state.nodes[self.cursor:until]:
            found = self.leaves.get(node.id)
            if found is not None:
                try:
                    forms[node.id] = leaf(found)
                except Unbounded:
                    forms[node.id] = None
            elif node.id in self.derived or (node.op is Op.SELECT and all(
                    forms.get(i) is not None for i in node.inputs[1:])):
                forms[node.id] = _derive(state, node, forms)
        self.cursor = builtins.max(self.cursor, until)

    def magnitude(self, state: Any, node: int) -> Bound:
        """The bound of a Python int of the outer trace (where no loop carries it)."""
        self.walk(state, len(state.nodes), _outer_leaf)
        try:
            form = _operand(state, node, self.forms)
        except Unbounded:
            form = None
        if form is None or form[0] is not None:
            raise _refuse("arithmetic that may leave int64")
        return form[1]


def has_ints(state: Any) -> bool:
    """Whether the trace has Python ints of the graph (to be bounded)."""
    table = state.python_ints
    return table is not None and bool(table.leaves or table.derived)


def bounds(state: Any) -> IntBounds:
    if state.python_ints is None:
        state.python_ints = IntBounds()
    return state.python_ints


def _outer_leaf(leaf: tuple) -> tuple:
    kind, value = leaf
    if kind == "host":
        return None, _abs(value)
    if kind == "bound":
        return None, value
    raise Unbounded(kind)


def _operand(state: Any, node: int, forms: dict) -> tuple:
    if node in forms:
        if forms[node] is None:
            raise Unbounded("an unbounded operand")
        return forms[node]
    found = state.nodes[node]
    if found.op is Op.CONST and found.type.dtype.kind in "biu":
        return None, abs(int(found.attr("value")))
    raise Unbounded("an operand that is no Python int")


def _joined(a: tuple, b: tuple) -> int | None:
    """The carried int two operands' bounds count from (one of them, or none)."""
    if a[0] is not None and b[0] is not None and a[0] != b[0]:
        raise Unbounded("two carried ints")
    return a[0] if a[0] is not None else b[0]


def _derive(state: Any, node: Any, forms: dict) -> tuple | None:
    """The form of a derived Python int from its operands' (None: no bound)."""
    try:
        op = node.op
        if op is Op.SELECT:
            a, b = (_operand(state, i, forms) for i in node.inputs[1:])
            return _joined(a, b), _add(a[1], b[1])
        ins = [_operand(state, i, forms) for i in node.inputs]
        if op in (Op.ADD, Op.SUB):
            if ins[0][0] is not None and ins[1][0] is not None:
                raise Unbounded("a sum of carried ints")   # c + c doubles per iteration
            return _joined(*ins), _add(ins[0][1], ins[1][1])
        if op is Op.MUL:
            if ins[0][0] is not None or ins[1][0] is not None:
                raise Unbounded("a product of a carried int")   # grows geometrically
            return None, _mul(ins[0][1], ins[1][1])
        if op is Op.FLOOR_DIVIDE:   # by a nonzero int constant: |a // c| <= |a|
            return ins[0]
        if op is Op.REMAINDER:      # |a % c| < |c|
            return None, ins[1][1]
        if op in (Op.NEG, Op.ABSOLUTE, Op.POSITIVE):
            return ins[0]
    except Unbounded:
        return None
    return None


def guard_fits(bound: Bound, what: str) -> None:
    """Guard on ``bound <= INT64_MAX`` (a decision of the prologue); the example's failing
    raises TraceError (this call runs as Python: its ints may leave int64)."""
    # (a HostScalar's bool() is a guarded decision)
    fits = bound <= INT64_MAX if type(bound) is int else bool(bound <= INT64_MAX)
    if not fits:
        raise TraceError(f"{what} that may leave int64 for these values (Python's ints do "
                         "not overflow)", user_location(4))


def guard_loop_ints(outer: Any, child: Any, values: tuple, carried_count: int,
                    param_of: dict[int, int], results: tuple, index: Bound | None,
                    trips: Bound) -> dict[int, Bound]:
    """Bound every Python int of a loop body (traced as ``child``; ``values`` the outer
    carried and captured values, ``param_of`` their body parameters): a carried int ``k``
    whose body result is ``(k, g)`` (or ``(None, g)``) is bounded by ``|start| + trips *
    g`` at every iteration, every other int by its form; all guarded to fit int64.
    ``index``: the bound of a ``for`` loop's index (None: not known). Returns {carried
    position: its CARRY's leaf}, and under None a leaf for the region's other ints where
    the loop is inside another's body (bounded with that one's). Raises Unbounded."""
    table = bounds(child)
    by_param = {p: k for k, p in param_of.items()}
    host_bounds = _host_bounds(child, by_param, values, index)
    outer_table = bounds(outer)

    def outer_bound(k: int) -> Bound:
        value = values[k]
        if isinstance(value, Proxy):
            return outer_table.magnitude(outer, value.node)
        return _abs(value)

    def leaf(found: tuple) -> tuple:
        kind, value = found[:2]
        if kind == "carried":
            return value, 0
        if kind == "outer":
            if nested and isinstance(values[value], Proxy):
                raise Unbounded("an int of the enclosing loop read by an inner loop")
            return None, outer_bound(value)
        if kind == "host":
            return None, host_bounds(value.ref)
        if kind == "after":   # an inner loop's carried int: its start's form, grown
            start, extra = value, _evaluated(found[2], host_bounds)
            k, b = (start[0], _evaluated(start[1], host_bounds)) if type(start) is tuple \
                else table_forms_of(start)
            return k, _add(b, extra)
        if kind == "tree":    # an inner loop's other ints
            return None, _evaluated(value, host_bounds)
        raise Unbounded(kind)

    def table_forms_of(node: int) -> tuple:
        try:
            return _operand(child, node, table.forms)
        except Unbounded:
            raise Unbounded("an inner loop's start") from None

    nested = outer.in_body   # an inner loop: bounded with the loop around it
    table.cursor, table.forms = 0, {}
    table.walk(child, len(child.nodes), leaf)
    growth: dict[int, Bound] = {}
    grown: dict[int, Bound] = {}   # what the loop adds to each carried int's start
    for k in range(carried_count):
        result = results[k]
        if not (is_python(result) and result.weak is int):
            continue
        form = table.forms.get(result.node)
        if form is None or form[0] not in (None, k):
            raise Unbounded(f"carried int {k}")
        growth[k] = form[1]
        # an int the body grows gains its growth per iteration; one it sets anew
        # (``it = 0`` before an inner loop) is its start or its new value
        grown[k] = _mul(trips, form[1]) if form[0] == k else form[1]
    if any(table.forms.get(n) is None for n in (*table.leaves, *table.derived)):
        raise Unbounded("an int of the body")
    own: dict[int | None, Bound] = {}   # the largest bound over the start, by carried int
    for n in sorted({*table.leaves, *table.derived}):
        k, b = table.forms[n]
        if k is not None and k not in grown:
            raise Unbounded(f"carried int {k}")
        own[k] = _max(own.get(k, 0), b if k is None else _add(grown[k], b))
    if nested:   # the CARRYs' leaves in the enclosing body: start + growth + the others
        rest = own.get(None, 0)
        leaves = {k: ("after", _start_form(outer, values[k]),
                      _add(_max(grown[k], own.get(k, 0)), rest)) for k in growth}
        return {None: ("tree", rest), **leaves}
    start = {k: outer_bound(k) for k in growth}
    after = {k: _add(start[k], grown[k]) for k in growth}
    largest: Bound = own.get(None, 0)
    for k in growth:
        largest = _max(largest, _add(start[k], _max(grown[k], own.get(k, 0))))
    guard_fits(largest, "a Python int carried through the loop")
    return {k: ("bound", bound) for k, bound in after.items()}


def _start_form(outer: Any, value: Any) -> Any:
    """An inner loop's carried int before it, as the enclosing body's leaf refers to it:
    its node there (its form is known once that body is bounded), or a constant's form."""
    if isinstance(value, Proxy):
        return value.node
    return None, _abs(value)


def _host_bounds(child: Any, by_param: dict[int, int], values: tuple,
                 index: Bound | None) -> Callable[[int], Bound]:
    """The bound of each Python int of the body's prologue (its refs), from the index's,
    the outer scalars' and the prologue's steps, in order (Unbounded: a step without one,
    a float made an int)."""
    found: list[Bound | None] = []

    def param(ref: int) -> Bound:
        k = by_param.get(ref)
        if k is None and ref == 0 and index is not None:   # a for loop's index
            return index
        if k is not None and type(values[k]) is HostScalar and values[k].python_type in (
                int, bool):
            return _abs(values[k])
        raise Unbounded("a parameter")

    def operand(entry: tuple) -> Bound:
        kind, v = entry
        if kind == "const":
            if type(v) not in (int, bool):
                raise Unbounded("a float")
            return abs(int(v))
        return bound(v)

    def bound(ref: int) -> Bound:
        if ref < child.arg_count:
            return param(ref)
        j = ref - child.arg_count
        while len(found) <= j:
            step = child.host_steps[len(found)]
            try:
                found.append(_step_bound(step, operand))
            except Unbounded:
                found.append(None)
        if found[j] is None:
            raise Unbounded("a prologue step")
        return found[j]

    return bound


def _step_bound(step: Any, operand: Callable[[tuple], Bound]) -> Bound:
    if step.result_type == "bool":
        return 1
    if step.result_type != "int":
        raise Unbounded("a float")
    ops = step.operands
    if step.op in ("add", "sub", "max"):
        return _add(operand(ops[0]), operand(ops[1]))
    if step.op == "mul":
        return _mul(operand(ops[0]), operand(ops[1]))
    if step.op in ("floordiv", "neg", "pos", "abs", "int"):
        return operand(ops[0])
    if step.op == "mod":
        return operand(ops[1])
    if step.op == "select":
        return _add(operand(ops[1]), operand(ops[2]))
    if step.op == "range_len":   # |len(range(a, b, s))| <= |a| + |b|
        return _add(operand(ops[0]), operand(ops[1]))
    raise Unbounded(step.op)
