"""``split_reductions``: let a wide reduction ride along a narrower one's pass.

A kernel reduces one set of row axes R. A reduction over more axes A ⊋ R of a value that
is computed in an R-reduction's kernel (the MSE of a per-image normalisation: the images'
mean and std reduce (H, W), the error is summed over (B, H, W)) would otherwise force that
value to memory and a second kernel to read it back. Reducing over R first, inside the
producing kernel, and then over the rest in a tiny kernel on the per-row partials keeps the
value in registers::

    reduce(v, A)  ->  reduce(reduce(v, R, keepdims=True), A)

Only associative kinds are split (integer sums and products, min/max, any/all; float sums
and products keep NumPy's order, ``ops.ordered_reduction``), and only when an earlier
reduction over the same shape with axes R is an ancestor of ``v``: that is the kernel ``v``
joins. The result is exactly the one-pass result.
"""

from __future__ import annotations

from dataclasses import replace

from autojit.ir.graph import Graph, Node
from autojit.ir.ops import Op, ordered_reduction
from autojit.ir.types import TensorType

#: reduction kinds for which reducing in two stages gives the same result (exactly, for
#: the dtypes ``ops.ordered_reduction`` leaves)
ASSOCIATIVE_KINDS = frozenset({"add", "mul", "max", "min", "fmax", "fmin", "or", "and"})


def _reductions_upstream(graph: Graph) -> dict[int, frozenset[tuple]]:
    """Return, per node, the (input shape, axes) of every reduction it is computed from
    (itself included), built in one topological pass: inputs share their sets."""
    upstream: dict[int, frozenset[tuple]] = {}
    for node in graph.nodes:
        sets = {upstream[i] for i in node.inputs}
        found = frozenset().union(*sets) if len(sets) > 1 else next(iter(sets), frozenset())
        if node.op is Op.REDUCE:
            found = found | {(graph.node(node.inputs[0]).type.shape, node.attr("axes"))}
        upstream[node.id] = found
    return upstream


def _row_axes_to_share(graph: Graph, reduce: Node, upstream: dict[int, frozenset[tuple]],
                       order: dict[tuple, int]) -> tuple[int, ...] | None:
    """Return the axes R of the widest earlier reduction ``reduce`` can share a pass with
    (among equally wide ones, the kind the graph reduces first)."""
    source = graph.node(reduce.inputs[0])
    axes = set(reduce.attr("axes"))
    best: tuple[int, ...] | None = None
    for shape, row_axes in sorted(upstream[source.id], key=order.__getitem__):
        if (shape == source.type.shape and set(row_axes) < axes
                and (best is None or len(row_axes) > len(best))):
            best = row_axes
    return best


def split_reductions(graph: Graph) -> Graph:
    """Return ``graph`` with wide reductions split as the module docstring says (the same
    graph object when nothing splits)."""
    if not any(n.op is Op.REDUCE for n in graph.nodes):
        return graph
    upstream = _reductions_upstream(graph)
    order: dict[tuple, int] = {}
    for node in graph.nodes:
        if node.op is Op.REDUCE:
            order.setdefault((graph.node(node.inputs[0]).type.shape, node.attr("axes")), node.id)
    splits: dict[int, tuple[int, ...]] = {}
    for node in graph.nodes:
        if node.op is Op.REDUCE and node.attr("kind") in ASSOCIATIVE_KINDS and \
                not ordered_reduction(node.attr("kind"), node.type.dtype):
            row_axes = _row_axes_to_share(graph, node, upstream, order)
            if row_axes is not None:
                splits[node.id] = row_axes
    if not splits:
        return graph
    new_id: dict[int, int] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        inputs = tuple(new_id[i] for i in node.inputs)
        if node.id in splits:
            row_axes = splits[node.id]
            shape = tuple(1 if a in row_axes else d
                          for a, d in enumerate(graph.node(node.inputs[0]).type.shape))
            attrs = tuple((k, row_axes if k == "axes" else True if k == "keepdims" else v)
                          for k, v in node.attrs)
            nodes.append(Node(len(nodes), Op.REDUCE, inputs,
                              TensorType(node.type.dtype, shape), node.loc, attrs))
            inputs = (len(nodes) - 1,)
        new_id[node.id] = len(nodes)
        nodes.append(replace(node, id=len(nodes), inputs=inputs))
    return replace(graph, nodes=tuple(nodes), outputs=tuple(new_id[o] for o in graph.outputs),
                   _by_id={})
