"""Loops and branches on traced values as regions of the graph (issue 15).

``tracer/control.py`` asks these while a trace records; each returns the carried values
after the statement, or ``NotImplemented`` to decline (the statement then runs as Python:
a loop with concrete bounds unrolls into the trace, a traced condition falls back).

Interface (fixed for issue 15's helpers; filled in by the regions branch):

- ``trace_for(bounds, body, carried, captured, names)``
- ``trace_while(cond, body, carried, captured, names)``
- ``trace_if(pred, then, orelse, carried, captured, names)``

with the arguments of ``control.for_range``, ``control.while_loop``, ``control.if_else``.

How a loop becomes a region (``ir.region``): its body is traced ONCE as a graph of its own
(a nested trace sharing the outer trace's size symbols): parameters the index (a Python
int: a host scalar of the body), the carried values and the traced captured values;
results the carried values after one iteration (and, for ``while``, the next condition).
What the body reads that is the same at every iteration, the outer trace's sizes and host
steps on them or on captured ints, are parameters too (``_Invariants``: computed once per
call outside, no guard on a size's value; the body is traced again once it knows them).
The outer graph gets a REGION node, a CARRY node per carried value and a region WRITE per
argument the body writes into (its next version). Carried values whose type changes after
the first iteration (``acc = 0.0`` then ``acc += np.sum(a)``: a Python float, then a NumPy
float64) peel that iteration into the outer trace, guarded on the decision "the loop ran at
least once" (a host-prologue step whose result type is that decision); a type that keeps
changing, a shape that changes (``x = x[1:]``), a write into a carried value, or a body the
tracer cannot trace declines: the statement runs as Python does.

Python scalars carried (``_promote``): a Python int/float (a constant, one of the call, one
the peeled iteration left) or a NumPy scalar constant that the body changes becomes a graph
value and the body is traced again on it; a Python int that becomes a float (``acc = 1;
acc += j * 0.5``) keeps changing once, so its first iteration is peeled (``_settled``: the
body's Python scalars stand for their example values in the check). Each body's Python
ints are bounded before its region is built (``_bounded_build``,
``pyscalars.guard_loop_ints``); the loop variable read after the loop is its last index.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError
from autojit.ir.graph import Param
from autojit.ir.host import HostStep
from autojit.ir.ops import Op
from autojit.ir.region import Region, Source
from autojit.ir.types import TensorType
from autojit.tracer import pyscalars
from autojit.tracer.host import HostScalar, python_scalar_dtype
from autojit.tracer.proxy import Proxy
from autojit.tracer.pyscalars import constant, is_python, python_type
from autojit.tracer.state import CURRENT_TRACE, TraceState, user_location
from autojit.tracer.writes import immutable, written_param

_LOGGER = logging.getLogger("autojit.regions")


def _where(names: Any) -> str:
    return f"{getattr(names, 'file', '?')}:{getattr(names, 'line', '?')}"


class _Decline(Exception):
    """The statement cannot be a region: it runs as Python (the reason, for debugging)."""


#: captured Python values a body may read as they are (immutable: tracing once is exact)
_PLAIN = (int, float, bool, complex, str, bytes, type(None), type, types.ModuleType,
          types.FunctionType, types.BuiltinFunctionType, np.ufunc, np.dtype, slice, range,
          type(Ellipsis), np.generic)


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    from autojit.tracer.control import UNDEFINED
    return value is UNDEFINED or (isinstance(value, _PLAIN) and type(value) not in (
        Proxy, HostScalar))


def _key(state: TraceState, value: Any) -> tuple:
    """What must not change from one iteration to the next (the body is traced for it)."""
    if isinstance(value, Proxy):
        return ("proxy", value.dtype.str, tuple(state.find(d) for d in value.type.shape),
                value.weak, value.is_scalar)
    if isinstance(value, HostScalar):
        return ("host", value.python_type)
    if _plain(value):
        return ("const", type(value), repr(value))
    raise _Decline(f"a carried {type(value).__name__}")


class _Invariants:
    """What a loop's body reads that is the same at every iteration and the enclosing trace
    gives as Python ints of its own: its sizes (``x.shape[0]`` of a captured array) and the
    host steps on such values (``x.shape[0] // 2``, ``n - 1``), each computed there once per
    call (a step by its operands there: its ref, example value). The body takes each as a
    parameter (no guard on its value; the native driver sees a constant of the loop); one
    it reads before it is one is made here at once (the enclosing trace's step, its ref in
    the body mapped to it, so steps on it are found too), and the loop traces the body
    again with them all parameters."""

    def __init__(self) -> None:
        self.sizes: list[str] = []
        self.steps: dict[HostStep, tuple[int, Any]] = {}

    def size(self, root: str) -> None:
        if root not in self.sizes:
            self.sizes.append(root)

    def step(self, state: TraceState, key: HostStep, value: Any) -> int:
        """The enclosing trace's ref of host step ``key`` (made once per loop)."""
        if key not in self.steps:
            self.steps[key] = (state.add_host_step(key, value), value)
        return self.steps[key][0]


#: the most traces of one loop body taking its invariants as parameters (a chain
#: ``x.shape[0] // 2 - 1`` is one more each); the last one is used either way
_INVARIANT_PASSES = 4


class _Body:
    """One nested trace of a loop body: its graph and what it returned."""

    def __init__(self, state: TraceState, kind: str, index: Any, carried: tuple,
                 captured: tuple, invariants: _Invariants | None = None) -> None:
        self.outer, self.kind = state, kind
        self.child = TraceState()
        for name in ("parent", "example_sizes", "guards", "argument_symbols"):
            setattr(self.child, name, getattr(state, name))   # one namespace of sizes
        self.child.fp_policy = state.fp_policy
        self.child.in_body = True   # its Python ints are bounded with the region's
        self.params: list[Param] = []
        self.param_of: dict[int, int] = {}    # position in carried + captured -> parameter
        self.array_dims: list[tuple[int, tuple]] = []   # array parameters and their sizes
        self.carried_in, self.captured_in = tuple(carried), tuple(captured)
        if kind == "for":
            self.index = HostScalar(self._param("index", "scalar", TensorType(
                np.dtype(np.int64), ())), index)
        self.carried = tuple(self._stand_in(k, v) for k, v in enumerate(carried))
        self.captured = tuple(self._stand_in(len(carried) + k, v)
                              for k, v in enumerate(captured))
        self.given = tuple(carried) + tuple(captured)   # the outer values, by position
        # the body's values the same at every iteration, Python ints of the enclosing trace
        # (a ref of the body -> its ref there): captured ones, then the ``_Invariants``:
        # ``extras`` (their HostScalars there, sources after the captured values), the
        # body's parameters of its sizes (``sized``) and steps (``hoisted``); ``wanted``:
        # one was read before it was a parameter (the loop traces the body again)
        self.invariant: dict[int, int] = {
            index: self.given[position].ref_in(state)
            for position, index in self.param_of.items()
            if position >= len(carried) and type(self.given[position]) is HostScalar}
        self.extras: list[HostScalar] = []
        self.sized: dict[str, HostScalar] = {}
        self.hoisted: dict[HostStep, int] = {}
        self.wanted = False
        self.first_extra = len(carried) + len(captured)
        self.invariants = invariants = invariants or _Invariants()
        for symbol in tuple(invariants.sizes):
            self._size_param(symbol)
        for key, (ref, value) in tuple(invariants.steps.items()):
            index = self._extra(f"host_{len(self.hoisted)}", HostScalar(ref, value))
            self.hoisted[key] = index
        self.child.outer_size = self._outer_size
        self.child.hoist_step = self._hoist_step

    def _extra(self, name: str, value: HostScalar) -> int:
        """A body parameter for a Python int of the enclosing trace, the same at every
        iteration (a source after the captured values)."""
        index = self._param(name, "scalar", TensorType(python_scalar_dtype(
            value.python_type), ()))
        self.param_of[self.first_extra + len(self.extras)] = index
        self.extras.append(value)
        self.invariant[index] = value.ref_in(self.outer)
        return index

    def _hoist_step(self, step: HostStep, value: Any) -> int | None:
        """``TraceState.hoist_step`` of the body's trace: a host step on values the same at
        every iteration is the enclosing trace's (its parameter; before there is one, the
        body computes it too, its ref mapped to the enclosing trace's, and ``wanted``);
        None: the body computes it."""
        operands = []
        for kind, v in step.operands:
            if kind == "ref":
                v = self.invariant.get(v)
                if v is None:
                    return None
            operands.append((kind, v))
        if all(kind != "ref" for kind, _ in operands):
            return None   # a constant: nothing to hoist
        key = HostStep(step.op, tuple(operands), step.result_type)
        found = self.hoisted.get(key)
        if found is None and type(value).__name__ == step.result_type:
            state = self.child   # (the ref the body's own step is about to get)
            self.invariant[state.arg_count + len(state.host_steps)] = \
                self.invariants.step(self.outer, key, value)
            self.wanted = True
        return found

    def _size_param(self, symbol: str) -> None:
        """A body parameter for the enclosing trace's size ``symbol`` (a Python int of it:
        read once per call there, not per iteration, and no guard on its value)."""
        root = self.child.find(symbol)
        value = self.outer.size_value(root) if root.__class__ is str else None
        if type(value) is not HostScalar or root in self.sized:
            return
        index = self._extra(f"size_{root}", value)
        self.sized[root] = HostScalar(index, value.value, value.sizes, root)

    def _outer_size(self, root: str) -> HostScalar | None:
        """``TraceState.outer_size`` of the body's trace: a size of the enclosing trace as
        a Python int of the body (its parameter; before there is one, the size of an array
        parameter read in the body, and ``wanted``: the loop traces the body again with
        it a parameter); None where the enclosing trace has only a guarded int."""
        child = self.child
        for symbol, value in self.sized.items():
            if child.find(symbol) == root:
                return value
        value = self.outer.size_value(root)
        if type(value) is not HostScalar:
            return None
        for index, shape in self.array_dims:
            for axis, dim in enumerate(shape):
                if child.find(dim) == root:
                    self.invariants.size(root)
                    self.wanted = True
                    ref = child.size_ref(index, axis)
                    self.invariant[ref] = value.ref_in(self.outer)
                    return HostScalar(ref, value.value, value.sizes, root)
        return None

    def _param(self, name: str, kind: str, type_: TensorType) -> int:
        self.params.append(Param(name, kind, type_))
        self.child.params_kind.append(kind)
        return len(self.params) - 1

    def _stand_in(self, position: int, value: Any) -> Any:
        """The body's parameter for an outer value (a traced one), or the value itself."""
        if isinstance(value, Proxy):
            state = self.child
            type_ = TensorType(value.dtype, tuple(state.find(d) for d in value.type.shape))
            index = self._param(f"v{position}", "array", type_)
            node = state.add_node(Op.ARG, (), type_, (("index", index),))
            self.param_of[position] = index
            self.array_dims.append((index, type_.shape))
            if value.node in self.outer.python_bools:   # a Python bool stays one
                state.python_bools.add(node)
            if is_python(value) and value.weak is int:   # its bound: ``guard_loop_ints``
                pyscalars.bounds(state).leaves[node] = (
                    "carried" if position < len(self.carried_in) else "outer", position)
            # a Python number computed before the loop stays one (no argument of the call)
            return Proxy(node, type_, value.weak, value.is_scalar,
                         -1 if is_python(value) else index)
        if isinstance(value, HostScalar):
            index = self._param(f"v{position}", "scalar", TensorType(
                python_scalar_dtype(value.python_type), ()))
            self.param_of[position] = index
            # (a size read outside stays one: the sizes it derives from, its symbol)
            return HostScalar(index, value.value, value.sizes, value.symbol)
        if not _plain(value):
            raise _Decline(f"a captured {type(value).__name__}")
        return value

    def run(self, body: Callable, cond: Callable | None) -> tuple:
        """Trace ``body`` (and a while loop's next condition); return the carried results."""
        self.child.arg_count = len(self.params)
        token = CURRENT_TRACE.set(self.child)
        try:
            if self.kind == "for":
                results = body(self.index, self.carried, self.captured)
            elif self.kind == "if":
                results = body(self.carried, self.captured)
                if not isinstance(results, tuple) or len(results) != len(self.carried):
                    raise _Decline("the branch returned another number of values")
                self.results, self.next_cond = results, None
                return results
            else:
                results = body(self.carried, self.captured)
            if not isinstance(results, tuple) or len(results) != len(self.carried):
                raise _Decline("the body returned another number of values")
            self.next_cond = cond(results, self.captured) if cond is not None else None
        except TraceError as exc:
            raise _Decline(str(exc)) from None
        except _Decline:
            raise
        except Exception as exc:   # Python or NumPy raises in the body: Python runs it
            raise _Decline(f"{type(exc).__name__} while tracing the body") from None
        finally:
            CURRENT_TRACE.reset(token)
        self.results = results
        return results

    def _hoist_decisions(self) -> None:
        """A Python decision in the body on values that are the same at every iteration
        (``np.linspace(0, 1, x.shape[0])`` decides on ``num - 1 > 0``) is the enclosing
        trace's: its host steps are replayed there and it guards there, once per call
        (a call deciding otherwise misses and traces again). Decisions on the index or on
        carried values stay (the body then declines)."""
        state, outer = self.child, self.outer
        if not state.decisions:
            return
        mapped: dict[int, int | None] = dict(self.invariant)
        steps: dict[int, HostStep] = {}
        for j, step in enumerate(state.host_steps):
            ref = state.arg_count + j
            if ref in mapped:   # the enclosing trace has it already (``_hoist_step``)
                continue
            invariant = all(kind != "ref" or mapped.get(v) is not None
                            for kind, v in step.operands)
            mapped[ref] = -1 if invariant else None   # (-1: to be replayed when needed)
            steps[ref] = step
        needed = [ref for ref in state.decisions if mapped.get(ref) is not None]
        wanted: set[int] = set()
        while needed:   # the steps the decisions read, walked (no recursion)
            ref = needed.pop()
            if ref in wanted or ref not in steps:
                continue
            wanted.add(ref)
            needed += [v for kind, v in steps[ref].operands if kind == "ref"]
        for ref in sorted(wanted):
            step = steps[ref]
            operands = tuple((kind, mapped[v] if kind == "ref" else v)
                             for kind, v in step.operands)
            mapped[ref] = outer.add_host_step(HostStep(step.op, operands, step.result_type))
        for ref, decision in list(state.decisions.items()):
            target = mapped.get(ref)
            if target is not None and target >= 0:
                outer.decisions.setdefault(target, decision)
                del state.decisions[ref]

    def graph(self, name: str) -> Any:
        """Freeze the body: outputs are the traced carried values (then the condition)."""
        from autojit.tracer.trace import _freeze, _output_node
        state = self.child
        outputs = []
        for k, value in enumerate(self.results):
            if isinstance(value, Proxy) and value.node in state.python_bools:
                raise _Decline("a comparison of Python numbers carried (a Python bool)")
            if k in self.param_of:
                outputs.append(_output_node(state, value))
        if self.next_cond is not None:
            outputs.append(_output_node(state, self.next_cond))
        for ref, dtype in list(state.int_guards):   # on a value the same every iteration:
            if ref in self.invariant:                # checked once per call, outside
                self.outer.int_guards.add((self.invariant[ref], dtype))
                state.int_guards.discard((ref, dtype))
        if state.int_guards:
            raise _Decline("a Python scalar converted to an integer dtype in the body")
        self._hoist_decisions()
        if state.decisions:   # a Python if on the index: its answer holds for one iteration
            raise _Decline("a Python decision on the body's scalars (an if on the loop index)")
        if any(step.op == "pow" for step in state.host_steps):
            raise _Decline("Python ** in the body (its result type depends on the values)")
        graph = _freeze(state, None, name, self.params, [(o, False) for o, _ in outputs],
                        True)
        written = {n.attr("param") for n in graph.nodes if n.op is Op.WRITE}
        return graph, written


def _cond_ok(value: Any) -> bool:
    return isinstance(value, HostScalar) or (isinstance(value, Proxy) and value.ndim == 0)


class _Loop:
    """Builds one region in the outer trace ``state``."""

    def __init__(self, state: TraceState, kind: str, body: Callable, carried: tuple,
                 captured: tuple, names: Any) -> None:
        self.state, self.kind, self.body = state, kind, body
        self.carried, self.captured, self.names = tuple(carried), tuple(captured), names
        self.invariants = _Invariants()   # what the body reads the same every iteration
        self.loc = user_location(4)
        self.index_carried: set[int] = set()   # carried names the body binds to its index
        if names is not None and getattr(names, "line", 0):
            from autojit.ir.graph import SourceLoc
            self.loc = SourceLoc(names.file, names.line)

    def keys(self, values: tuple) -> tuple:
        return tuple(_key(self.state, v) for v in values)

    def trace(self, carried: tuple, index: Any, cond: Callable | None,
              host_ok: bool = False) -> tuple[_Body, tuple]:
        """Trace the body once; ``host_ok``: a carried result may be a Python scalar of
        the body's (``_promote`` may make it a Python number of the graph)."""
        for _ in range(_INVARIANT_PASSES):   # again while it reads new invariants
            body = _Body(self.state, self.kind, index, carried, self.captured,
                         self.invariants)
            results = body.run(self.body, cond)
            if not body.wanted:
                break
        if self.kind == "for" and any(v is body.index for v in results):
            # the loop variable, read after the loop (``return i``): not carried, its value
            # after the loop is the last index (``_bounded_build``)
            if getattr(self.names, "flags", ()):   # (Region.exit: not the range's last)
                raise _Decline("the loop variable read after a loop with a break")
            self.index_carried = {k for k, v in enumerate(results) if v is body.index}
            results = body.results = tuple(body.carried[k] if k in self.index_carried else v
                                           for k, v in enumerate(results))
        if not host_ok:
            _no_host(results)
        return body, self.keys(results)

    # -- the outer graph's nodes -----------------------------------------------------------
    def source(self, value: Any, inputs: list[int]) -> Source:
        if isinstance(value, Proxy):
            inputs.append(value.node)
        elif isinstance(value, HostScalar):
            inputs.append(self.state.add_node(Op.ARG, (), TensorType(python_scalar_dtype(
                value.python_type), ()), (("index", value.ref),), self.loc))
        else:
            return ("const", value)
        return ("input", len(inputs) - 1)

    def build(self, body: _Body, carried: tuple, bounds: tuple = (), first: Any = None,
              ) -> tuple:
        """Add the REGION, its CARRYs and region WRITEs; return the carried values after."""
        state = self.state
        graph, written = body.graph(f"{self.kind}_body")
        positions = sorted(body.param_of)
        in_place = set()   # carried arguments the body updates in place (x += ...)
        copied = set()     # carried computed values it updates in place (a copy of its own)
        values = carried + self.captured + tuple(body.extras)
        for k in positions:   # a write into a carried value: its memory is the caller's
            if k < len(carried) and body.param_of[k] in written:
                if _updated_in_place(state, body, k, carried[k]):
                    in_place.add(k)
                elif _updated_local(state, body, k, values):
                    copied.add(k)
                else:
                    raise _Decline("the body writes into a carried value")
        arguments: dict[int, int] = {}       # written outer argument -> body parameter
        locals_: list[int] = []              # written computed values (positions)
        for k in positions:
            if body.param_of[k] not in written or k in copied:
                continue
            param = written_param(state, values[k].node)
            if param is None or param < 0:   # a computed value (its scratch key): a local
                locals_.append(k)
                if _viewed(state, values[k].node):
                    raise _Decline("the body writes into a computed array a view shares")
            elif state.params_kind[param] != "array":
                raise _Decline("a write into a scalar argument")
            else:
                arguments[param] = k
            # the body's plan takes its parameters for distinct memory
            if any(j != k and isinstance(values[j], Proxy)
                   and written_param(state, values[j].node) == param for j in positions):
                raise _Decline("the body writes into an argument it also reads otherwise")
        if any(isinstance(v, Proxy) and state.nodes[v.node].op is Op.SIZE
               for v in (*values, *bounds, first)):
            raise _Decline("a size product as a loop operand (it has no memory)")
        inputs: list[int] = []
        bound_sources = tuple(self.source(b, inputs) for b in bounds)
        first_source = self.source(first, inputs) if first is not None else None
        sources = [self.source(values[k], inputs) for k in positions]
        carried_params = [k for k in positions if k < len(carried)]
        out_types = [graph.node(o).type for o in graph.outputs[:len(carried_params)]]
        contiguous = []
        ordered = _contiguous_nodes(state)
        for k in positions:
            node = values[k].node if isinstance(values[k], Proxy) else None
            out = carried_params.index(k) if k in carried_params else None
            passes_view = out is not None and graph.node(graph.outputs[out]).op is Op.VIEW
            contiguous.append(node is None or (node in ordered and not passes_view))
        lead = 1 if self.kind == "for" else 0   # the index; then the prologue's values
        contiguous = [True] * lead + contiguous
        contiguous += [True] * (len(graph.params) - len(contiguous))
        exit_ = self._exit(carried_params, out_types)
        region = Region(self.kind, graph, bound_sources, first_source,
                        tuple(sources[:len(carried_params)]),
                        tuple(sources[len(carried_params):]),
                        tuple(self._name(k) for k in carried_params), tuple(contiguous),
                        tuple(positions.index(k) for k in locals_), self._index_name(),
                        tuple(self._captured_name(k - len(carried))
                              for k in positions if k >= len(carried)),
                        copied=tuple(positions.index(k) for k in sorted(copied)),
                        exit=exit_)
        node = state.add_node(Op.REGION, tuple(inputs), TensorType(np.dtype(bool), ()),
                              (("region", region),), self.loc)
        after = list(carried)
        for j, k in enumerate(carried_params):
            result = body.results[k]
            carry = state.add_node(Op.CARRY, (node,), out_types[j], (("index", j),), self.loc)
            if k in copied:   # the same array, updated: every name of it sees the CARRY
                carried[k].node = carry
                after[k] = carried[k]
                continue
            after[k] = Proxy(carry, out_types[j], result.weak, result.is_scalar)
        for j, k in enumerate(locals_):   # rebind the caller's name: the same Proxy object
            carry = state.add_node(Op.CARRY, (node,), values[k].type,
                                   (("index", len(carried_params) + j),), self.loc)
            values[k].node = carry
        for param in sorted(arguments):
            readers = tuple(sorted(state.readers_of_param(param)))
            version = state.current_version(param)
            state.add_node(Op.WRITE, (version, node), state.nodes[version].type,
                           (("after", readers), ("param", param), ("region", True)), self.loc)
            state.retire(param)
        for k in range(len(carried)):
            if k not in body.param_of:   # a constant that stayed the same constant
                after[k] = body.results[k]
        for k in in_place:   # the caller's array itself, written by the loop (its WRITE)
            after[k] = carried[k]
        return tuple(after)

    def _exit(self, carried_params: list[int], out_types: list[TensorType]) -> int:
        """The carried position of a ``for`` loop's break flag (``Region.exit``), -1 without
        one; a flag the body does not carry as a graph bool declines (the region could not
        stop: a range of a Python int argument would run to its end)."""
        flags = getattr(self.names, "flags", ()) if self.kind == "for" else ()
        if not flags:
            return -1
        k = list(getattr(self.names, "carried", ())).index(flags[0])
        if k not in carried_params:
            raise _Decline("a break flag the loop does not carry")
        j = carried_params.index(k)
        if out_types[j].dtype != np.bool_ or out_types[j].shape:
            raise _Decline("a break flag that is not a bool")
        return j

    def _index_name(self) -> str:
        """The user's loop variable (the body function's first parameter), for printing."""
        code = getattr(self.body, "__code__", None)
        name = code.co_varnames[0] if code is not None and code.co_argcount else ""
        return "" if self.kind != "for" or name == "_" or name.startswith("__aj") else name

    def _captured_name(self, k: int) -> str:
        names = getattr(self.names, "captured", ())
        return names[k] if k < len(names) else ""

    def _name(self, k: int) -> str:
        names = getattr(self.names, "carried", ())
        return names[k] if k < len(names) else f"c{k}"


_FIELDS = ("node", "type", "weak", "is_scalar", "param")


def _branch(state: TraceState, predicate: Callable[[], Proxy], branch: Callable, carried: tuple,
            captured: tuple) -> Any:
    """Trace one branch of a select on the outer values as they are before the ``if``,
    its writes predicated (``state.predicate``: each stores where(predicate, new, old),
    ``writes.predicated``). An augmented assignment of a scalar (``acc += 1``) rebinds the
    very Proxy object it updates (``writes.augmented_into``): its new value is the branch's
    result, and the object is put back for the other branch (else both branches saw the
    first's update). An array updated so is a predicated write: the other branch may see
    it, it changed nothing where that branch runs."""
    proxies = [v for v in (*carried, *captured) if isinstance(v, Proxy)]
    before = [tuple(getattr(v, f) for f in _FIELDS) for v in proxies]
    rebinds = [immutable(state, v) for v in proxies]
    outer = state.predicate
    state.predicate = predicate if outer is None else _lazy(
        lambda: np.logical_and(outer(), predicate()))
    try:
        results = branch(carried, captured)
    finally:
        state.predicate = outer
    moved: dict[int, Proxy] = {}
    for value, fields, rebound in zip(proxies, before, rebinds):
        now = tuple(getattr(value, f) for f in _FIELDS)
        if now == fields or not rebound:
            continue
        moved[id(value)] = Proxy(*now)
        for name, old in zip(_FIELDS, fields):
            setattr(value, name, old)
    if moved and isinstance(results, tuple):
        results = tuple(moved.get(id(v), v) for v in results)
    return results


def _lazy(make: Callable[[], Proxy]) -> Callable[[], Proxy]:
    """A branch's predicate, made on its first use (a branch that writes nothing adds no
    node for it) and then the same node."""
    made: list[Proxy] = []

    def predicate() -> Proxy:
        if not made:
            made.append(make())
        return made[0]
    return predicate


def _updated_in_place(state: TraceState, body: _Body, k: int, outer: Any) -> bool:
    """Whether carried value ``k`` is an argument's array that the body updates in place
    and rebinds to itself (``vel += dt * acc``: an augmented assignment rebinds the name
    to the same array): the loop then writes into the argument, as a captured one."""
    result = body.results[k]
    if not (isinstance(outer, Proxy) and isinstance(result, Proxy)):
        return False
    param = written_param(state, outer.node)
    if param is None or param < 0 or state.params_kind[param] != "array":
        return False
    child = body.child
    return (child.nodes[result.node].op is Op.WRITE
            and child.memory_of.get(result.node) == body.param_of[k]
            and result.type == child.nodes[result.node].type)


def _updated_local(state: TraceState, body: _Body, k: int, values: tuple) -> bool:
    """Whether carried value ``k`` is an array computed before the loop that the body
    updates in place and rebinds to itself (``count += inside``): NumPy's loop writes into
    that one array, which no view shares and no other operand of the loop is (the body
    would read it as another parameter); the loop then works on a copy of its own
    (``Region.copied``) and the name holds the copy after the loop."""
    outer, result = values[k], body.results[k]
    if not (isinstance(outer, Proxy) and isinstance(result, Proxy)) or outer.is_scalar \
            or outer.weak is not None:
        return False
    param = written_param(state, outer.node)
    if (param is not None and param >= 0) or _viewed(state, outer.node):
        return False
    if any(j != k and v is outer for j, v in enumerate(values)):
        return False
    child = body.child
    return (child.nodes[result.node].op is Op.WRITE
            and child.memory_of.get(result.node) == body.param_of[k]
            and result.type == child.nodes[result.node].type and result.type == outer.type)


def _viewed(state: TraceState, node_id: int) -> bool:
    node = state.nodes[node_id]
    return node.op is Op.VIEW or any(n.op is Op.VIEW and n.inputs[0] == node_id
                                     for n in state.nodes[node_id + 1:])


def _contiguous_nodes(state: TraceState) -> set[int]:
    """Outer values C-contiguous at every call: C-contiguous arguments (the signature's),
    values autojit allocates, and views that keep C order (``fuse.plan`` decides the
    same for the outer graph; here only what a body parameter may assume)."""
    found: set[int] = set()
    for n in state.nodes:
        if n.op is Op.ARG:
            index = n.attr("index")
            if index >= len(state.params_kind) or state.params_kind[index] != "array" \
                    or index in state.c_contiguous_args:
                found.add(n.id)
        elif n.op is Op.WRITE:
            if n.attr("param") in state.c_contiguous_args:
                found.add(n.id)
        elif n.op is not Op.VIEW or not n.type.shape:
            found.add(n.id)
    return found


# -- the decision "ran at least once", guarded --------------------------------------------
def _guard_nonnegative(value: Any) -> None:
    """Guard on ``value >= 0`` for a host int: ``1 ** value`` is an int then and a float
    otherwise, and a call whose prologue value has another type than the trace's misses
    (``ir.host``): it retraces, taking the other path."""
    if isinstance(value, HostScalar):
        1 ** value   # noqa: B018 (recorded as a host step: the guard)


def _int_bound(value: Any) -> Any:
    """A range bound as the loop sees it: a Python int, a host int, a traced int scalar."""
    if type(value) is HostScalar:   # (its __class__ answers as its value's)
        if value.python_type in (int, bool):
            return value
        raise _Decline("a range bound that is not an integer")
    if isinstance(value, bool | int | np.integer) and not isinstance(value, Proxy):
        return int(value)
    if isinstance(value, Proxy) and value.ndim == 0 and value.dtype.kind in "iu":
        return value
    raise _Decline("a range bound that is not an integer")


def _ran(bounds: tuple) -> bool | None:
    """Whether ``range(*bounds)`` runs at least once, from the example values (None when a
    bound is a traced array value: unknown while tracing)."""
    values = []
    for b in bounds:
        if isinstance(b, Proxy):
            return None
        values.append(b.value if isinstance(b, HostScalar) else b)
    return len(range(*values)) > 0


def _asked(kind: str, names: Any, trace: Callable[[TraceState], tuple]) -> Any:
    """Run ``trace`` on the current trace; a decline is NotImplemented (the statement runs
    as Python), logged and recorded for the report (``TraceState.declined``)."""
    state = CURRENT_TRACE.get()
    if state is None:
        return NotImplemented
    try:
        return trace(state)
    except _Decline as exc:
        _LOGGER.debug("the %s at %s runs as Python: %s", kind, _where(names), exc)
        state.declined.append((kind, _where(names), str(exc)))
        return NotImplemented


def trace_for(bounds: tuple, body: Any, carried: tuple, captured: tuple, names: Any) -> Any:
    return _asked("loop", names, lambda state: _trace_for(state, bounds, body, carried,
                                                           captured, names))


def _trace_for(state: TraceState, bounds: tuple, body: Callable, carried: tuple,
               captured: tuple, names: Any) -> tuple:
    bounds = tuple(_int_bound(b) for b in bounds)
    if not 1 <= len(bounds) <= 3:
        raise _Decline("range takes one to three bounds")
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
        (*bounds, 1) if len(bounds) == 2 else bounds)
    if type(step) is not int or step == 0:
        raise _Decline("a range step that is not a nonzero constant")
    loop = _Loop(state, "for", body, carried, captured, names)
    ran = _ran((start, stop, step))
    example = start.value if type(start) is HostScalar else start if type(start) is int \
        else 0
    given = tuple(carried)
    try:
        first, keys = loop.trace(given, example, None, host_ok=True)
        carried, first, keys = _promote(loop, given, first, keys, example, None)
        if keys == loop.keys(tuple(carried)):
            _no_host(first.results)
            return _bounded_build(loop, first, tuple(carried), (start, stop, step))
        # (a Python int that becomes a float, ``acc = 1; acc += j * 0.5``: peeled below)
    except _Decline:
        if ran is not False:
            raise
        # no iteration runs for these values (its example index may be out of range: x[i]
        # of an empty x): the loop leaves every value as it is, guarded on running none
        _guard_nonnegative(start - stop if step > 0 else stop - start)
        return given
    # the carried types change after the first iteration: peel it, guarded on it running
    if ran is None or isinstance(start, Proxy):
        raise _Decline("carried types change and the trip count is a traced value")
    if isinstance(stop, HostScalar) or isinstance(start, HostScalar):
        if step > 0:
            _guard_nonnegative((stop if type(start) is int and start == 0 else stop - start) - 1)
        else:
            _guard_nonnegative(start - stop - 1)
    if not ran:
        return tuple(carried)
    # the types after it (its Python scalars as their example values: a check only)
    after_first = tuple(v.value if type(v) is HostScalar else v for v in first.results)
    _settled(loop, after_first, example + step, None)   # stable from there on, or declines
    peeled = body(start, tuple(carried), captured)   # the first iteration, as Python runs it
    with _after_peel(loop):
        try:
            peeled, second = _settled(loop, tuple(peeled), example + step, None)
        except _Decline:
            raise TraceError("the loop's first iteration traced differently twice",
                             loop.loc) from None
        return _bounded_build(loop, second, peeled, (start + step, stop, step))


