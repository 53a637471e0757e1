"""A loop region whose body is scalar work, as ONE kernel: the loop is the kernel's row loop.

``for i in range(start, stop, step)`` whose body computes only 0-d values (carried scalars,
captured scalars, element reads ``v[i]``, ``A[i, i]``, ``A[i, j]`` and element writes
``y[i] = ...`` through the index or an affine form of it (``x[i - 1]``), a captured int or
a constant) runs as a kernel of one
loop dimension of the trip count (``NativeLoop.trip``, bound per call by the runner):

- a carried value is a recurrence (``RECUR`` of its start, a scalar parameter, and
  ``RECUR_SET`` of the body's result; ``ir.kernel`` "Recurrences"), stored after the loop
  into a 0-d result of its own;
- an element access is a LOAD/STORE of a buffer with a runtime stride along the loop: the
  runner passes a 1-d strided view of the array (``Access``: its first element and the
  sum of the strides the index walks times the step), so a write and later reads of the
  same array share memory (the buffers carry one ``value``: no ``noalias``, loads and
  stores stay in program order, iteration after iteration).

The kernel's row runs in loop order (a recurrence is never split across threads or
reassociated), so sums add in Python's order exactly as the host loop does. Anything
else in the body (an array value, a reduction, a library call, a nested loop, a Python
scalar the body's prologue computes other than an affine form of the index: ``x[i * i]``)
keeps the host loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.fuse.builder import KernelBuilder
from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel, Level
from autojit.ir.ops import OP_TABLE, Op, OpGroup
from autojit.ir.region import Region
from autojit.ir.verify import check_kernel
from autojit.ir.views import ScalarRef

#: graph ops a scalar body may compute (elementwise on 0-d values)
_ELEMENTWISE = (OpGroup.UNARY, OpGroup.BINARY, OpGroup.TERNARY, OpGroup.COMPARE, OpGroup.CAST)


@dataclass(frozen=True)
class Access:
    """One buffer of the kernel that is an element of body parameter ``param`` per
    iteration: ``key`` (one part per axis) holds ints (constants), ``("affine", scale,
    offset)`` (``scale * i + offset`` of the loop index ``i``) or ``("param", k)`` (a
    captured Python int, body parameter k)."""

    param: int
    key: tuple[Any, ...]


@dataclass(frozen=True)
class NativeLoop:
    """The kernel of a scalar loop region and what the runner binds for it: ``trip`` (the
    size symbol of its one loop), per buffer its source (``("access", Access)``, ``("param",
    k)``: a 0-d body parameter read whole, ``("carried", j)``: the j-th carried result),
    per scalar parameter the body parameter it reads (the carried starts, captured scalars,
    ``-1``: the loop's start, ``-2``: its step)."""

    kernel: Kernel
    trip: str
    buffers: tuple[tuple[str, Any], ...]
    scalars: tuple[int, ...]


class _NotScalar(Exception):
    """The body is not scalar work: the region keeps its host loop."""


def native_loop(region: Region, name: str) -> NativeLoop | None:
    """Return the region as one kernel, or None when its body is not scalar work. A loop
    with a ``break`` (``Region.exit``) is guarded on its flag: an iteration that starts
    with it set keeps every carried value and stores back what each element it writes
    held, so a range run on past the break computes what stopping there does (the runner
    launches it on doubling pieces of the range, stopping after the piece that breaks)."""
    if region.kind != "for" or region.copied:
        return None
    try:
        return _Emitter(region, name).emit()
    except _NotScalar:
        return None


#: prologue steps of the loop index that stay affine (``i + 1``, ``2 * i - 3``, ``-i``)
_AFFINE = {"add": lambda x, y: (x[0] + y[0], x[1] + y[1]),
           "sub": lambda x, y: (x[0] - y[0], x[1] - y[1]),
           "neg": lambda x: (-x[0], -x[1]), "pos": lambda x: x,
           "mul": lambda x, y: (x[0] * y[1], x[1] * y[1]) if y[0] == 0 else (
               (y[0] * x[1], x[1] * y[1]) if x[0] == 0 else None)}
_AFFINE_BOUND = 2 ** 31   # scale and offset: Python's ints, exact in int64 for any index


def _affine_steps(graph: Graph) -> dict[int, tuple[int, int]]:
    """{body parameter: (scale, offset)} of the index and its affine prologue values (int
    results of ints); any other prologue step makes the body not scalar work."""
    affine = {0: (1, 0)}
    first = len(graph.params) - len(graph.prologue)
    for j, step in enumerate(graph.prologue):
        operands = []
        for kind, value in step.operands:
            if kind == "ref" and value in affine:
                operands.append(affine[value])
            elif kind == "const" and type(value) is int:
                operands.append((0, value))
            else:
                raise _NotScalar
        rule = _AFFINE.get(step.op)
        form = rule(*operands) if rule is not None and step.result_type == "int" else None
        if form is None or max(abs(form[0]), abs(form[1])) >= _AFFINE_BOUND:
            raise _NotScalar
        affine[first + j] = form
    return affine


class _Emitter:
    def __init__(self, region: Region, name: str) -> None:
        self.region, self.graph = region, region.body
        self.trip = f"{name}_trip"
        self.kb = KernelBuilder(name, ((self.trip,),))
        self.kb.position(Level.ROW, 0)
        self.buffers: list[tuple[str, Any]] = []
        self.scalars: list[int] = []
        self.scalar_keys: list[tuple[int, np.dtype]] = []
        self.values: dict[int, int] = {}
        self.recurs: dict[int, int] = {}   # carried body parameter -> its RECUR
        self.args = {n.attr("index"): n.id for n in self.graph.nodes if n.op is Op.ARG}
        self.affine = _affine_steps(self.graph)
        self.guard: int | None = None   # the break flag as the iteration starts

    def _scalar(self, param: int, dtype: np.dtype) -> int:
        """A scalar parameter holding body parameter ``param`` in ``dtype`` (a Python int
        the body uses as a float is passed as one, as the host loop's kernels take it)."""
        key = (param, np.dtype(dtype))
        if key not in self.scalar_keys:
            self.scalar_keys.append(key)
            self.scalars.append(param)
            self.kb.add_scalar(f"s{len(self.scalars) - 1}", dtype)
        return self.kb.load_scalar(self.scalar_keys.index(key))

    def _buffer(self, source: tuple[str, Any], dtype: np.dtype, strides: tuple, value: int,
                output: bool = False) -> int:
        self.buffers.append(source)
        name = f"{'out' if output else 'in'}{len(self.buffers) - 1}"
        return self.kb.add_buffer(name, dtype, strides, output, value)

    def _key(self, node: Node) -> tuple[int, tuple[Any, ...]]:
        """The element a 0-d VIEW reads: (body parameter, key); else not scalar work. The
        buffers of one parameter hold its ARG's id (``Buffer.value``): the same memory."""
        base = self.graph.node(node.inputs[0])
        name, key = node.attr("step")
        if base.op is not Op.ARG or name != "getitem" or node.type.shape:
            raise _NotScalar
        param = base.attr("index")
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(base.type.shape) or self.graph.params[param].kind != "array":
            raise _NotScalar
        parts: list[Any] = []
        for part in key:
            if part.__class__ is ScalarRef and part.index in self.affine:
                parts.append(("affine", *self.affine[part.index]))
            elif part.__class__ is ScalarRef and self.graph.params[part.index].kind == "scalar":
                parts.append(("param", part.index))
            elif type(part) is int:
                parts.append(part)
            else:
                raise _NotScalar
        return param, tuple(parts)

    def _param_of(self, param: int, dtype: np.dtype | None = None) -> int:
        """Body parameter ``param`` (an ARG, of ``dtype``: a Python scalar's ARG has the
        dtype its use converts it to) as a value of the kernel."""
        kind = self.graph.params[param].kind
        dtype = self.graph.params[param].type.dtype if dtype is None else dtype
        if param in self.affine:   # scale * (start + t * step) + offset, Python's int
            i64 = np.dtype(np.int64)
            t = self.kb.emit(Op.INDEX, (), i64, 0)
            scaled = self.kb.emit(Op.MUL, (t, self._scalar(-2, i64)), i64)
            index = self.kb.emit(Op.ADD, (scaled, self._scalar(-1, i64)), i64)
            scale, offset = self.affine[param]
            value = self.kb.emit(Op.ADD, (self.kb.emit(Op.MUL, (index, self.kb.const(
                scale, i64)), i64), self.kb.const(offset, i64)), i64)
            return self.kb.cast(value, dtype)   # np.array(i, dtype): the nearest value
        carried = len(self.region.carried)
        if param <= carried:
            if self.graph.params[param].type.shape:
                raise _NotScalar
            if param not in self.recurs:
                self.recurs[param] = self.kb.recur(self._scalar(param, dtype), dtype)
            return self.recurs[param]
        if kind == "scalar":
            return self._scalar(param, dtype)
        if self.graph.params[param].type.shape:
            raise _NotScalar   # a whole array in scalar work: only element reads
        buffer = self._buffer(("param", param), dtype, (0,), self.args[param])
        return self.kb.load(buffer)

    def _node(self, node: Node) -> int | None:
        kb, op = self.kb, node.op
        kb.current_node = node.id
        if op is Op.ARG:
            param = node.attr("index")
            if self.graph.params[param].type.shape:   # read through its element views only
                return None
            if param <= len(self.region.carried) and param and \
                    node.type.dtype != self.graph.params[param].type.dtype:
                raise _NotScalar
            return self._param_of(param, node.type.dtype)
        if op is Op.CONST:
            if node.type.shape:
                raise _NotScalar
            return kb.const(node.attr("value"), node.type.dtype)
        if op is Op.VIEW:
            param, key = self._key(node)
            strides = (None,)
            buffer = self._buffer(("access", Access(param, key)), node.type.dtype, strides,
                                  self.args[param])
            return kb.load(buffer)
        if op is Op.WRITE:
            region_view = self.graph.node(node.inputs[0])
            if region_view.op is not Op.VIEW:
                raise _NotScalar
            param, key = self._key(region_view)
            dtype = region_view.type.dtype
            value = kb.cast(self.values[node.inputs[1]], dtype)
            if self.guard is not None:   # after the break: the element as it was
                old = kb.load(self._buffer(("access", Access(param, key)), dtype, (None,),
                                           self.args[param]))
                value = kb.graph_op(Op.SELECT, (self.guard, old, value), dtype, {})
            buffer = self._buffer(("access", Access(param, key)), dtype, (None,),
                                  self.args[param], output=True)
            kb.store(buffer, value)
            return None
        info = OP_TABLE.get(op)
        if info is None or info.group not in _ELEMENTWISE or node.type.shape:
            raise _NotScalar
        operands = tuple(self.values[i] for i in node.inputs)
        # a select's condition is a bool (a branch on array data: ``tracer/regions.py``)
        kinds = {kb.dtype_of(v) for v in (operands[1:] if op is Op.SELECT else operands)}
        if op is not Op.CAST and len(kinds - {node.type.dtype}) > (
                info.group is OpGroup.COMPARE):   # mixed dtypes: the host loop's kernels
            raise _NotScalar
        if op is Op.CAST:
            return kb.cast(operands[0], node.type.dtype)
        return kb.graph_op(op, operands, node.type.dtype, dict(node.attrs))

    def emit(self) -> NativeLoop:
        graph = self.graph
        if self.region.exit >= 0:
            flag = 1 + self.region.exit
            if graph.params[flag].type.dtype != np.bool_:
                raise _NotScalar
            self.guard = self._param_of(flag)
        written: set[int] = set()
        for node in graph.nodes:
            if any(i not in self.values and graph.node(i).op is not Op.ARG
                   and graph.node(i).op is not Op.VIEW for i in node.inputs):
                raise _NotScalar
            if node.op is Op.WRITE:   # one write per array: later reads see memory
                param = graph.node(graph.node(node.inputs[0]).inputs[0]).attr("index")
                if param in written:
                    raise _NotScalar
                written.add(param)
            elif node.op is Op.VIEW and graph.node(node.inputs[0]).op is not Op.ARG:
                raise _NotScalar
            value = self._node(node)
            if value is not None:
                self.values[node.id] = value
        carried = len(self.region.carried)
        results = []
        for j, output in enumerate(graph.outputs[:carried]):
            param, node = 1 + j, graph.node(output)
            if node.type.shape or output not in self.values:
                raise _NotScalar
            recur = self._param_of(param)
            dtype = graph.params[param].type.dtype
            if node.type.dtype != dtype:
                raise _NotScalar
            self.kb.position(Level.ROW, 0)
            value = self.values[output]
            if self.guard is not None:   # after the break: as it was
                value = self.kb.graph_op(Op.SELECT, (self.guard, recur, value), dtype, {})
            self.kb.recur_set(recur, value)
            results.append((j, recur, dtype))
        self.kb.position(Level.OUTER, 0)
        for j, recur, dtype in results:
            buffer = self._buffer(("carried", j), dtype, (0,), -1, output=True)
            self.kb.store(buffer, recur)
        kernel = check_kernel(self.kb.finish(tuple(n.id for n in graph.nodes), 1))
        return NativeLoop(kernel, self.trip, tuple(self.buffers), tuple(self.scalars))
