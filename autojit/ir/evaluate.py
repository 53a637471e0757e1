"""Reference interpreter: runs a Graph or a Kernel with NumPy.

It is the living definition of every op: graph ops by NumPy itself, primitives by the
NumPy expression whose semantics each renderer must reproduce. Tracer, decompositions and
fusion are tested against it without any compiler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autojit.ir.graph import Graph
from autojit.ir.kernel import Instr, Kernel, Level
from autojit.ir.ops import ARG_KINDS, OP_TABLE, REDUCE_KINDS, SCAN_KINDS, Op
from autojit.ir.views import apply_view, resolve_step, view_shape


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.asarray(a).dtype.kind == "f":
        return np.true_divide(a, b)
    return (a - np.fmod(a, b)) // b


#: primitive semantics where they differ from the op's NumPy reference.
PRIMITIVE_REFS: dict[Op, Callable[..., np.ndarray]] = {
    Op.DIV: _trunc_div,
    Op.REM: np.fmod,
    Op.NOT: np.invert,
    Op.SELECT: np.where,
}


def _graph_refs(op: Op) -> Callable[..., np.ndarray]:
    return OP_TABLE[op].numpy_ref


def graph_sizes(graph: Graph, args: Sequence[Any]) -> dict[str, int]:
    """Return each size symbol's value for ``args`` (views included)."""
    sizes = {symbol: np.shape(args[sources[0][0]])[sources[0][1]]
             for symbol, sources in graph.dims}
    sizes.update(dict(graph.guards))
    sizes.update((s, args[ref]) for s, ref in graph.scalar_dims if s.__class__ is str)
    shapes: dict[int, tuple[int, ...]] = {}
    for node in graph.nodes:
        if node.op is Op.VIEW:
            base = graph.node(node.inputs[0])
            if base.op is Op.VIEW:
                shape = shapes[base.id]
            elif base.op is Op.ARG:
                shape = np.shape(args[base.attr("index")])
            else:   # a computed value (or an argument after a write): its type's shape
                shape = tuple(sizes[d] if isinstance(d, str) else d for d in base.type.shape)
            shapes[node.id] = view_shape(shape, resolve_step(node.attr("step"), args))
            for dim, size in zip(node.type.shape, shapes[node.id]):
                if isinstance(dim, str):
                    sizes.setdefault(dim, size)
    return sizes


def reduce_array(kind: str, value: np.ndarray, axes: tuple[int, ...],
                 keepdims: bool) -> np.ndarray:
    """Return NumPy's reduction ``kind`` of ``value`` over ``axes`` (argmax/argmin: the
    position in C order over those axes, as NumPy gives for one axis or a flattened array)."""
    reducer = REDUCE_KINDS[kind].numpy_ref
    if kind not in ARG_KINDS:
        return np.asarray(reducer(value, axis=axes, keepdims=keepdims))
    kept = [a for a in range(value.ndim) if a not in axes]
    moved = np.moveaxis(value, list(axes), list(range(len(kept), value.ndim)))
    flat = moved.reshape([value.shape[a] for a in kept] + [-1])
    result = reducer(flat, axis=-1)
    if keepdims:
        result = np.expand_dims(result, tuple(axes))
    return np.asarray(result, dtype=np.int64)


