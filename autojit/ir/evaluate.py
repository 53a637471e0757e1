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
from autojit.ir.kernel import Kernel
from autojit.ir.ops import OP_TABLE, Op


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


def evaluate_graph(graph: Graph, args: Sequence[Any]) -> list[Any]:
    """Return the graph's outputs for ``args`` computed op by op with NumPy."""
    values: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            dtype = node.type.dtype
            if node.op is Op.ARG:
                values[node.id] = np.asarray(args[node.attr("index")])
            elif node.op is Op.CONST:
                values[node.id] = np.asarray(node.attr("value"), dtype=dtype)
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


def evaluate_kernel(kernel: Kernel, buffers: Sequence[np.ndarray],
                    scalars: Sequence[Any] = ()) -> None:
    """Run ``kernel`` over whole arrays: inputs broadcast to the loop shape; outputs written.

    ``buffers`` follows ``kernel.buffers``; output arrays must already have the loop shape.
    """
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for ins in kernel.body:
            if ins.op is Op.LOAD:
                values[ins.id] = np.asarray(buffers[ins.attr])
            elif ins.op is Op.LOAD_SCALAR:
                values[ins.id] = np.asarray(scalars[ins.attr], dtype=ins.dtype)
            elif ins.op is Op.CONST:
                values[ins.id] = np.asarray(ins.attr, dtype=ins.dtype)
            elif ins.op is Op.CAST:
                values[ins.id] = values[ins.args[0]].astype(ins.dtype)
            elif ins.op is Op.STORE:
                out = buffers[ins.attr]
                out[...] = np.broadcast_to(values[ins.args[0]], out.shape)
            else:
                ref = PRIMITIVE_REFS.get(ins.op) or OP_TABLE[ins.op].numpy_ref
                result = ref(*(values[a] for a in ins.args))
                values[ins.id] = np.asarray(result).astype(ins.dtype, copy=False)
