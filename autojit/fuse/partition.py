"""``partition_graph``: group a Graph's compute nodes into kernels.

A group iterates over one *full shape* F. An elementwise group has no row axes; a
reduction group reduces the *row axes* R of F and may hold several passes (phases) over
each row. Rules, applied greedily in topological order:

* an elementwise node joins a group of one of its inputs when it iterates over F (a *row*
  value) or over the reduced shape — F with R set to 1 ("keep" form) or dropped ("drop"
  form) — (an *outer* value, once per row);
* a row value that reads an outer value of its group runs in a later phase (softmax:
  max, then the sum of exponentials, then the division); row values needed by a later
  phase are recomputed there rather than stored;
* a reduction joins the group of its input (turning an elementwise group over F into a
  reduction group), or a group over the same F and R: producers fuse into reductions and
  sibling reductions of one input share its pass;
* a node reading only memory (views, arguments) and constants first tries the open groups
  reading views of the same memory (heat's ``4 * u[1:-1, 1:-1]`` joins the sum of the
  other views of ``u``) before it starts a kernel of its own;
* a scan (``np.cumsum``) joins like a reduction but runs at row level, so its consumers
  over F follow it in the same pass; a scan reading a scan of the group is refused (it
  starts a kernel of its own: the first scan is stored);
* *uniform* nodes (every dimension 1) and cheap nodes of a smaller shape that only feed
  broadcasts are recomputed inside each reader instead of being stored;
* a value read by another kernel, or returned, is stored ("materialised"); at most
  ``max_ops`` graph ops per kernel, and at most twice that many ops emitted (a later pass
  recomputes the row values it reads); a join that would make kernels depend on each other
  in a cycle is refused.

Every step is bounded per node (indexed readers and ancestor sets, a few sibling
candidates, iterative walks), so partitioning is linear in the graph's size.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from autojit.errors import InternalError
from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Level
from autojit.ir.ops import Op

LEAF_OPS = (Op.ARG, Op.CONST, Op.SIZE, Op.VIEW)   # VIEW: stored memory seen with other strides

#: ops that are never recomputed inside a reader: they run along rows, write memory, or
#: are a library call (BLAS writes its result into memory; kernels have no matmul)
ROW_OPS = (Op.REDUCE, Op.SCAN, Op.WRITE, Op.MATMUL, Op.REGION, Op.CARRY)

#: ops a library call computes (a step of its own, never an instruction of a kernel)
LIBRARY_OPS = (Op.MATMUL, Op.REGION)

#: what a REGION step computes besides itself: its CARRYs and region WRITEs join its group
REGION_RESULTS = (Op.CARRY,)

#: readers that need their input stored in memory (not recomputed inside them)
NEEDS_MEMORY = frozenset({Op.REDUCE, Op.MATMUL, Op.WRITE, Op.VIEW, Op.REGION})

#: ops cheap enough to recompute per broadcast element rather than store and reload.
CHEAP_OPS = frozenset({
    Op.CAST, Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.POSITIVE, Op.ABSOLUTE, Op.FABS,
    Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.AND, Op.OR, Op.XOR, Op.NOT, Op.SELECT,
    Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR, Op.LOGICAL_NOT, Op.MAXIMUM, Op.MINIMUM,
    Op.ISNAN, Op.SQUARE,
})


class Form(enum.StrEnum):
    """The shape of a value in a reduction group (the values are today's strings)."""

    FULL = "full"      # the group's full shape F
    KEEP = "keep"      # an outer value: F with the reduced axes R as 1 (keepdims)
    DROP = "drop"      # an outer value: F without R


@dataclass(frozen=True)
class Placement:
    """Where a node runs in its kernel: level row or outer, phase, and for outer values the
    form of their shape (KEEP: F with R as 1; DROP: F without R)."""

    level: Level
    phase: int
    form: Form = Form.FULL


@dataclass
class Group:
    """Graph nodes computed by one kernel, in topological order, over ``shape``."""

    nodes: list[int]
    shape: tuple
    row_axes: tuple[int, ...] | None = None
    placement: dict[int, Placement] = field(default_factory=dict)
    library: bool = False            # one MATMUL, computed by BLAS instead of a kernel
    sealed: bool = False             # holds a WRITE: nothing may join after it

    @property
    def outer_shapes(self) -> dict[str, tuple]:
        axes = self.row_axes or ()
        return {Form.KEEP: tuple(1 if i in axes else d for i, d in enumerate(self.shape)),
                Form.DROP: tuple(d for i, d in enumerate(self.shape) if i not in axes)}

    @property
    def phases(self) -> int:
        return 1 + max((p.phase for p in self.placement.values()), default=0)


#: per graph (by its nodes tuple, held so the key stays valid), node -> argument index:
#: chains of writes make the walk long, and every write's planning asks
_MEMORY: dict[int, tuple[tuple, dict[int, int | None]]] = {}


def memory_param(graph: Graph, node_id: int) -> int | None:
    """Return the argument whose memory ``node_id`` is (ARG, VIEW or WRITE chains)."""
    held = _MEMORY.get(id(graph.nodes))
    if held is None or held[0] is not graph.nodes:
        if len(_MEMORY) >= 8:
            _MEMORY.pop(next(iter(_MEMORY)))
        held = _MEMORY[id(graph.nodes)] = (graph.nodes, {})
    memo = held[1]
    if node_id not in memo:
        node = graph.node(node_id)
        if node.op is Op.ARG:
            memo[node_id] = node.attr("index")
        elif node.op in (Op.VIEW, Op.WRITE):
            chain = [node_id]             # down to a known node, then memoise on the way up
            while node.op in (Op.VIEW, Op.WRITE) and node.inputs[0] not in memo:
                node = graph.node(node.inputs[0])
                chain.append(node.id)
            last = graph.node(chain[-1])
            found = (last.attr("index") if last.op is Op.ARG
                     else memo.get(last.inputs[0]) if last.op in (Op.VIEW, Op.WRITE) else None)
            for n in chain:
                memo[n] = found
        else:
            memo[node_id] = None
    return memo[node_id]


def memory_root(graph: Graph, node_id: int) -> int:
    """Return the node whose memory ``node_id`` is, through VIEW and WRITE chains: an
    argument's ARG node, or the computed value a write made a scratch array of (any other
    node is its own). Memoised with ``memory_param``'s walk: the root's key is kept."""
    held = _ROOTS.get(id(graph.nodes))
    if held is None or held[0] is not graph.nodes:
        if len(_ROOTS) >= 8:
            _ROOTS.pop(next(iter(_ROOTS)))
        held = _ROOTS[id(graph.nodes)] = (graph.nodes, {})
    memo = held[1]
    chain, node = [], graph.node(node_id)
    while node.id not in memo and node.op in (Op.VIEW, Op.WRITE) and node.attr("root") is None:
        chain.append(node.id)
        node = graph.node(node.inputs[0])
    found = memo.get(node.id, node.attr("root", node.id) if node.op is Op.WRITE else node.id)
    for n in chain:
        memo[n] = found
    return found


#: per graph, as ``_MEMORY``: node -> its ``memory_root``
_ROOTS: dict[int, tuple[tuple, dict[int, int]]] = {}


def written_root(graph: Graph, node: Node) -> int:
    """Return the memory a WRITE writes into: its argument's index (>= 0), or for a scratch
    array ``-1 - root`` (the computed value whose buffer it writes)."""
    root = node.attr("root")
    return node.attr("param") if root is None else -1 - root


def memory_key(graph: Graph, node_id: int) -> int | None:
    """Return ``written_root``'s key of the memory ``node_id`` is (None: no such memory)."""
    param = memory_param(graph, node_id)
    if param is not None:
        return param
    root = memory_root(graph, node_id)
    return None if graph.node(root).op in (Op.ARG, Op.CONST, Op.SIZE) else -1 - root


def is_uniform(node: Node) -> bool:
    """Return True for a value with one element per call (all dims literal 1)."""
    return all(d == 1 for d in node.type.shape)


def overwritten_memory(graph: Graph) -> set[int]:
    """Return the memory nodes (an argument's version, or a view of it) whose memory a
    later WRITE into that argument overwrites."""
    last_write: dict[int, int] = {}
    for node in graph.nodes:
        if node.op is Op.WRITE:
            last_write[written_root(graph, node)] = node.id
    found: set[int] = set()
    if not last_write:
        return found
    scratch = any(k < 0 for k in last_write)   # any computed value may be written memory
    roots: dict[int, Node] = {}   # a view -> what it views through views (topological
    for node in graph.nodes:      # order: a view's base view is known; no walk per view)
        if node.op not in (Op.ARG, Op.VIEW, Op.WRITE) and not scratch:
            continue
        root = node
        if node.op is Op.VIEW:
            base = node.inputs[0]
            root = roots[node.id] = roots[base] if base in roots else graph.node(base)
        key = memory_key(graph, root.id)
        if key is not None and last_write.get(key, -1) > root.id:
            found.add(node.id)
    return found


#: most graph ops one inlined value may recompute in each reader (its inlined cone): a
#: longer chain (a Python loop accumulating a scalar) is stored every so many ops instead,
#: so kernels and the walks over them stay bounded
INLINE_MAX_OPS = 64


def inlined_nodes(graph: Graph) -> set[int]:
    """Return compute nodes recomputed inside their readers' kernels instead of stored:
    uniform arithmetic on arguments and constants, and cheap nodes feeding broadcasts
    (each recomputing at most ``INLINE_MAX_OPS`` ops).

    A node reading memory that a later write overwrites is never recomputed: a reader
    running after the write would see the new values (NumPy computed it before)."""
    outputs, users = set(graph.outputs), graph.users()
    overwritten = overwritten_memory(graph)
    scalar: set[int] = set()
    for node in graph.nodes:
        library_input = any(graph.node(u).op in (*LIBRARY_OPS, Op.VIEW) for u in users[node.id])
        if (node.op not in (*LEAF_OPS, *ROW_OPS, *LIBRARY_OPS) and is_uniform(node)
                and node.id not in outputs and not library_input
                and node.id not in overwritten   # a scratch array written later: memory
                and not overwritten.intersection(node.inputs)
                and all(graph.node(i).op in LEAF_OPS or i in scalar for i in node.inputs)):
            scalar.add(node.id)
    inlined = set(scalar)
    for node in reversed(graph.nodes):
        if (node.op in (*LEAF_OPS, *ROW_OPS) or node.id in outputs or node.id in inlined
                or node.id in overwritten or overwritten.intersection(node.inputs)):
            continue
        readers = [graph.node(u) for u in users[node.id]]
        feeds_broadcasts = all(r.id in inlined or r.type.shape != node.type.shape
                               for r in readers) and all(
                                   r.op not in NEEDS_MEMORY for r in readers)
        cheap = node.op in CHEAP_OPS and feeds_broadcasts and not is_uniform(node)
        viewed = any(r.op in (Op.VIEW, *LIBRARY_OPS) for r in readers)   # read from memory
        if readers and not viewed and (cheap or node.op is Op.FILL):   # FILL: a constant
            inlined.add(node.id)
    return _bounded(graph, inlined, users)


def _bounded(graph: Graph, inlined: set[int], users: dict[int, list[int]]) -> set[int]:
    """Store (drop from ``inlined``) each node whose recomputed cone would exceed
    ``INLINE_MAX_OPS`` ops, or that reads an argument before a write to it and has a
    reader after that write: recomputed there, it would read the written memory."""
    written_after: dict[int, int] = {}      # memory reader -> first write that follows it
    for node in graph.nodes:
        if node.op is Op.WRITE:
            for a in node.attr("after", ()):
                written_after.setdefault(a, node.id)
    cost: dict[int, int] = {}
    stale_after: dict[int, int] = {}        # inlined node -> write after which it is stale
    for node in graph.nodes:
        if node.id not in inlined:
            continue
        cost[node.id] = 1 + sum(cost.get(i, 0) for i in node.inputs)
        writes = [written_after[node.id]] if node.id in written_after else []
        writes += [stale_after[i] for i in node.inputs if i in stale_after]
        if writes:
            stale_after[node.id] = min(writes)
        late = writes and max(users[node.id], default=-1) > stale_after[node.id]
        if cost[node.id] > INLINE_MAX_OPS or late:
            inlined.discard(node.id)
            del cost[node.id]
            stale_after.pop(node.id, None)
    return inlined


#: a kernel emits at most this many ops per ``max_ops`` (and at least ``MIN_EMITTED``):
#: a later pass recomputes the row values it reads, so a kernel of ``max_ops`` graph ops
#: with many passes emits several times as many (LLVM's time grows faster than its size)
EMITTED_PER_OP = 2
MIN_EMITTED = 64

#: open groups (neither full, sealed nor a library call) reading one value that a node
#: reading it tries to join, most recent first: bounds the candidate search per node
SIBLING_CANDIDATES = 8


class _Partitioner:
    """The greedy partition (module docstring). Every per-node step is bounded: readers of
    each value and each group's dependencies are indexed as groups grow, so partitioning is
    linear in the graph's size (``evaluations`` counts join attempts)."""

    def __init__(self, graph: Graph, max_ops: int) -> None:
        self.graph, self.max_ops = graph, max(1, max_ops)
        self.inlined = inlined_nodes(graph)
        self.groups: list[Group] = []
        self.owner: dict[int, int] = {}
        self.readers: dict[int, set[int]] = {}      # value -> groups with a node reading it
        self.open_readers: dict[int, list[int]] = {}   # value -> recent open such groups
        # memory (``memory_root``) -> recent open groups reading a view of it: a node whose
        # inputs are all memory tries them before starting a kernel of its own (heat's
        # ``4 * u[1:-1, 1:-1]`` joins the kernel summing the other views of ``u``)
        self.memory_readers: dict[int, list[int]] = {}
        self.deps: list[set[int]] = []              # group -> groups it reads values of
        self.dependents: list[set[int]] = []        # group -> groups reading its values
        self.ancestors: list[int] = []              # group -> bit mask of all it waits for
        self.waiting: dict[int, list[int]] = {}     # inlined value -> groups writing after it
        self.through: dict[int, frozenset[int]] = {}   # inlined node or view -> its groups
        self.evaluations = 0
        self.max_emitted = max(EMITTED_PER_OP * self.max_ops, MIN_EMITTED)
        self.emitted: list[dict[int, set[int]]] = []   # group -> pass -> ops emitted there
        self.size: list[int] = []                   # group -> ops its kernel emits in all

    # -- dependencies --------------------------------------------------------------------
    def _value_sources(self, value: int) -> frozenset[int]:
        """Groups a reader of ``value`` waits for: its owner, or through inlined nodes and
        views the groups they read (memoised: those inputs are all placed already)."""
        if value in self.owner:
            return frozenset((self.owner[value],))
        pending = [value]
        while pending:
            current = pending[-1]
            if current in self.through:
                pending.pop()
                continue
            inputs = [i for i in self.graph.node(current).inputs if i not in self.owner
                      and self._looks_through(i) and i not in self.through]
            if inputs:
                pending.extend(inputs)
                continue
            pending.pop()
            found: set[int] = set()
            if self._looks_through(current):
                for i in self.graph.node(current).inputs:
                    if i in self.owner:
                        found.add(self.owner[i])
                    elif self._looks_through(i):
                        found |= self.through[i]
            self.through[current] = frozenset(found)
        return self.through[value]

    def _looks_through(self, node_id: int) -> bool:
        return node_id in self.inlined or self.graph.node(node_id).op is Op.VIEW

    def _sources(self, node_id: int) -> set[int]:
        """Groups whose values ``node_id`` reads (looking through inlined nodes); a WRITE
        also waits for every group that read the argument before it."""
        node = self.graph.node(node_id)
        found: set[int] = {self.owner[a] for a in node.attr("after", ()) if a in self.owner}
        for a in node.attr("after", ()):
            if a in self.inlined:
                found |= self._readers_groups(a)
        for i in node.inputs:
            found |= self._value_sources(i)
        return found

    def _readers_groups(self, node_id: int) -> set[int]:
        """Groups that recompute the inlined node ``node_id``."""
        return set(self.readers.get(node_id, ()))

    def _add_dep(self, g: int, source: int) -> None:
        """Record that group ``g`` reads a value of ``source``; keep every group's
        ancestor set (a bit mask) closed by updating ``g`` and the groups depending on it."""
        if source == g or source in self.deps[g]:
            return
        self.deps[g].add(source)
        self.dependents[source].add(g)
        gained = self.ancestors[source] | (1 << source)
        if gained & ~self.ancestors[g] == 0:
            return
        pending, seen = [g], {g}
        while pending:
            d = pending.pop()
            self.ancestors[d] |= gained
            for e in self.dependents[d]:
                if e not in seen:
                    seen.add(e)
                    pending.append(e)

    def _reads_param(self, g: int, param: int, region: int) -> bool:
        """Return True when group ``g`` reads memory ``param`` (``written_root``'s key)
        other than as the node ``region``, which an elementwise group over its shape reads
        at the very element it writes (``a += 1``: each element is loaded before it is
        stored)."""
        pending = [i for n in self.groups[g].nodes for i in self.graph.node(n).inputs]
        seen: set[int] = set()
        while pending:
            i = pending.pop()
            if i in seen:
                continue
            seen.add(i)
            if i != region and memory_key(self.graph, i) == param:
                return True
            if i in self.inlined:
                pending.extend(self.graph.node(i).inputs)
        return False

    def _place(self, node: Node, g: int, place: Placement) -> None:
        """Put ``node`` into group ``g`` and index it (readers, dependencies, waits)."""
        group = self.groups[g]
        group.nodes.append(node.id)
        group.placement[node.id] = place
        self.owner[node.id] = g
        for source in self._sources(node.id):
            self._add_dep(g, source)
        for a in node.attr("after", ()):   # later readers of an inlined value it follows
            if a in self.inlined:
                self.waiting.setdefault(a, []).append(g)
        for i in set(node.inputs):
            self.readers.setdefault(i, set()).add(g)
            for w in self.waiting.get(i, ()):
                self._add_dep(w, g)
            source = self.graph.node(i)
            if source.op is not Op.CONST:
                self._remember(self.open_readers, i, g)
            if source.op in (Op.ARG, Op.VIEW):
                self._remember(self.memory_readers, memory_root(self.graph, i), g)

    @staticmethod
    def _remember(index: dict[int, list[int]], key: int, g: int) -> None:
        """Keep ``g`` among the ``SIBLING_CANDIDATES`` most recent groups under ``key``."""
        recent = index.setdefault(key, [])
        if g not in recent:
            recent.append(g)
            del recent[:-SIBLING_CANDIDATES]

    def _new_group(self, group: Group, node: Node, place: Placement) -> None:
        self.groups.append(group)
        self.emitted.append({})
        self.size.append(0)
        self.deps.append(set())
        self.dependents.append(set())
        self.ancestors.append(0)
        self._place(node, len(self.groups) - 1, place)
        self._count(len(self.groups) - 1, place, self._emissions(node, len(self.groups) - 1,
                                                                  place))

    def _add_write(self, node: Node) -> None:
        """A write joins its value's elementwise kernel when that kernel reads the argument
        only as the written region, or computes one element (every load of its one
        iteration precedes the store); else NumPy's evaluate-then-write needs the value
        stored first (heat's update reads shifted views of the array it writes)."""
        region = self.graph.node(node.inputs[0])
        value, param = node.inputs[1], written_root(self.graph, node)
        g = self.owner.get(value)
        # a scratch array's kernel stores it after its body: a write must follow that kernel
        root_group = self.owner.get(-1 - param) if param < 0 else None
        if g is not None and g != root_group:
            group = self.groups[g]
            if (group.row_axes is None and not group.sealed and not group.library
                    and group.shape == region.type.shape and self._acyclic(node, g)
                    and (all(d == 1 for d in group.shape)
                         or not self._reads_param(g, param, region.id))):
                self._place(node, g, Placement(Level.ROW, 0))
                group.sealed = True
                return
        self._new_group(Group([], region.type.shape, sealed=True), node, Placement(Level.ROW, 0))

    def _depends_on(self, group: int, target: int) -> bool:
        """Return True when ``group`` reads, directly or not, a value of ``target``."""
        return group == target or bool(self.ancestors[group] >> target & 1)

    def _acyclic(self, node: Node, g: int) -> bool:
        return not any(self._depends_on(h, g) for h in self._sources(node.id) - {g})

    # -- placement -----------------------------------------------------------------------
    def _member_inputs(self, node: Node, g: int) -> list[Placement]:
        """Placements of group ``g``'s values that ``node`` reads, through inlined nodes."""
        found: list[Placement] = []
        pending = list(reversed(node.inputs))
        while pending:
            i = pending.pop()
            if self.owner.get(i) == g:
                found.append(self.groups[g].placement[i])
            elif i in self.inlined:
                pending.extend(reversed(self.graph.node(i).inputs))
        return found

    def _place_elementwise(self, node: Node, g: int) -> Placement | None:
        group = self.groups[g]
        members = self._member_inputs(node, g)
        if group.row_axes is None:
            return Placement(Level.ROW, 0) if node.type.shape == group.shape else None
        if node.type.shape == group.shape:
            phases = [p.phase + (p.level == Level.OUTER) for p in members]
            prefix = tuple(range(len(group.row_axes))) == group.row_axes
            if any(p.level == Level.OUTER and p.form == Form.DROP and not prefix for p in members):
                return None
            return Placement(Level.ROW, max(phases, default=0))
        for form, shape in group.outer_shapes.items():
            if node.type.shape == shape and all(p.level == Level.OUTER and p.form == form
                                                for p in members):
                return Placement(Level.OUTER, max((p.phase for p in members), default=0), form)
        return None

    def _place_reduce(self, node: Node, g: int) -> Placement | None:
        group, source = self.groups[g], self.graph.node(node.inputs[0])
        axes = node.attr("axes")
        if group.shape != source.type.shape or group.row_axes not in (None, axes):
            return None
        inside = group.placement.get(source.id)
        if inside is not None and inside.level != Level.ROW:
            return None
        form = Form.KEEP if node.attr("keepdims") else Form.DROP
        place = Placement(Level.OUTER, inside.phase if inside else 0, form)
        return None if self._chunking_clash(node, group, place.phase) else place

    def _chunking_clash(self, node: Node, group: Group, phase: int) -> bool:
        """Return True when float sum ``node`` and one already in ``group``'s ``phase``
        are chunked differently: NumPy adds a casting (buffered) sum pairwise in
        8192-element chunks and any other in one run, and one phase walks its row once."""
        def chunking(n: Node) -> bool | None:
            summed = n.op is Op.REDUCE and n.attr("kind") == "add"
            return bool(n.attr("buffered")) if summed and n.type.dtype.kind == "f" else None

        mine = chunking(node)
        return mine is not None and any(
            place.level == Level.OUTER and place.phase == phase
            and chunking(self.graph.node(i)) not in (None, mine)
            for i, place in group.placement.items())

    def _place_scan(self, node: Node, g: int) -> Placement | None:
        """A scan runs at row level over the group's row axes (which it sets on an
        elementwise group), in the phase its operand is ready. Its operand must not come
        from a scan of the group: renderers scan a row's chunks in parallel, which needs
        each scan's operand before any scan's prefix (``autojit.ir.kernel``)."""
        group = self.groups[g]
        if group.shape != node.type.shape or group.row_axes not in (None, node.attr("axes")):
            return None
        if self._after_scan(node, g):
            return None
        return self._place_elementwise(node, g)

    def _reachable(self, node: Node, expand: Callable[[int], bool]) -> Iterator[int]:
        """Yield, once each, ``node``'s inputs and the inputs of every yielded node for which
        ``expand`` holds (a walk through the nodes a kernel recomputes)."""
        pending, seen = list(node.inputs), set()
        while pending:
            i = pending.pop()
            if i in seen:
                continue
            seen.add(i)
            yield i
            if expand(i):
                pending.extend(self.graph.node(i).inputs)

    def _after_scan(self, node: Node, g: int) -> bool:
        """Return True when ``node`` reads, through row values of group ``g`` (and nodes
        recomputed in it), the result of one of the group's scans."""
        def through(i: int) -> bool:
            place = self.groups[g].placement.get(i) if self.owner.get(i) == g else None
            return place.level == Level.ROW if place is not None else i in self.inlined

        return any(through(i) and self.graph.node(i).op is Op.SCAN
                   for i in self._reachable(node, through))

    def _views_into(self, node: Node, g: int) -> bool:
        """Return True when ``node`` reads a view of a value group ``g`` computes (that
        value must be complete in memory first), directly or through nodes it recomputes
        (``(a * 2)[1:2] * 1 - a``: the uniform product is inlined into the subtraction)."""
        def recomputed(i: int) -> bool:
            return i in self.inlined and self.graph.node(i).op is not Op.VIEW

        for i in self._reachable(node, recomputed):
            source = self.graph.node(i)
            while source.op is Op.VIEW:
                source = self.graph.node(source.inputs[0])
                if self.owner.get(source.id) == g:
                    return True
        return False

    def _is_open(self, g: int) -> bool:
        group = self.groups[g]
        return not (group.library or group.sealed or len(group.nodes) >= self.max_ops)

    def _try_join(self, node: Node, g: int) -> bool:
        self.evaluations += 1
        group = self.groups[g]
        if group.library or group.sealed or node.op in LIBRARY_OPS or self._views_into(node, g):
            return False   # a library call is a step of its own; a viewed value is stored
        if len(group.nodes) >= self.max_ops or not self._acyclic(node, g):
            return False
        placers = {Op.REDUCE: self._place_reduce, Op.SCAN: self._place_scan}
        place = placers.get(node.op, self._place_elementwise)(node, g)
        if place is None:
            return False
        emitted = self._emissions(node, g, place)
        if self.size[g] + len(emitted) > self.max_emitted:
            return False
        if node.op in placers and group.row_axes is None:
            group.row_axes = node.attr("axes")
        self._place(node, g, place)
        self._count(g, place, emitted)
        return True

    def _emissions(self, node: Node, g: int, place: Placement) -> set[int]:
        """Return the ops the kernel newly emits for ``node`` at ``place``: the node, and
        for a row value in a later pass the row values (and inlined nodes) of earlier
        passes it reads, which that pass recomputes (``plan._KernelEmitter.value``)."""
        if place.level != Level.ROW:
            return {node.id}
        group, have = self.groups[g], self.emitted[g].get(place.phase, set())
        new = {node.id}
        pending = list(node.inputs)
        while pending:
            i = pending.pop()
            if i in new or i in have:
                continue
            member = group.placement.get(i) if self.owner.get(i) == g else None
            if member is not None and (member.level != Level.ROW or member.phase >= place.phase):
                continue   # computed once per row, or already in this pass
            if member is not None or i in self.inlined:
                new.add(i)
                pending.extend(self.graph.node(i).inputs)
        return new

    def _count(self, g: int, place: Placement, emitted: set[int]) -> None:
        self.size[g] += len(emitted)
        if place.level == Level.ROW:
            self.emitted[g].setdefault(place.phase, set()).update(emitted)

    def _candidates(self, node: Node) -> list[int]:
        """Groups of the node's inputs first, then (in creation order) open groups reading
        the same values: the ``SIBLING_CANDIDATES`` most recent per value."""
        direct = [self.owner[i] for i in node.inputs if i in self.owner]
        siblings: set[int] = set()
        for i in node.inputs:
            siblings.update(self._open(self.open_readers, i))
        if not direct and not siblings:   # only memory (views, arguments) and constants
            for i in node.inputs:
                if self.graph.node(i).op in (Op.ARG, Op.VIEW):
                    siblings.update(self._open(self.memory_readers,
                                               memory_root(self.graph, i)))
        return list(dict.fromkeys(direct + sorted(siblings)))

    def _open(self, index: dict[int, list[int]], key: int) -> list[int]:
        """The groups under ``key`` in ``index`` still open (closed ones are dropped)."""
        recent = index.get(key)
        if recent:
            recent[:] = [g for g in recent if self._is_open(g)]
        return recent or []

    def add(self, node: Node) -> None:
        if node.op in REGION_RESULTS or (node.op is Op.WRITE and node.attr("region")):
            # a loop's results: computed by its REGION step (the region is their last input)
            self._place(node, self.owner[node.inputs[-1]], Placement(Level.ROW, 0))
            return
        if node.op is Op.WRITE:
            self._add_write(node)
            return
        for g in self._candidates(node):
            if self._try_join(node, g):
                return
        place = Placement(Level.ROW, 0)
        if node.op in LIBRARY_OPS:
            group = Group([], node.type.shape, library=True)
        elif node.op is Op.REDUCE:
            source = self.graph.node(node.inputs[0])
            group = Group([], source.type.shape, node.attr("axes"))
            place = Placement(Level.OUTER, 0, Form.KEEP if node.attr("keepdims") else Form.DROP)
        elif node.op is Op.SCAN:
            group = Group([], node.type.shape, node.attr("axes"))
        else:
            group = Group([], node.type.shape)
        self._new_group(group, node, place)

    def ordered(self) -> list[Group]:
        """Return the groups in dependency order, the lowest ready index first."""
        deps = [d - {g} for g, d in enumerate(self.deps)]
        waiting = [len(d) for d in deps]
        dependents: list[list[int]] = [[] for _ in self.groups]
        for g, found in enumerate(deps):
            for h in found:
                dependents[h].append(g)
        ready = [g for g, count in enumerate(waiting) if count == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            g = heapq.heappop(ready)
            order.append(g)
            for d in dependents[g]:
                waiting[d] -= 1
                if waiting[d] == 0:
                    heapq.heappush(ready, d)
        if len(order) < len(self.groups):
            raise InternalError("kernel dependency cycle")
        return [self.groups[g] for g in order]


def partition_graph(graph: Graph, max_ops: int,
                    counters: dict[str, int] | None = None) -> list[Group]:
    """Return the kernels' node groups in an order that respects dependencies;
    ``counters`` (when given) receives the number of join attempts ("evaluations")."""
    partitioner = _Partitioner(graph, max_ops)
    for node in graph.nodes:
        if node.op not in LEAF_OPS and node.id not in partitioner.inlined:
            partitioner.add(node)
    if counters is not None:
        counters["evaluations"] = partitioner.evaluations
    return partitioner.ordered()