def _settled(loop: _Loop, carried: tuple, index: Any, cond: Callable | None
             ) -> tuple[tuple, _Body]:
    """Trace the body on ``carried`` (its changing Python numbers made graph numbers,
    ``_promote``): the carried values and the body, whose results have their types, or
    decline (the types keep changing)."""
    body, keys = loop.trace(carried, index, cond, host_ok=True)
    carried, body, keys = _promote(loop, carried, body, keys, index, cond)
    _no_host(body.results)
    if keys != loop.keys(tuple(carried)):
        raise _Decline("carried types keep changing")
    body.graph(f"{loop.kind}_body")   # what would decline, before a peel: after, too late
    return tuple(carried), body


def _bounded_build(loop: _Loop, body: _Body, carried: tuple, bounds: tuple = (),
                   first: Any = None) -> tuple:
    """``loop.build``, the body's Python ints bounded first (``pyscalars.guard_loop_ints``:
    guarded to stay in int64 at every iteration, or the loop declines); a carried int's
    CARRY keeps its bound after the loop (its leaf; for a loop inside another's body, the
    enclosing loop bounds it with its own)."""
    known = bool(bounds) and not any(isinstance(b, Proxy) for b in bounds)
    found: dict = {}
    try:
        if pyscalars.has_ints(body.child):   # (prologue steps only for a loop with ints)
            index, trips = None, pyscalars.UNKNOWN_TRIPS
            if known:
                start, stop, step = bounds
                index = pyscalars._max(pyscalars._abs(start), pyscalars._abs(stop))
                trips = pyscalars.trips_bound(start, stop, step)
            given = carried + loop.captured + tuple(body.extras)   # (extras: invariants)
            found = pyscalars.guard_loop_ints(loop.state, body.child, given, len(carried),
                                              body.param_of, body.results, index, trips)
    except pyscalars.Unbounded as exc:
        raise _Decline(f"a Python int of the loop that may grow past int64 ({exc})") from None
    except TraceError as exc:
        raise _Decline(str(exc)) from None
    after = loop.build(body, carried, bounds, first)
    state = loop.state
    # sizes the body divides by where Python may not (``host._may_raise``): guarded nonzero
    (state.outer_nonempty if state.in_body else state.nonempty).update(
        body.child.outer_nonempty)
    table = pyscalars.bounds(state)
    for k, leaf in found.items():
        if k is None:   # the region's other ints: a leaf on its node
            table.leaves[max(n.id for n in state.nodes if n.op is Op.REGION)] = leaf
        elif is_python(after[k]):
            table.leaves[after[k].node] = leaf
    if loop.index_carried:
        if not known:
            raise _Decline("the loop variable read after a loop over traced bounds")
        start, stop, step = bounds
        trips = len(range(start, stop, step)) if all(type(b) is int for b in bounds) \
            else pyscalars.host_step("range_len", start, stop, step)
        after = _last_index(loop, after, bounds, trips)
    return after