def scan_array(kind: str, value: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Return NumPy's ``accumulate`` of scan ``kind`` along ``axes`` taken as one axis in
    C order (several axes: the row of a flattened ``np.cumsum(x)``)."""
    ufunc = SCAN_KINDS[kind].ufunc
    value = np.asarray(value)
    if len(axes) == 1:
        return ufunc.accumulate(value, axis=axes[0], dtype=value.dtype)
    kept = [a for a in range(value.ndim) if a not in axes]
    moved = np.moveaxis(value, list(axes), list(range(len(kept), value.ndim)))
    row = int(np.prod([value.shape[a] for a in axes], dtype=np.int64))
    flat = moved.reshape([value.shape[a] for a in kept] + [row])
    scanned = ufunc.accumulate(flat, axis=-1, dtype=value.dtype).reshape(moved.shape)
    return np.moveaxis(scanned, list(range(len(kept), value.ndim)), list(axes))


def evaluate_graph(graph: Graph, args: Sequence[Any]) -> list[Any]:
    """Return the graph's outputs for ``args`` computed op by op with NumPy."""
    values: dict[int, Any] = {}
    loops: dict[int, list[Any]] = {}
    sizes = graph_sizes(graph, args)
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            dtype = node.type.dtype
            if node.op is Op.ARG:
                value = args[node.attr("index")]   # a Python scalar: converted as NumPy does
                values[node.id] = np.asarray(value, dtype=None if isinstance(
                    value, np.ndarray | np.generic) else dtype)
            elif node.op is Op.CONST:
                values[node.id] = np.asarray(node.attr("value"), dtype=dtype)
            elif node.op is Op.SIZE:
                values[node.id] = np.asarray(np.prod([sizes[s] for s in node.attr("symbols")]),
                                             dtype=dtype)
            elif node.op is Op.REGION:   # the loop, one iteration after another
                values[node.id] = np.asarray(False)
                loops[node.id] = _evaluate_region(node.attr("region"),
                                                  [values[i] for i in node.inputs])
            elif node.op is Op.CARRY:
                values[node.id] = np.asarray(loops[node.inputs[0]][node.attr("index")])
            elif node.op is Op.WRITE:   # NumPy semantics: the argument itself is updated
                if not node.attr("region"):   # (a loop wrote into it already)
                    region = values[node.inputs[0]]   # (or the scratch array, ``root``)
                    region[...] = values[node.inputs[1]]
                root = node
                while root.op in (Op.VIEW, Op.WRITE) and root.attr("root") is None:
                    root = graph.node(root.inputs[0])
                values[node.id] = values[root.attr("root", root.id)]
            elif node.op is Op.VIEW:
                values[node.id] = np.asarray(apply_view(values[node.inputs[0]],
                                                        resolve_step(node.attr("step"), args)))
            elif node.op is Op.INDEX:
                shape = tuple(sizes[d] if isinstance(d, str) else d for d in node.type.shape)
                axis = node.attr("axis")
                along = [-1 if d == axis else 1 for d in range(len(shape))]
                values[node.id] = np.broadcast_to(
                    np.arange(shape[axis], dtype=np.int64).reshape(along), shape)
            elif node.op is Op.FILL:
                shape = tuple(sizes[d] if isinstance(d, str) else d for d in node.type.shape)
                values[node.id] = np.full(shape, node.attr("value"), dtype=dtype)
            elif node.op is Op.REDUCE:
                values[node.id] = reduce_array(node.attr("kind"), values[node.inputs[0]],
                                               node.attr("axes"), node.attr("keepdims"))
            elif node.op is Op.SCAN:
                values[node.id] = scan_array(node.attr("kind"), values[node.inputs[0]],
                                             node.attr("axes"))
            elif node.op is Op.CAST:
                values[node.id] = np.asarray(values[node.inputs[0]]).astype(dtype)
            else:
                operands = [values[i] for i in node.inputs]
                values[node.id] = np.asarray(_graph_refs(node.op)(*operands))
            if values[node.id].dtype != dtype:
                raise AssertionError(
                    f"node %{node.id} {node.op.value}: NumPy gives "
                    f"{values[node.id].dtype}, graph says {dtype}")
    return [values[i] for i in graph.outputs]


def _evaluate_region(region: Any, inputs: list[Any]) -> list[Any]:
    """Return a loop region's carried values, then its private copies, after the loop."""
    from autojit.ir.host import run_prologue

    def source(kind_value: tuple[str, Any]) -> Any:
        kind, value = kind_value
        return inputs[value] if kind == "input" else value

    body, count = region.body, len(region.carried)
    current = [source(s) for s in region.sources]
    for k in (*region.private, *region.copied):
        current[k] = np.array(current[k])
    carried, captured = current[:count], current[count:]

    def step(args: list[Any]) -> list[Any]:
        return evaluate_graph(body, run_prologue(body.prologue, args) if body.prologue
                              else args)

    if region.kind == "for":
        start, stop, by = (int(source(b)) for b in region.bounds)
        exit_ = region.exit   # a break: stop after the iteration that sets its flag
        for i in range(start, stop, by):
            if exit_ >= 0 and bool(carried[exit_]):
                break
            carried = step([i, *carried, *captured])
    else:
        condition = source(region.first)
        while bool(condition):
            results = step([*carried, *captured])
            carried, condition = results[:-1], results[-1]
    return carried + [captured[k - count] for k in region.private]


def evaluate_kernel(kernel: Kernel, buffers: Sequence[np.ndarray],
                    scalars: Sequence[Any] = (), rows: int | None = None) -> None:
    """Run ``kernel`` over whole arrays: inputs broadcast to the loop shape; outputs written.

    ``buffers`` follows ``kernel.buffers``; output arrays must already have the loop shape
    (row dimensions of size 1 for outputs stored once per outer index). ``rows``: a
    sequential kernel's trip count (default: the longest buffer's).
    """
    if kernel.sequential:
        _evaluate_sequential(kernel, buffers, scalars, rows)
        return
    values: dict[int, np.ndarray] = {}
    full = np.broadcast_shapes(*(np.shape(b) for b in buffers))
    row_axes = tuple(range(len(full) - kernel.row_dims, len(full)))
    with np.errstate(all="ignore"):
        for ins in kernel.body:
            if ins.op is Op.INDEX:
                along = [-1 if d == ins.attr else 1 for d in range(len(full))]
                values[ins.id] = np.arange(full[ins.attr], dtype=np.int64).reshape(along)
                continue
            if ins.op is Op.REDUCE:
                whole = np.broadcast_to(values[ins.args[0]], full)
                values[ins.id] = reduce_array(ins.attr, whole, row_axes, True).astype(
                    ins.dtype, copy=False)
                continue
            if ins.op is Op.SCAN:
                whole = np.broadcast_to(values[ins.args[0]], full)
                values[ins.id] = scan_array(ins.attr, whole, row_axes).astype(ins.dtype,
                                                                             copy=False)
                continue
            if ins.op is Op.LOAD and ins.level == Level.OUTER:
                array = np.asarray(buffers[ins.attr])   # constant along the row dimensions
                shape = array.shape[: array.ndim - kernel.row_dims] + (1,) * kernel.row_dims
                values[ins.id] = np.lib.stride_tricks.as_strided(array, shape, array.strides)
            elif ins.op is Op.LOAD:
                values[ins.id] = np.asarray(buffers[ins.attr])
            elif ins.op is Op.STORE:
                out = buffers[ins.attr]
                out[...] = np.broadcast_to(values[ins.args[0]], out.shape)
            else:
                values[ins.id] = _scalar_op(ins, values, scalars)


def _scalar_op(ins: Instr, values: dict[int, np.ndarray], scalars: Sequence[Any]
               ) -> np.ndarray:
    """The value of an instruction that touches no buffer (a scalar parameter, a
    constant, a cast, an op through its NumPy reference), as both interpreters give it."""
    if ins.op is Op.LOAD_SCALAR:
        return np.asarray(scalars[ins.attr], dtype=ins.dtype)
    if ins.op is Op.CONST:
        return np.asarray(ins.attr, dtype=ins.dtype)
    if ins.op is Op.CAST:
        return values[ins.args[0]].astype(ins.dtype)
    ref = PRIMITIVE_REFS.get(ins.op) or OP_TABLE[ins.op].numpy_ref
    return np.asarray(ref(*(values[a] for a in ins.args))).astype(ins.dtype, copy=False)


def _evaluate_sequential(kernel: Kernel, buffers: Sequence[np.ndarray],
                         scalars: Sequence[Any], rows: int | None) -> None:
    """A sequential kernel (``Kernel.sequential``: one row loop, its iterations in order,
    a RECUR carrying a value from one to the next) element by element: iteration r reads
    and writes element r of each buffer (element 0 of one that does not walk the row:
    shape ``(1,)`` or ``()``), after every store of iteration r - 1."""
    extent = rows if rows is not None else max(
        (np.shape(b)[0] for b in buffers if np.ndim(b)), default=1)
    carried: dict[int, np.ndarray] = {}
    values: dict[int, np.ndarray] = {}

    def element(buffer: np.ndarray, r: int) -> Any:
        return (..., ) if np.ndim(buffer) == 0 else (r if np.shape(buffer)[0] > 1 else 0,)

    def run(ins: Instr, r: int) -> None:
        if ins.op is Op.RECUR:
            values[ins.id] = carried[ins.id]
        elif ins.op is Op.RECUR_SET:
            carried[ins.args[0]] = values[ins.args[1]]
        elif ins.op is Op.INDEX:
            values[ins.id] = np.asarray(r, dtype=np.int64)
        elif ins.op is Op.LOAD:
            buffer = buffers[ins.attr]
            values[ins.id] = np.asarray(buffer[element(buffer, r)], dtype=ins.dtype)
        elif ins.op is Op.STORE:
            buffer = buffers[ins.attr]
            buffer[element(buffer, r)] = values[ins.args[0]]
        else:
            values[ins.id] = _scalar_op(ins, values, scalars)

    anywhere = [ins for ins in kernel.body if ins.op in (Op.CONST, Op.LOAD_SCALAR)]
    with np.errstate(all="ignore"):
        for ins in anywhere:
            run(ins, 0)
        for ins in kernel.body:
            if ins.op is Op.RECUR:
                carried[ins.id] = values[ins.args[0]]
        row = [ins for ins in kernel.body if ins.level == Level.ROW and ins not in anywhere]
        for r in range(extent):
            for ins in row:
                run(ins, r)
        values.update(carried)   # after the row: each RECUR's last value
        for ins in kernel.body:
            if ins.level == Level.OUTER and ins not in anywhere:
                run(ins, 0)


def run_strided(kernel: Kernel, arrays: Sequence[np.ndarray], scalars: Sequence[Any],
                meta: Sequence[int]) -> None:
    """Run ``kernel`` through the reference interpreter exactly as a compiled kernel would
    address memory: each buffer viewed with the kernel's strides over the loop sizes (row
    dimensions of size 1 for buffers written once per row)."""
    extent = [int(m) for m in meta[: kernel.rank]]
    per_row = extent[: kernel.outer_rank] + [1] * kernel.row_dims
    runtime = iter(int(m) for m in meta[kernel.rank:])
    outer_stores = {ins.attr for ins in kernel.body
                    if ins.op is Op.STORE and ins.level == Level.OUTER}
    views = []
    for i, (buffer, array) in enumerate(zip(kernel.buffers, arrays, strict=True)):
        strides = [s if s is not None else next(runtime) for s in buffer.strides]
        views.append(np.lib.stride_tricks.as_strided(
            array, shape=per_row if i in outer_stores else extent,
            strides=[s * array.itemsize for s in strides], writeable=buffer.is_output))
    evaluate_kernel(kernel, views, scalars, extent[0] if kernel.sequential else None)
