"""``plan_kernels``: turn partition groups into Kernels plus the per-call buffer plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from autojit.fuse.builder import KernelBuilder
from autojit.fuse.partition import LEAF_OPS, Group, partition_graph
from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.types import Dim

DEFAULT_MAX_OPS = 128


@dataclass(frozen=True)
class Plan:
    """Kernels in launch order and the values each call allocates (intermediates, results)."""

    graph: Graph
    kernels: tuple[Kernel, ...]
    allocations: tuple[int, ...]
    schedule_cache: dict = field(default_factory=dict, compare=False, repr=False)


def _materialised(graph: Graph, groups: list[Group]) -> list[int]:
    """Return nodes that must live in memory: returned, or read by another kernel."""
    owner = {n: g for g, group in enumerate(groups) for n in group.nodes}
    needed = {o for o in graph.outputs if o in owner}
    for node in graph.nodes:
        reader = owner.get(node.id)
        for i in node.inputs:
            if i in owner and reader is not None and owner[i] != reader:
                needed.add(i)
    # Uniform nodes inlined elsewhere read grouped values only through other uniform nodes,
    # which are grouped only when returned (already needed).
    return [n.id for n in graph.nodes if n.id in needed]


class _KernelEmitter:
    """Emits one group's nodes into a KernelBuilder, loading everything else it reads."""

    def __init__(self, graph: Graph, group: Group, name: str, in_memory: set[int],
                 contiguous: Sequence[bool]) -> None:
        self.graph, self.group, self.in_memory = graph, group, in_memory
        self.contiguous = contiguous
        self.members = set(group.nodes)
        self.collapsed = self._can_collapse()
        shape = group.shape
        if self.collapsed:
            loop_sizes = (tuple(d for d in shape if d != 1),)
        else:
            loop_sizes = tuple((d,) if d != 1 else () for d in shape) or ((),)
        self.kb = KernelBuilder(name, loop_sizes)
        self.values: dict[int, int] = {}

    def _is_contiguous(self, node: Node) -> bool:
        if node.op is Op.ARG:
            return self.contiguous[node.attr("index")]
        return True  # values autojit allocates are C-contiguous

    def _reads(self) -> list[Node]:
        """Return the nodes this kernel reads, looking through nodes it recomputes."""
        pending = [i for n in self.group.nodes for i in self.graph.node(n).inputs]
        seen: set[int] = set()
        while pending:
            node_id = pending.pop()
            if node_id in seen or node_id in self.members:
                continue
            seen.add(node_id)
            node = self.graph.node(node_id)
            if node.op not in LEAF_OPS and node_id not in self.in_memory:
                pending.extend(node.inputs)
        return [self.graph.node(i) for i in sorted(seen)]

    def _can_collapse(self) -> bool:
        """A loop nest over contiguous, unbroadcast buffers is one flat loop."""
        return all(self._flat(n) for n in self._reads() if self._is_buffer(n))

    def _flat(self, node: Node) -> bool:
        full = node.type.shape == self.group.shape
        return (full and self._is_contiguous(node)) or all(d == 1 for d in node.type.shape)

    def _is_buffer(self, node: Node) -> bool:
        if node.id in self.in_memory:
            return True
        return node.op is Op.ARG and self.graph.params[node.attr("index")].kind == "array"

    def strides(self, shape: tuple[Dim, ...], contiguous: bool) -> tuple[int | None, ...]:
        """Return per-loop-dim element strides: 0 broadcast, 1 contiguous inner, None runtime."""
        if self.collapsed:
            return (0,) if all(d == 1 for d in shape) else (1,)
        rank = len(self.kb.loop_sizes) if self.group.shape else 1
        result: list[int | None] = []
        for d in range(rank):
            axis = d - (len(self.group.shape) - len(shape))
            if axis < 0 or shape[axis] == 1:
                result.append(0)
            elif axis == len(shape) - 1 and contiguous:
                result.append(1)
            else:
                result.append(None)
        return tuple(result)

    def value(self, node_id: int) -> int:
        """Return the instruction holding ``node_id`` inside this kernel."""
        if node_id in self.values:
            return self.values[node_id]
        node = self.graph.node(node_id)
        if node.op is Op.CONST:
            result = self.kb.const(node.attr("value"), node.type.dtype)
        elif self._is_buffer(node) and node_id not in self.members:
            strides = self.strides(node.type.shape, self._is_contiguous(node))
            index = len(self.kb.buffers)
            result = self.kb.load(self.kb.add_buffer(f"in{index}", node.type.dtype, strides,
                                                     value=node_id))
        elif node.op is Op.ARG:
            param = self.kb.add_scalar(self.graph.params[node.attr("index")].name,
                                       node.type.dtype, value=node_id)
            result = self.kb.load_scalar(param)
        else:
            result = self.compute(node)
        self.values[node_id] = result
        return result

    def compute(self, node: Node) -> int:
        operands = tuple(self.value(i) for i in node.inputs)
        self.kb.current_node = node.id
        if node.op is Op.CAST:
            return self.kb.cast(operands[0], node.type.dtype)
        return self.kb.graph_op(node.op, operands, node.type.dtype)

    def emit(self) -> Kernel:
        for node_id in self.group.nodes:
            self.value(node_id)
        stored = [n for n in self.group.nodes if n in self.in_memory]
        for position, node_id in enumerate(stored):
            node = self.graph.node(node_id)
            buffer = self.kb.add_buffer(f"out{position}", node.type.dtype,
                                        self.strides(node.type.shape, True), True, node_id)
            self.kb.current_node = node_id
            self.kb.store(buffer, self.values[node_id])
        return self.kb.finish(self.group.nodes)


def plan_kernels(graph: Graph, contiguous: Sequence[bool],
                 max_ops: int = DEFAULT_MAX_OPS) -> Plan:
    """Partition ``graph`` and emit one Kernel per group.

    ``contiguous[i]`` says whether parameter i is a C-contiguous array (from the signature).
    """
    groups = partition_graph(graph, max_ops)
    allocations = _materialised(graph, groups)
    in_memory = set(allocations)
    kernels = []
    for index, group in enumerate(groups):
        first = graph.node(group.nodes[0])
        name = f"k{index}_{first.op.value}"
        kernels.append(_KernelEmitter(graph, group, name, in_memory, contiguous).emit())
    return Plan(graph, tuple(kernels), tuple(allocations))


__all__ = ["DEFAULT_MAX_OPS", "LEAF_OPS", "Plan", "plan_kernels"]