def _last_index(loop: _Loop, after: tuple, bounds: tuple, trips: Any) -> tuple:
    """The loop variable after a range loop: its last index (a Python int of the prologue,
    ``start + (trips - 1) * step``) where the loop runs, else what it was before; the
    trace guards on which of the two (a call deciding otherwise traces again)."""
    start, _, step = bounds
    if type(trips) is int and trips == 0:
        return after
    _guard_nonnegative(trips - 1)
    if type(trips) is HostScalar and trips.value == 0:
        return after
    last = start + (trips - 1) * step
    return tuple(last if k in loop.index_carried else v for k, v in enumerate(after))


def _no_host(results: tuple) -> None:
    if any(isinstance(v, HostScalar) for v in results):
        raise _Decline("a Python scalar carried through the loop")


def _promote(loop: _Loop, carried: tuple, body: _Body, keys: tuple, index: Any,
             cond: Callable | None) -> tuple[tuple, _Body, tuple]:
    """Carried Python numbers the body changes (a counter ``k += 1``, a sum a branch adds
    to) become Python numbers of the graph (``tracer/pyscalars.py``) and the body is traced
    again on them; where that trace declines, the loop is traced as before (a constant
    the first iteration sets stays one, its iteration peeled)."""
    promoted, changed = list(carried), False
    for k, (before, after) in enumerate(zip(carried, body.results)):
        # (a Python scalar of the body's: ``acc += i // 2`` on the index, a float)
        if type(before) in (int, float) and python_type(after) is type(before) and (
                type(after) is HostScalar or (is_python(after) if isinstance(after, Proxy)
                                              else after != before)):
            promoted[k], changed = constant(before), True
        elif type(before) is HostScalar and before.python_type in (int, float) and \
                python_type(after) is before.python_type and after is not body.carried[k] \
                and (type(after) is HostScalar or is_python(after)):
            # a Python scalar of the call (or the peeled iteration's) the body changes
            promoted[k], changed = pyscalars.from_host(before), True
        elif isinstance(before, np.generic) and isinstance(after, Proxy) and after.ndim == 0 \
                and after.is_scalar and after.weak is None and after.dtype == before.dtype:
            # a NumPy scalar constant the body changes (``acc = np.float32(1); acc += t``)
            dtype = before.dtype
            promoted[k] = Proxy(loop.state.add_const(before.item(), dtype),
                                TensorType(dtype, ()), None, True)
            changed = True
    if not changed:
        return carried, body, keys
    try:
        again, again_keys = loop.trace(tuple(promoted), index, cond)
    except _Decline:
        return carried, body, keys
    return tuple(promoted), again, again_keys


