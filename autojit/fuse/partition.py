"""``partition_graph``: group a Graph's compute nodes into kernels.

Rules (elementwise graphs):

* nodes that iterate over the same symbolic shape and are connected fuse into one kernel,
  at most ``max_ops`` graph ops each (split in topological order beyond that);
* *uniform* nodes (every dimension is 1, e.g. arithmetic on scalar arguments), and cheap
  nodes of a smaller shape that only feed broadcasts (``x.astype(f64)`` added to a matrix),
  are recomputed inside each kernel that reads them instead of being stored;
* a value read by another kernel, or returned, is stored to memory ("materialised").
"""

from __future__ import annotations

from dataclasses import dataclass

from autojit.ir.graph import Graph, Node
from autojit.ir.ops import Op

LEAF_OPS = (Op.ARG, Op.CONST)

#: ops cheap enough to recompute per broadcast element rather than store and reload.
CHEAP_OPS = frozenset({
    Op.CAST, Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.POSITIVE, Op.ABSOLUTE, Op.FABS,
    Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.AND, Op.OR, Op.XOR, Op.NOT, Op.SELECT,
    Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR, Op.LOGICAL_NOT, Op.MAXIMUM, Op.MINIMUM,
    Op.ISNAN, Op.SQUARE,
})


@dataclass(frozen=True)
class Group:
    """Graph nodes computed by one kernel, in topological order, over ``shape``."""

    nodes: tuple[int, ...]
    shape: tuple


def is_uniform(node: Node) -> bool:
    """Return True for a value with one element per call (all dims literal 1)."""
    return all(d == 1 for d in node.type.shape)


def _component_roots(graph: Graph, compute: list[Node]) -> dict[int, int]:
    parent = {n.id: n.id for n in compute}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_reader: dict[tuple, int] = {}
    for node in compute:
        for i in node.inputs:
            if i in parent and graph.node(i).type.shape == node.type.shape:
                parent[find(i)] = find(node.id)
            # siblings over the same shape that read the same value share one pass over it
            sibling = first_reader.setdefault((i, node.type.shape), node.id)
            if graph.node(i).op is not Op.CONST:
                parent[find(sibling)] = find(node.id)
    return {n.id: find(n.id) for n in compute}


def inlined_nodes(graph: Graph) -> set[int]:
    """Return compute nodes recomputed inside their readers' kernels instead of stored."""
    outputs, users = set(graph.outputs), graph.users()
    inlined: set[int] = set()
    for node in reversed(graph.nodes):
        if node.op in LEAF_OPS or node.id in outputs:
            continue
        readers = [graph.node(u) for u in users[node.id]]
        feeds_broadcasts = all(r.id in inlined or r.type.shape != node.type.shape
                               for r in readers)
        if is_uniform(node) or (node.op in CHEAP_OPS and readers and feeds_broadcasts):
            inlined.add(node.id)
    return inlined


def partition_graph(graph: Graph, max_ops: int) -> list[Group]:
    """Return the kernels' node groups in an order that respects dependencies."""
    inlined = inlined_nodes(graph)
    compute = [n for n in graph.nodes if n.op not in LEAF_OPS and n.id not in inlined]
    roots = _component_roots(graph, compute)
    components: dict[int, list[int]] = {}
    for node in compute:
        components.setdefault(roots[node.id], []).append(node.id)
    groups = [
        Group(tuple(ids[start:start + max_ops]), graph.node(ids[0]).type.shape)
        for ids in components.values()
        for start in range(0, len(ids), max(1, max_ops))
    ]
    return _topological(graph, groups)


def _topological(graph: Graph, groups: list[Group]) -> list[Group]:
    owner = {n: g for g, group in enumerate(groups) for n in group.nodes}

    def producers(node_id: int, seen: set[int]) -> set[int]:
        """Groups feeding node_id, looking through inlined uniform nodes."""
        result: set[int] = set()
        for i in graph.node(node_id).inputs:
            if i in owner:
                result.add(owner[i])
            elif i not in seen:
                seen.add(i)
                result |= producers(i, seen)
        return result

    deps = {g: set().union(*(producers(n, set()) for n in group.nodes)) - {g}
            for g, group in enumerate(groups)}
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(groups):
        ready = [g for g in range(len(groups)) if g not in done and deps[g] <= done]
        if not ready:
            raise AssertionError("kernel dependency cycle")  # impossible for elementwise graphs
        order.append(ready[0])
        done.add(ready[0])
    return [groups[g] for g in order]
