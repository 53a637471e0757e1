"""``plan_buffers``: where every value of a Plan lives, and when its memory is taken and freed.

Each compute value gets one *decision*:

* ``fused``       computed inside one kernel, in registers, never stored;
* ``recomputed``  cheap or uniform arithmetic re-evaluated inside each kernel that reads it;
* ``heap``        stored: another step (kernel or BLAS call) reads it from memory;
* ``escapes``     returned to the caller (allocated), or written into an argument (no
  allocation: it is the argument's memory);
* ``view``        the same memory as another value, seen with other strides;
* ``constant``    a constant or fill, broadcast from one element.

Stored values (the Plan's ``allocations``) get a *lifetime* in plan steps: allocated just
before the step that writes them, released after the last step that reads them (never for
returned values). A value allocated after another one died takes over that dead buffer when
its byte count is the same product of size symbols with no larger item size, so the
allocator is not asked twice; an elementwise kernel whose input dies in it may write its
output over that input (in place) when both have the same type and access pattern.
``run_plan`` follows this plan exactly; the escape report (``autojit inspect -m``) prints it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from autojit.fuse.partition import memory_param
from autojit.fuse.plan import Plan
from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.types import TensorType

#: decision of graph nodes that are neither computed by a step nor stored
_LEAF_DECISIONS = {Op.CONST: "constant", Op.FILL: "constant", Op.VIEW: "view",
                   Op.REGION: "loop"}
_NOT_VALUES = (Op.ARG, Op.SIZE)


@dataclass(frozen=True)
class Allocation:
    """One stored value: allocated before step ``first`` (-1: before any step), released
    after step ``last`` (None: lives to the end of the call, e.g. returned); ``reuses`` is
    the index (in the plan's ``allocations``) of the dead value whose buffer it takes over."""

    node: int
    first: int
    last: int | None
    reuses: int | None = None
    pinned: bool = False          # a view is taken of it: allocated up front, never shared
    in_place: bool = False        # its writer reads the donor element by element as it writes


@dataclass(frozen=True)
class ValueFate:
    """What happens to one graph value (see the module docstring for ``decision``)."""

    node: int
    decision: str
    writer: str | None = None                 # step that computes it
    readers: tuple[str, ...] = ()             # other steps that read it from memory
    kernels: tuple[str, ...] = ()             # kernels that compute it (fused / recomputed)
    escape: str | None = None                 # "returned as result 0", "written into x"
    allocated: bool = False
    reuses: int | None = None                 # node id of the dead value whose buffer it takes
    dead_after: str | None = None             # step after which that buffer was free
    in_place: bool = False                    # written over the donor by the step reading it


@dataclass(frozen=True)
class BufferPlan:
    """The buffer plan of ``plan``: a fate per value, a lifetime per allocation."""

    plan: Plan
    step_names: tuple[str, ...]
    fates: tuple[ValueFate, ...]
    allocations: tuple[Allocation, ...]
    _by_node: dict[int, ValueFate] = field(default_factory=dict, compare=False, repr=False)

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    def fate(self, node_id: int) -> ValueFate:
        """The fate of ``node_id`` (indexed once: a report asks for every value's)."""
        if not self._by_node:
            self._by_node.update((f.node, f) for f in self.fates)
        return self._by_node[node_id]

    def fresh_allocations(self) -> int:
        """Return how many times a call asks the allocator for memory."""
        return sum(1 for a in self.allocations if a.reuses is None)

    def peak_bytes(self, sizes: Mapping[str, int]) -> int:
        """Return the most bytes the plan's own buffers hold at once during a call."""
        live, peak = 0, 0
        owners = _physical_owners(self.allocations)
        held = {a.node: value_bytes(self.graph.node(a.node), sizes) for a in self.allocations}
        live = sum(held[a.node] for a in self.allocations if a.first < 0)
        peak = live
        for step in range(len(self.step_names)):
            live += sum(held[a.node] for a in self.allocations
                        if a.first == step and a.reuses is None)
            peak = max(peak, live)
            live -= sum(held[owners[i]] for i, a in enumerate(self.allocations)
                        if a.last == step and not _donates(self.allocations, i))
        return peak

    def numpy_peak_bytes(self, sizes: Mapping[str, int]) -> int:
        """Return the peak of NumPy's eager evaluation of the same code, modelled from the
        graph (see ``numpy_eager_peak``): Python names may keep values alive longer, and
        temporaries inside one NumPy call are not counted."""
        return numpy_eager_peak(self.graph, sizes)


def value_bytes(node: Node, sizes: Mapping[str, int]) -> int:
    """Return the bytes of ``node``'s value for the size values ``sizes``."""
    count = math.prod(sizes[d] if isinstance(d, str) else d for d in node.type.shape)
    return count * node.type.dtype.itemsize


def bytes_formula(node: Node) -> str:
    """Return the bytes of ``node`` as a formula in its size symbols: ``4·n0·n1``."""
    return "·".join([str(node.type.dtype.itemsize), *(d for d in node.type.shape
                                                       if isinstance(d, str))])


#: NumPy's temporary elision: a Python operator whose operand is a temporary of at least
#: 256 KiB, of the result's dtype and shape, writes into it (``(x - y) ** 2`` allocates
#: once). Operands it may overwrite: the first, or either for commutative operators.
_ELIDE_BYTES = 256 * 1024
_ELIDABLE = {Op.ADD: (0, 1), Op.MUL: (0, 1), Op.AND: (0, 1), Op.OR: (0, 1), Op.XOR: (0, 1),
             Op.SUB: (0,), Op.DIV: (0,), Op.POWER: (0,), Op.FLOOR_DIVIDE: (0,),
             Op.REMAINDER: (0,)}


def _elided_into(graph: Graph, node: Node, users: dict[int, list[int]],
                 sizes: Mapping[str, int]) -> int | None:
    """Return the temporary operand NumPy would compute ``node`` in, or None."""
    for position in _ELIDABLE.get(node.op, ()):
        operand = graph.node(node.inputs[position])
        if (operand.op not in (Op.ARG, Op.CONST, Op.VIEW, Op.WRITE, Op.SIZE)
                and users[operand.id] == [node.id] and operand.id not in graph.outputs
                and operand.type == node.type
                and value_bytes(operand, sizes) >= _ELIDE_BYTES):
            return operand.id
    return None


def _numpy_results(graph: Graph, users: dict[int, list[int]]) -> set[int]:
    """Return the nodes that are the result of a NumPy call: returned, or read by code at
    another source position. The tracer spells one call (``x.std()``) as several nodes at
    one position; only the value leaving the call is an array NumPy hands back."""
    results = set(graph.outputs)
    for node in graph.nodes:
        if any(node.loc is None or graph.node(u).loc != node.loc for u in users[node.id]):
            results.add(node.id)
    return results


def numpy_eager_peak(graph: Graph, sizes: Mapping[str, int]) -> int:
    """Return the peak bytes of evaluating ``graph`` one NumPy call at a time: each call's
    result allocated (unless NumPy's temporary elision reuses an operand), freed after its
    last reader. Temporaries inside a call (``std``'s deviations) are not counted."""
    users = graph.users()
    last_use = {n.id: max(users[n.id], default=n.id) for n in graph.nodes}
    outputs, results = set(graph.outputs), _numpy_results(graph, users)
    live: dict[int, int] = {}
    peak = 0
    for node in graph.nodes:
        if node.id in results and node.op not in (Op.ARG, Op.CONST, Op.SIZE, Op.VIEW,
                                                   Op.WRITE):
            donor = _elided_into(graph, node, users, sizes)
            donor = donor if donor in live else None
            live[node.id] = live.pop(donor) if donor is not None else value_bytes(node, sizes)
        peak = max(peak, sum(live.values()))
        for done in [i for i in live if last_use[i] <= node.id and i not in outputs]:
            del live[done]
    return peak


def _donates(allocations: tuple[Allocation, ...], index: int) -> bool:
    return any(a.reuses == index for a in allocations)


def _physical_owners(allocations: tuple[Allocation, ...]) -> list[int]:
    """Return, per allocation, the node whose fresh allocation holds its memory."""
    owners: list[int] = []
    for a in allocations:
        owners.append(a.node if a.reuses is None else owners[a.reuses])
    return owners


def _step_names(plan: Plan) -> tuple[str, ...]:
    return tuple(plan.kernels[i].name if kind == "kernel"
                 else f"loop{i}" if kind == "region"
                 else f"lib{i}_{plan.libraries[i].name}" for kind, i in plan.steps)


def _step_io(plan: Plan) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Return node -> step that writes it, and node -> steps that read it from memory."""
    writes: dict[int, int] = {}
    reads: dict[int, list[int]] = {}
    for step, (kind, index) in enumerate(plan.steps):
        if kind == "kernel":
            kernel = plan.kernels[index]
            for buffer in kernel.buffers:
                if buffer.is_output:
                    writes.setdefault(buffer.value, step)
                elif step not in reads.setdefault(buffer.value, []):
                    reads[buffer.value].append(step)
        elif kind == "region":
            region = plan.regions[index]
            for carry in region.carries:
                writes.setdefault(carry, step)
            for i in region.inputs:
                if step not in reads.setdefault(i, []):
                    reads[i].append(step)
        else:
            call = plan.libraries[index]
            writes.setdefault(call.output, step)
            for i in call.inputs:
                if step not in reads.setdefault(i, []):
                    reads[i].append(step)
    return writes, reads


def _view_bases(graph: Graph) -> set[int]:
    """Return computed values some view is taken of, or written into as scratch arrays
    (their memory must stay put: later steps write and read it as their next versions)."""
    return {n.inputs[0] for n in graph.nodes if n.op is Op.VIEW} | {
        n.attr("root") for n in graph.nodes if n.op is Op.WRITE and n.attr("root") is not None}


def _returned_through_views(graph: Graph) -> set[int]:
    """Return computed values seen only through views that are themselves returned, and
    taken after the last step (a returned np.linspace): such a value lives to the end like
    a result and may take a dead buffer, rather than being pinned up front. A ``fresh``
    view's base stays pinned: its memory is made in the view's shape."""
    outputs, viewers = set(graph.outputs), {}
    for n in graph.nodes:
        if n.op is Op.VIEW:
            viewers.setdefault(n.inputs[0], []).append(n)
    return {base for base, views in viewers.items()
            if all(v.id in outputs and not v.attr("fresh") for v in views)}


def _lifetimes(plan: Plan, writes: dict[int, int],
               reads: dict[int, list[int]]) -> list[Allocation]:
    outputs, bases = set(plan.graph.outputs), _view_bases(plan.graph)
    returned = _returned_through_views(plan.graph)
    outputs |= returned
    result = []
    for node in plan.allocations:
        if node in bases and node not in returned:
            result.append(Allocation(node, -1, None, pinned=True))
            continue
        first = writes.get(node, -1)
        last = None if node in outputs else max(reads.get(node, []), default=first)
        result.append(Allocation(node, first, last))
    return result


def _monomial(node: Node) -> tuple[str, ...]:
    return tuple(sorted(d for d in node.type.shape if isinstance(d, str)))


def _literal_elements(node: Node) -> int:
    """Return the product of ``node``'s literal dims (its element count over the symbols)."""
    return math.prod(d for d in node.type.shape if not isinstance(d, str))


def _assign_reuse(plan: Plan, allocations: list[Allocation]) -> list[Allocation]:
    """Give each allocation the buffer of a value dead before its first step when the
    byte counts are the same size-symbol product and the item size fits (greedy, in step
    order, preferring the same dtype and shape); failing that, the buffer of a value its
    own elementwise kernel reads for the last time at exactly the elements it writes.
    Indexed by step so that the work grows with the number of allocations, not its square."""
    graph = plan.graph
    free: list[int] = []            # allocation indices whose buffer is dead and unclaimed
    donated: set[int] = set()
    result = list(allocations)
    starting: dict[int, list[int]] = {}
    ending: dict[int, list[int]] = {}
    for i, a in enumerate(result):
        starting.setdefault(a.first, []).append(i)
        if a.last is not None and not a.pinned:
            ending.setdefault(a.last, []).append(i)
    dying = sorted(ending)
    cursor = 0
    for step in sorted(s for s in starting if s >= 0):
        newly: list[int] = []
        while cursor < len(dying) and dying[cursor] < step:
            newly += ending[dying[cursor]]
            cursor += 1
        free += [i for i in sorted(newly) if i not in donated]
        for i in starting[step]:
            a = result[i]
            if a.pinned:
                continue
            donor = _best_donor(graph, result, free, a)
            if donor is not None:
                free.remove(donor)
                donated.add(donor)
                result[i] = Allocation(a.node, a.first, a.last, donor)
                continue
            donor = next((j for j in ending.get(step, ()) if result[j].first < step
                          and j not in donated and (a.last is not None or _root_type(
                              graph, result, j) == graph.node(a.node).type)
                          and _in_place(plan, step, result[j].node, a.node)), None)
            if donor is not None:
                donated.add(donor)
                result[i] = Allocation(a.node, a.first, a.last, donor, in_place=True)
    return result


def _in_place(plan: Plan, step: int, donor: int, taker: int) -> bool:
    """Return True when step ``step`` may write ``taker`` over ``donor``'s buffer: an
    elementwise kernel that reads ``donor`` only at the element it writes (same dtype,
    shape, strides and axes), so each element is loaded before it is overwritten."""
    kind, index = plan.steps[step]
    if kind != "kernel":
        return False   # BLAS copies an output that overlaps an input: nothing saved
    kernel = plan.kernels[index]
    if kernel.row_dims or kernel.phases != 1:
        return False
    if plan.graph.node(donor).type != plan.graph.node(taker).type:
        return False
    reads = [b for b in kernel.buffers if not b.is_output and b.value == donor]
    writes = [b for b in kernel.buffers if b.is_output and b.value == taker]
    return bool(reads) and len(writes) == 1 and all(
        (b.dtype, b.strides, b.axes) == (writes[0].dtype, writes[0].strides, writes[0].axes)
        for b in reads)


def _capacity(graph: Graph, allocations: list[Allocation], index: int) -> int:
    """Return the bytes per size-symbol product of the fresh allocation behind
    ``allocations[index]`` (its item size times its literal dims)."""
    while allocations[index].reuses is not None:
        index = allocations[index].reuses   # type: ignore[assignment]
    node = graph.node(allocations[index].node)
    return node.type.dtype.itemsize * _literal_elements(node)


def _best_donor(graph: Graph, allocations: list[Allocation], free: list[int],
                taker: Allocation) -> int | None:
    node = graph.node(taker.node)
    fits = [i for i in free
            if _monomial(graph.node(allocations[i].node)) == _monomial(node)
            and _capacity(graph, allocations, i)
            >= node.type.dtype.itemsize * _literal_elements(node)]
    same = [i for i in fits if graph.node(allocations[i].node).type == node.type]
    if taker.last is None:   # returned: only a fresh buffer of its own type is an owning array
        same = fits = [i for i in same if _root_type(graph, allocations, i) == node.type]
    return (same or fits or [None])[0]


def _root_type(graph: Graph, allocations: list[Allocation], index: int) -> TensorType:
    """Return the type of the fresh allocation behind ``allocations[index]``: a buffer taken
    over in another shape or dtype is a view of it, which a result must not be (NumPy's
    own results, temporaries elided into or not, own their memory)."""
    while allocations[index].reuses is not None:
        index = allocations[index].reuses   # type: ignore[assignment]
    return graph.node(allocations[index].node).type


def _returned(graph: Graph) -> dict[int, str]:
    result: dict[int, str] = {}
    for position, node in enumerate(graph.outputs):
        label = f"result {position}" if graph.output_tuple else "the result"
        result.setdefault(node, f"returned as {label}")
    return result


def _computing_kernels(plan: Plan) -> dict[int, tuple[str, ...]]:
    """Return node -> the kernels whose body computes it (fused or recomputed there)."""
    found: dict[int, list[str]] = {}
    for k in plan.own_kernels:
        for node_id in dict.fromkeys([*k.nodes, *(ins.node for ins in k.body)]):
            found.setdefault(node_id, []).append(k.name)
    return {n: tuple(names) for n, names in found.items()}


def _fate(plan: Plan, node: Node, names: tuple[str, ...], writes: dict[int, int],
          reads: dict[int, list[int]], allocations: dict[int, Allocation],
          returned: dict[int, str], computing: dict[int, tuple[str, ...]],
          owners: dict[int, str]) -> ValueFate:
    graph = plan.graph
    if node.op is Op.WRITE and node.attr("root") is not None:
        return ValueFate(node.id, "view", owners.get(node.id), escape=_scratch_write(graph, node))
    if node.op is Op.WRITE:
        param = graph.params[memory_param(graph, node.id)].name   # type: ignore[index]
        writer = owners.get(node.id)
        return ValueFate(node.id, "escapes", writer, escape=f"written into argument {param}")
    if node.op in _LEAF_DECISIONS and (node.id not in writes or node.op is Op.VIEW):
        # (a written region is a view a kernel stores into: still no allocation)
        kernels = computing.get(node.id, ()) if node.op is Op.FILL else ()
        return ValueFate(node.id, _LEAF_DECISIONS[node.op], kernels=kernels,
                         escape=returned.get(node.id))
    writer = names[writes[node.id]] if node.id in writes else None
    readers = tuple(names[s] for s in reads.get(node.id, []) if names[s] != writer)
    alloc = allocations.get(node.id)
    if alloc is None:
        kernels = computing.get(node.id, ())
        owned = node.id in owners
        return ValueFate(node.id, "fused" if owned else "recomputed", kernels=kernels)
    donor = None if alloc.reuses is None else plan.allocations[alloc.reuses]
    dead_after = None
    if donor is not None:
        dead_after = names[allocations[donor].last]   # type: ignore[index]
    decision = "escapes" if node.id in returned else "heap"
    return ValueFate(node.id, decision, writer, readers, escape=returned.get(node.id),
                     allocated=True, reuses=donor, dead_after=dead_after,
                     in_place=alloc.in_place)


def _scratch_write(graph: Graph, node: Node) -> str:
    """How a write into a scratch array is done, in words: in place in the array's buffer
    (the tracer made every later read see the new version), or into a copy the tracer made
    first (the array was also another value: two equal computations were one node)."""
    root = graph.node(node.attr("root"))
    if root.op is Op.CAST and root.attr("scratch_copy") is not None:
        return (f"written in place into scratch array %{root.id}, a copy of "
                f"%{root.inputs[0]} (copied: that node is also another value, an equal "
                "computation)")
    return f"written in place into scratch array %{root.id}"


def plan_buffers(plan: Plan) -> BufferPlan:
    """Return the buffer plan of ``plan`` (cached on the plan)."""
    cached = plan.schedule_cache.get("buffer_plan")
    if cached is not None:
        return cached
    graph = plan.graph
    names = _step_names(plan)
    writes, reads = _step_io(plan)
    allocations = tuple(_assign_reuse(plan, _lifetimes(plan, writes, reads)))
    by_node = {a.node: a for a in allocations}
    returned = _returned(graph)
    computing = _computing_kernels(plan)
    owners: dict[int, str] = {}
    for kernel in plan.own_kernels:
        for node_id in kernel.nodes:
            owners.setdefault(node_id, kernel.name)
    fates = tuple(_fate(plan, n, names, writes, reads, by_node, returned, computing, owners)
                  for n in graph.nodes if n.op not in _NOT_VALUES)
    result = BufferPlan(plan, names, fates, allocations)
    plan.schedule_cache["buffer_plan"] = result
    return result


def kernel_nest(kernel: Kernel) -> str:
    """Return a kernel's loop nest in words: ``[n0,n1,n2] reducing the last 2``."""
    shape = ",".join("*".join(p) or "1" for p in kernel.loop_sizes)
    if not kernel.row_dims:
        return f"elementwise over [{shape}]"
    return f"[{shape}] reducing the last {kernel.row_dims} in {kernel.phases} pass(es)"


__all__ = ["Allocation", "BufferPlan", "ValueFate", "bytes_formula", "kernel_nest",
           "numpy_eager_peak", "plan_buffers", "value_bytes"]