def trace_while(cond: Any, body: Any, carried: tuple, captured: tuple, names: Any) -> Any:
    return _asked("loop", names, lambda state: _trace_while(state, cond, body, carried,
                                                             captured, names))


def _truth(value: Any) -> bool | None:
    """A condition's value at trace time: a constant's, a host bool's; None when traced."""
    if isinstance(value, HostScalar):
        return bool(value.value)
    if isinstance(value, Proxy):
        return None
    return bool(value)


def _trace_while(state: TraceState, cond: Callable, body: Callable, carried: tuple,
                 captured: tuple, names: Any) -> tuple:
    loop = _Loop(state, "while", body, carried, captured, names)
    carried = tuple(carried)
    first_cond = cond(carried, captured)   # Python evaluates it first: so does the trace
    if state.in_body and type(first_cond) is HostScalar:   # (a decision holds for one
        from autojit.tracer.control import _test  # iteration of the loop around)
        first_cond = _test(first_cond)
    if not (_cond_ok(first_cond) or _plain(first_cond)):
        raise TraceError("a while condition that is not a scalar", loop.loc)
    now = _truth(first_cond)
    if now is False:
        _guard_truth(first_cond, False)
        return carried
    body_trace, keys = loop.trace(carried, None, cond, host_ok=True)
    carried, body_trace, keys = _promote(loop, carried, body_trace, keys, None, cond)
    _no_host(body_trace.results)
    if not _cond_ok(body_trace.next_cond):
        raise _Decline("a while condition that is constant inside the loop")
    if keys == loop.keys(carried):
        return _bounded_build(loop, body_trace, carried, first=first_cond)
    if now is None or (isinstance(first_cond, HostScalar) and first_cond.python_type
                       is not bool):
        raise _Decline("carried types change and the first condition is a traced value")
    again, keys_again = loop.trace(body_trace.results, None, cond)
    if keys_again != keys:
        raise _Decline("carried types keep changing")
    again.graph("while_body")   # what would decline, before the peel: after it, too late
    _guard_truth(first_cond, True)
    peeled = body(carried, captured)   # the first iteration, as Python runs it
    if loop.keys(tuple(peeled)) != keys:
        raise TraceError("the loop's first iteration traced differently twice", loop.loc)
    next_cond = cond(tuple(peeled), captured)
    if _truth(next_cond) is False:
        return tuple(peeled)
    if not _cond_ok(next_cond):
        raise TraceError("a while condition that is not a scalar", loop.loc)
    with _after_peel(loop):
        second, _ = loop.trace(tuple(peeled), None, cond)
        return _bounded_build(loop, second, tuple(peeled), first=next_cond)


class _after_peel:  # noqa: N801 (a with-block's name)
    """Once the first iteration is in the outer trace (its writes too), declining would
    make Python run the loop again from the start, that iteration twice: a decline from
    here on is the whole function's fallback."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if kind is _Decline:
            raise TraceError(f"a loop whose first iteration was traced apart cannot be a "
                             f"region: {exc}", self.loop.loc) from None
        return False


def _guard_truth(value: Any, expected: bool) -> None:
    """Guard on a host bool's value (``value - 1`` is 0 when True, -1 when False)."""
    if isinstance(value, HostScalar) and value.python_type is bool:
        _guard_nonnegative(value - 1)


def trace_if(pred: Any, then: Any, orelse: Any, carried: tuple, captured: tuple,
             names: Any) -> Any:
    """An ``if`` on a traced array scalar: both branches are traced, one after the other,
    and each carried value they leave different becomes a select (``np.where`` of the
    predicate's truth), which is exact: the value of one branch or the other, bit for bit.
    A branch's writes into arrays (``x[i] = v``, ``a += b``, ``out=``, ``a[mask] = s``)
    are predicated: each stores ``where(truth, new, old)`` into the region it writes (the
    then branch under the truth, the else branch under its negation, nested ifs under
    both), so the region keeps its old values wherever the branch does not run; the
    other branch, traced after it, reads values that differ only where its own writes are
    discarded. Branches leaving values of different types, or holding a loop, decline
    (Python runs the statement: it falls back)."""
    if not isinstance(pred, Proxy) or pred.ndim != 0:
        return NotImplemented
    return _asked("branch", names, lambda state: _trace_if(
        state, pred, then, orelse, tuple(carried), tuple(captured), names))


def _trace_if(state: TraceState, pred: Proxy, then: Callable, orelse: Callable,
              carried: tuple, captured: tuple, names: Any) -> tuple:
    trials = []
    for branch in (then, orelse):   # first in a trace of its own: can it be predicated?
        trial = _Body(state, "if", None, carried, captured)
        trials.append((trial.child, trial.run(branch, None)))
        if any(n.op is Op.REGION for n in trial.child.nodes):
            raise _Decline("a loop inside a branch (its writes cannot be predicated)")
    (a_state, a_results), (b_state, b_results) = trials
    for a, b in zip(a_results, b_results):   # (before anything is traced here: see below)
        if not _may_select(a_state, a, b_state, b):
            raise _Decline("the branches leave values of different types")
    # from here the branches trace into this graph, their writes predicated: a decline once
    # one wrote would leave the write in it while Python runs the statement again (a write
    # done twice), so the trace fails instead (the enclosing body's, or the function's)
    mark = len(state.nodes)
    try:
        truth = pred if pred.dtype == np.bool_ else np.not_equal(pred, 0)
        taken = _branch(state, lambda: truth, then, carried, captured)
        other = _branch(state, _lazy(lambda: np.logical_not(truth)), orelse, carried,
                        captured)
        if not (isinstance(taken, tuple) and isinstance(other, tuple)
                and len(taken) == len(other) == len(carried)):
            raise _Decline("the branches return another number of values")
        return tuple(_selected(state, truth, a, b) for a, b in zip(taken, other))
    except _Decline as exc:
        if not any(n.op is Op.WRITE for n in state.nodes[mark:]):
            raise   # (what it traced is pure: dead code once Python runs the statement)
        raise TraceError(f"an if on a traced value that cannot be a select once its "
                         f"branches are traced: {exc}", user_location(4)) from None


def _may_select(a_state: TraceState, a: Any, b_state: TraceState, b: Any) -> bool:
    """Whether ``_selected`` may take the two branches' values ``a`` and ``b`` (each of
    its branch's trial trace), as far as the trials tell: False for two arrays or NumPy
    scalars of different types; Python numbers, bools and constants are the select's to
    decide (a trial may leave a constant where the traced branch leaves a graph value)."""
    def numpy_value(value: Any, state: TraceState) -> bool:
        return isinstance(value, Proxy) and not is_python(value) and not value.weak and \
            value.node not in state.python_bools

    if numpy_value(a, a_state) and numpy_value(b, b_state):
        return _key(a_state, a) == _key(b_state, b)
    return True


def _selected(state: TraceState, truth: Proxy, a: Any, b: Any) -> Any:
    """``a`` where ``truth`` else ``b``, for two values of one type (a select, exact: one
    or the other, bit for bit); values of two types decline."""
    from autojit.tracer.numpy_map import make_elementwise
    if a is b:
        return a
    if _plain(a) and _plain(b) and _key(state, a) == _key(state, b):
        return a
    if _python_pair(a, b):   # Python numbers of one type, one per branch
        a, b = (pyscalars.as_python(v) for v in (a, b))
    if not (isinstance(a, Proxy) and isinstance(b, Proxy)) or _key(state, a) != _key(state, b):
        raise _Decline("the branches leave values of different types")
    python_bool = [v.node in state.python_bools for v in (a, b)]
    if python_bool[0] != python_bool[1]:
        raise _Decline("the branches leave a Python bool and a NumPy bool")
    dtype = a.dtype
    select = make_elementwise(Op.SELECT, (truth, a, b), (np.dtype(bool), dtype, dtype),
                              dtype, is_scalar=a.is_scalar)
    select.weak = a.weak
    if python_bool[0]:
        state.python_bools.add(select.node)
    return pyscalars.selected(select) if is_python(select) else select


def select_test(cond: Any) -> bool:
    """Whether ``A if cond else B`` is a select on a traced scalar (``control.select``):
    both sides are then evaluated, and nothing they do may write."""
    if not traced_scalar(cond):
        return False
    state = CURRENT_TRACE.get()
    state.select_marks.append(len(state.nodes))
    return True


def trace_select(cond: Proxy, a: Any, b: Any) -> Any:
    """``a if cond else b`` on a traced scalar: a select of the two sides (both traced;
    a side that writes, or sides of different types, run the function as Python)."""
    state = CURRENT_TRACE.get()
    start = state.select_marks.pop()
    if any(n.op in (Op.WRITE, Op.REGION) for n in state.nodes[start:]):
        raise TraceError("a conditional expression on array data whose side writes into "
                         "an array", user_location(3))
    try:
        return _selected(state, _truth_of(cond), a, b)
    except _Decline as exc:
        raise TraceError(f"a conditional expression on array data: {exc}",
                         user_location(3)) from None


def _python_pair(a: Any, b: Any) -> bool:
    """Two Python numbers of one type (``int``/``float``, not bool), at least one computed
    from traced values or the two different: their select is such a number too."""
    kind = python_type(a)
    if kind is None or kind is not python_type(b):
        return False
    return is_python(a) or is_python(b) or type(a) is HostScalar or type(b) is HostScalar \
        or (not isinstance(a, Proxy) and a != b)


# -- and/or/not and builtin max/min on traced scalars (``control.and_`` ...) ----------------
def traced_scalar(value: Any) -> bool:
    """A traced 0-d value while a trace records: its truth is a traced bool."""
    return isinstance(value, Proxy) and value.ndim == 0 and CURRENT_TRACE.get() is not None


def _truth_of(value: Proxy) -> Proxy:
    """Python's truth of a traced scalar as a traced bool (NaN is true, as in Python)."""
    return value if value.dtype == np.bool_ else np.not_equal(value, 0)


def traced_truth(op: str, left: Proxy, right: Any) -> Any:
    """The truth of ``left and right``/``left or right``/``not left`` (a test's: only its
    truth is used) for a traced scalar ``left``: one traced bool of both operands. A right
    operand that is not traced decides as Python does (its truth known now, or guarded for
    a Python scalar of the call: ``if``); an array's truth is NumPy's to refuse or not."""
    if op == "not":
        return np.logical_not(_truth_of(left))
    if isinstance(right, Proxy):
        if right.ndim != 0:
            raise TraceError("the truth of an array in a condition (and/or) is decided by "
                             "its values", user_location(3))
        combine = np.logical_and if op == "and" else np.logical_or
        return combine(_truth_of(left), _truth_of(right))
    if op == "and":
        return _truth_of(left) if right else right
    return right if right else _truth_of(left)


def trace_minmax(is_max: bool, args: tuple) -> Any:
    """Builtin ``max``/``min`` of traced scalars of one type: Python keeps the first
    operand and takes each later one that compares greater (less), which is a select per
    operand (NaN compares false: kept as Python keeps it). Operands of different types
    (the result's type would depend on the values) are Python's: NotImplemented."""
    state = CURRENT_TRACE.get()
    if state is None:
        return NotImplemented
    kinds = {python_type(a) for a in args}
    if len(kinds) == 1 and None not in kinds and any(is_python(a) for a in args):
        args = tuple(pyscalars.as_python(a) for a in args)   # Python numbers of one type
    if not all(isinstance(a, Proxy) and a.ndim == 0 and a.node not in state.python_bools
               for a in args):
        return NotImplemented
    first = args[0]
    if len({_key(state, a) for a in args}) != 1:
        return NotImplemented
    from autojit.tracer.numpy_map import make_elementwise
    best = first
    for item in args[1:]:
        pair = (item.strong(), best.strong())   # (two weak ints: NumPy's object loop)
        better = np.greater(*pair) if is_max else np.less(*pair)
        best = make_elementwise(Op.SELECT, (better, item, best),
                                (np.dtype(bool), first.dtype, first.dtype), first.dtype,
                                is_scalar=first.is_scalar)
        best.weak = first.weak
        if is_python(best):
            pyscalars.selected(best)
    return best
