"""``plan_kernels``: turn partition groups into Kernels plus the per-call buffer plan."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from autojit.errors import UnsupportedError
from autojit.fuse.builder import KernelBuilder
from autojit.fuse.native_loop import NativeLoop, native_loop
from autojit.fuse.partition import LEAF_OPS, Form, Group, Placement, partition_graph
from autojit.fuse.split_reduce import split_reductions
from autojit.ir.graph import Graph, Node
from autojit.ir.kernel import Kernel, Level
from autojit.ir.ops import NUMPY_BUFSIZE, OP_TABLE, Op, ordered_reduction
from autojit.ir.region import Region
from autojit.ir.types import Dim
from autojit.ir.verify import check_graph, check_kernel
from autojit.ir.views import ScalarRef

DEFAULT_MAX_OPS = 128

#: graphs with more nodes are refused before planning: planning is linear, ~50 us a node on
#: a 2-core Xeon, so this is seconds already; the tracer stops far earlier
#: (``tracer.state.MAX_TRACE_NODES``), this bounds graphs built another way
MAX_PLAN_NODES = 100_000


@dataclass(frozen=True)
class LibraryCall:
    """A step a library routine performs: ``output = name(*inputs)`` (graph node ids)."""

    name: str
    inputs: tuple[int, ...]
    output: int


@dataclass(frozen=True)
class RegionCall:
    """A step that runs a loop region (``ir.region``): ``body`` is the body's own plan,
    whose kernels are the outer plan's ``kernels[offset:offset + len(body.kernels)]``;
    ``inputs`` are the REGION node's inputs, ``carries`` its CARRY nodes by index.
    ``native``: the whole loop as one kernel (``fuse.native_loop``, a body of scalar
    work), the plan's kernel right after the body's; the runner prefers it on the CPU."""

    node: int
    region: Region
    body: Plan
    inputs: tuple[int, ...]
    carries: tuple[int, ...]
    offset: int
    native: NativeLoop | None = None

    @property
    def native_index(self) -> int:
        """The plan's kernel index of ``native``."""
        return self.offset + len(self.body.kernels)


@dataclass(frozen=True)
class Plan:
    """Kernels and library calls in launch order, and the values each call allocates
    (intermediates, results). ``order`` interleaves them: ("kernel", i) / ("library", j)."""

    graph: Graph
    kernels: tuple[Kernel, ...]
    allocations: tuple[int, ...]
    libraries: tuple[LibraryCall, ...] = ()
    order: tuple[tuple[str, int], ...] = ()
    schedule_cache: dict = field(default_factory=dict, compare=False, repr=False)
    #: why the CPU runs this plan as Python ('' when it does not): a float sum whose
    #: order NumPy takes from memory layout (the GPU, exact only to tolerances, runs it)
    cpu_refusal: str = ""
    #: loop regions, steps ("region", j); their bodies' kernels follow the plan's own
    regions: tuple[RegionCall, ...] = ()

    @property
    def own_kernels(self) -> tuple[Kernel, ...]:
        """The kernels this plan's steps launch (the rest run inside its regions)."""
        if not self.regions:
            return self.kernels
        return self.kernels[:self.regions[0].offset]

    @property
    def steps(self) -> tuple[tuple[str, int], ...]:
        return self.order or tuple(("kernel", i) for i in range(len(self.kernels)))


def _materialised(graph: Graph, groups: list[Group]) -> list[int]:
    """Return nodes that must live in memory: returned, viewed, computed by a library
    call, or read by another kernel (also through nodes that kernels recompute)."""
    owner = {n: g for g, group in enumerate(groups) for n in group.nodes}
    users = graph.users()
    readers: dict[int, set[int]] = {}   # node -> groups that evaluate it (users come later)
    for node in reversed(graph.nodes):
        found: set[int] = set()
        for user in users[node.id]:
            found |= {owner[user]} if user in owner else readers[user]
        readers[node.id] = found
    reading_groups = readers.__getitem__

    needed = {o for o in graph.outputs if o in owner}
    needed |= {g.nodes[0] for g in groups if g.library}   # BLAS writes memory, read or not
    needed |= {n.id for n in graph.nodes if n.op is Op.CARRY}   # a loop writes them
    needed |= {n.inputs[0] for n in graph.nodes if n.op is Op.VIEW and n.inputs[0] in owner}
    needed |= {n.attr("root") for n in graph.nodes if n.op is Op.WRITE}   # scratch arrays
    needed.discard(None)
    for node_id, group in owner.items():
        if any(g != group for g in reading_groups(node_id)):
            needed.add(node_id)
    # a WRITE lives in its argument's (or scratch array's) memory, a REGION is a step: never
    # allocated
    return [n.id for n in graph.nodes if n.id in needed and n.op not in (Op.WRITE, Op.REGION)]


def _keeps_c_order(step: tuple) -> bool:
    """Whether a view step of a C-contiguous array is C-contiguous for every size:
    reshapes, identity transposes, and keys of leading integers, then at most one slice
    of step 1, then only full slices, ``...`` and ``None``."""
    name, argument = step
    if name in ("reshape", "ravel"):
        return True
    if name == "transpose":
        return tuple(argument) == tuple(range(len(argument)))
    leading = True
    for k in argument if isinstance(argument, tuple) else (argument,):
        if k is None:
            continue
        if (isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_)
                or k.__class__ is ScalarRef):   # an int the call passes: the same
            if not leading:
                return False
            continue
        full = k is Ellipsis or (isinstance(k, slice) and k == slice(None)
                                 and k.start is None and k.stop is None)
        plain = isinstance(k, slice) and (k.step is None or (
            isinstance(k.step, int | np.integer) and k.step == 1))
        if not full and not (plain and leading):
            return False
        leading = False
    return True


def _is_index_key(step: tuple) -> bool:
    """Whether a view step only indexes (integers, slices of any step, ``None``, ``...``)."""
    name, argument = step
    keys = argument if isinstance(argument, tuple) else (argument,)
    return name == "getitem" and all(
        k is None or k is Ellipsis or isinstance(k, slice)
        or (isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_))
        or k.__class__ is ScalarRef for k in keys)


def _forward_line(node: Node) -> bool:
    """Whether a view of a C-contiguous array is one line walked forwards (at most one
    axis longer than 1, every slice step positive): NumPy reduces it in index order."""
    if not _is_index_key(node.attr("step")) or sum(d != 1 for d in node.type.shape) > 1:
        return False
    argument = node.attr("step")[1]
    return all(not isinstance(k, slice) or k.step is None
               or (isinstance(k.step, int | np.integer) and k.step > 0)
               for k in (argument if isinstance(argument, tuple) else (argument,)))


def _order_sets(graph: Graph, contiguous: Sequence[bool],
                strided: Sequence[bool] = ()) -> tuple[set[int], set[int]]:
    """Return (C-contiguous values, values whose axes run in C order): see
    :func:`c_ordered_values`; the second set also holds C-ordered strided arguments
    (``strided[i]``, signature.c_ordered_strided) and index views of either."""
    ordered: set[int] = set()
    axes_in_order: set[int] = set()      # |strides| decrease along the axes longer than 1

    def strided_param(index: int) -> bool:
        return index < len(strided) and bool(strided[index])

    for node in graph.nodes:
        in_order = False
        if node.op is Op.ARG:
            index = node.attr("index")
            keep = graph.params[index].kind != "array" or contiguous[index]
            in_order = graph.params[index].kind == "array" and strided_param(index)
        elif node.op is Op.WRITE and node.attr("root") is not None:   # a scratch array's
            keep = node.attr("root") in ordered                       # memory: its layout
            in_order = node.attr("root") in axes_in_order
        elif node.op is Op.WRITE:      # the argument's own memory
            keep = bool(contiguous[node.attr("param")])
            in_order = strided_param(node.attr("param"))
        elif node.op is Op.CARRY:      # a loop's result: memory the plan allocates
            keep = True
        elif node.op is Op.VIEW:
            source, step = node.inputs[0], node.attr("step")
            keep = source in ordered and (_keeps_c_order(step) or _forward_line(node))
            in_order = source in axes_in_order and _is_index_key(step)
        else:   # (a ``_like`` fill takes its prototype's axis order)
            keep = all(i in axes_in_order for i in node.inputs) and (
                node.op is not Op.FILL or node.attr("like") is None
                or node.attr("like") in axes_in_order)
        if keep:
            ordered.add(node.id)
        if keep or in_order:
            axes_in_order.add(node.id)
    return ordered, axes_in_order


def c_ordered_values(graph: Graph, contiguous: Sequence[bool],
                     strided: Sequence[bool] = ()) -> set[int]:
    """Return the nodes whose NumPy array is C-contiguous for every size (or a scalar):
    C-contiguous arguments, views of them that ``_keeps_c_order``, and every value NumPy
    computes from arrays whose axes run in C order: a ufunc allocates its result in its
    inputs' axis order ('K', reversed axes made positive), and indexing a C-contiguous
    or C-ordered strided array (slices of any step, integers) keeps the axes in C order."""
    return _order_sets(graph, contiguous, strided)[0]


def numpy_ordered_reductions(graph: Graph, ordered: set[int], in_order: set[int]) -> set[int]:
    """Return the REDUCE nodes whose float sum or product autojit computes in NumPy's
    order (``ordered, in_order = _order_sets(...)``). A reduction of a C-contiguous value
    is; so is one of a value whose axes merely run in C order (a C-ordered strided
    argument, a slice): NumPy's reduction iterator walks it in C index order, but how it
    splits a sum over several reduced axes into pairwise runs depends on the strides
    (axes adjacent in memory merge), which the signature does not say. So its sums are
    NumPy's when the run is at most one axis (``pairwise_block``:
    ``x[:, ::2].sum(axis=-1)``, ``x[1:].sum(axis=0)``, not ``x[:, ::2].sum()``); its
    products multiply one element after another in index order: always NumPy's. Verified
    bit for bit against NumPy 2.4 (tests/cpu/lowering/test_strided_reduction_order.py)."""
    exact: set[int] = set()
    for node in graph.nodes:
        if node.op is not Op.REDUCE or not ordered_reduction(node.attr("kind"), node.type.dtype):
            continue
        source = node.inputs[0]
        if source in ordered or (source in in_order and (
                node.attr("kind") != "add"
                or len(pairwise_block(graph.node(source).type.shape, node.attr("axes"))) <= 1)):
            exact.add(node.id)
    return exact


def _summation_order_refusal(graph: Graph, exact: set[int], in_order: set[int]) -> str:
    """Return why the CPU cannot give NumPy's bits ('' when it can): a float sum or
    product not in ``exact`` (:func:`numpy_ordered_reductions`). NumPy's reduction
    iterator walks memory order (axes sorted by stride size) and merges the axes adjacent
    in memory; the order decides rounding, overflow and inf * 0."""
    for node in graph.nodes:
        if node.op is Op.REDUCE and ordered_reduction(node.attr("kind"), node.type.dtype) \
                and node.id not in exact:
            what = "sum" if node.attr("kind") == "add" else "product"
            message = (
                f"a float {what} over several axes of a strided array: NumPy combines it "
                "in memory order, in pairwise runs that its strides decide, which are not "
                "known when compiling"
                if node.inputs[0] in in_order else
                f"a float {what} of a transposed, broadcast or Fortran-ordered array: NumPy "
                "combines it in memory order, which is not known when compiling")
            return str(UnsupportedError(message, node.loc))
    return ""


class _NotFlat(Exception):
    """A buffer is not one contiguous run (or one element) over the kernel's row axes."""


class _KernelEmitter:
    """Emits one group's nodes into a KernelBuilder, loading everything else it reads.

    Loop dimensions are the group's outer axes, then its row (reduced) axes. Every value is
    emitted in a context (level, phase, form): row values once per element of a phase's
    pass, outer values once per row (see ``autojit.ir.kernel``).
    """

    def __init__(self, graph: Graph, group: Group, name: str, in_memory: set[int],
                 contiguous: Sequence[bool], ordered: set[int] | None = None,
                 collapse_rows: bool = False, span_rows: bool = False) -> None:
        self.graph, self.group, self.in_memory = graph, group, in_memory
        self.ordered = ordered if ordered is not None else {n.id for n in graph.nodes}
        self.contiguous = contiguous
        self.members = set(group.nodes)
        rows = group.row_axes or ()
        self.outer_axes = [a for a in range(len(group.shape)) if a not in rows]
        self.perm = self.outer_axes + list(rows)
        special = any(graph.node(n).op in (Op.INDEX, Op.WRITE) for n in group.nodes) or any(
            n.op is Op.INDEX and n.id not in in_memory for n in self._reads())  # recomputed
        self.collapsed = not rows and not special and self._can_collapse()
        #: the row axes are one loop (a pairwise sum over several trailing axes at once)
        self.rows_collapsed = collapse_rows and not special
        #: else a pairwise run may span several row loops (Kernel.pairwise_from)
        self.span_rows = span_rows
        self.pairwise_from: int | None = None
        shape = group.shape
        if self.collapsed:
            loop_sizes = (tuple(d for d in shape if d != 1),)
        elif self.rows_collapsed:
            loop_sizes = tuple((shape[a],) if shape[a] != 1 else () for a in self.outer_axes)
            loop_sizes += (tuple(shape[a] for a in rows if shape[a] != 1),)
        else:
            loop_sizes = tuple((shape[a],) if shape[a] != 1 else () for a in self.perm) or ((),)
        self.kb = KernelBuilder(name, loop_sizes)
        self.values: dict[tuple, int] = {}
        self.spills: dict[int, int] = {}     # set by emit(): see _choose_spills

    def _is_contiguous(self, node: Node) -> bool:
        if node.op is Op.ARG:
            return self.contiguous[node.attr("index")]
        if node.op is Op.WRITE:   # the argument's memory, after the write (or the scratch
            param = node.attr("param")   # array's, which autojit allocates C-contiguous)
            return True if param is None else self.contiguous[param]
        return node.op is not Op.VIEW  # values autojit allocates are C-contiguous

    def _inner_unit(self, node: Node) -> bool:
        """Whether a view's last axis walks memory with stride 1 for every size: getitem
        views (integers, slices) of a C-contiguous value, each keeping its base's last
        axis with step 1 (heat's ``u[1:-1, 2:]``): its kernels load it with a literal
        inner stride (what LLVM vectorises) instead of one read at run time."""
        if node.op is not Op.VIEW or not node.type.shape:
            return False
        while node.op is Op.VIEW:
            name, argument = node.attr("step")
            base = self.graph.node(node.inputs[0])
            key = argument if isinstance(argument, tuple) else (argument,)
            if name != "getitem" or len(key) > len(base.type.shape) or not all(
                    isinstance(k, slice) or k.__class__ is ScalarRef
                    or (isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_))
                    for k in key):
                return False   # a new axis, ``...``, an index array, or another step
            last = key[-1] if len(key) == len(base.type.shape) else slice(None)
            if not isinstance(last, slice) or not (last.step is None or (
                    isinstance(last.step, int | np.integer) and last.step == 1)):
                return False   # the last axis indexed away, or walked with another step
            node = base
        return self._is_contiguous(node)

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
        if node.id in self.in_memory or node.op in (Op.VIEW, Op.WRITE):
            return True
        return node.op is Op.ARG and self.graph.params[node.attr("index")].kind == "array"

    def _axis_in(self, shape: tuple[Dim, ...], full_axis: int, form: Form) -> int | None:
        """Return the axis of an array of ``shape`` (broadcast into a value of ``form``)
        that runs along the group's ``full_axis``; None when it does not."""
        if form == Form.DROP:
            if full_axis not in self.outer_axes:
                return None
            axis = self.outer_axes.index(full_axis) - (len(self.outer_axes) - len(shape))
        else:
            axis = full_axis - (len(self.group.shape) - len(shape))
        return axis if axis >= 0 else None

    def strides(self, shape: tuple[Dim, ...], contiguous: bool, form: Form = Form.FULL,
                inner_unit: bool = False
                ) -> tuple[tuple[int | None, ...], tuple[int | None, ...] | None]:
        """Return per-loop-dim element strides (0 broadcast, 1 contiguous inner, None: at
        run time) and the array axis each loop dim walks (None when NumPy's alignment);
        ``inner_unit``: the array's last axis has stride 1 (``_inner_unit``)."""
        if self.collapsed:
            return ((0,) if all(d == 1 for d in shape) else (1,)), None
        if not self.group.shape:
            return (0,), None
        strides: list[int | None] = []
        axes: list[int | None] = []
        for full_axis in self.outer_axes if self.rows_collapsed else self.perm:
            axis = self._axis_in(shape, full_axis, form)
            axes.append(axis)
            if axis is None or shape[axis] == 1:
                strides.append(0)
            elif axis == len(shape) - 1 and (contiguous or inner_unit):
                strides.append(1)
            else:
                strides.append(None)
        if self.rows_collapsed:
            stride, axis = self._row_run(shape, contiguous, form)
            strides.append(stride)
            axes.append(axis)
        return tuple(strides), tuple(axes)

    def _row_run(self, shape: tuple[Dim, ...], contiguous: bool, form: Form
                 ) -> tuple[int, int | None]:
        """Return (stride, array axis) along the collapsed row loop: 0 when the array has
        one element over the row axes, 1 when it is C-contiguous and spans them fully
        (trailing axes of C order); raise _NotFlat otherwise."""
        rows = [a for a in self.group.row_axes or () if self.group.shape[a] != 1]
        found = [self._axis_in(shape, a, form) for a in rows]
        spans = [axis for axis in found if axis is not None and shape[axis] != 1]
        if not spans:
            return 0, None
        if contiguous and None not in found and all(
                shape[axis] == self.group.shape[a] for axis, a in zip(found, rows)) and all(
                axis in found or shape[axis] == 1 for axis in range(found[0], len(shape))):
            return 1, found[-1]
        raise _NotFlat

    def _key(self, node_id: int, where: Placement) -> tuple[int, Placement]:
        """Return the context ``node_id`` is emitted in when read at ``where``."""
        placement = self.group.placement.get(node_id)
        if placement is not None and placement.level == Level.OUTER:
            where = placement                      # computed once per row, reused after
        elif placement is not None:
            where = Placement(Level.ROW, max(where.phase, placement.phase))
        return node_id, where

    def _operand_keys(self, node_id: int, where: Placement) -> list[tuple[int, Placement]]:
        """Return the contexts ``_emit`` reads its operands in (none for loads)."""
        node, placement = self.graph.node(node_id), self.group.placement.get(node_id)
        if node_id in self.spills and where.phase > placement.phase:   # type: ignore[union-attr]
            return []
        if node.op in (Op.CONST, Op.INDEX, Op.ARG, Op.SIZE) or (
                self._is_buffer(node) and node_id not in self.members):
            return []
        if node.op is Op.WRITE:
            return [self._key(node.inputs[1], where)]
        inner = Placement(Level.ROW, where.phase) if node.op is Op.REDUCE else where
        return [self._key(i, inner) for i in node.inputs]

    def value(self, node_id: int, where: Placement) -> int:
        """Return the instruction holding ``node_id`` for use at ``where``. Operands are
        emitted first, depth first in operand order, from an explicit stack (a long chain
        of values must not recurse once per value)."""
        key = self._key(node_id, where)
        pending = [key]
        while pending:
            current = pending[-1]
            if current in self.values:
                pending.pop()
                continue
            missing = [k for k in self._operand_keys(*current) if k not in self.values]
            if missing:
                pending.extend(reversed(missing))
                continue
            pending.pop()
            self._compute(*current)
        return self.values[key]

    def _compute(self, node_id: int, where: Placement) -> None:
        """Emit ``node_id`` at ``where`` (its operands are emitted already)."""
        key, placement = (node_id, where), self.group.placement.get(node_id)
        spill = self.spills.get(node_id)
        if spill is not None and where.phase > placement.phase:   # type: ignore[union-attr]
            self.values[key] = self._spill_buffer(spill, where, load=True)
            return
        self.kb.position(where.level, where.phase)
        self.values[key] = self._emit(self.graph.node(node_id), where)
        if spill is not None:
            self._spill_buffer(spill, where, store=self.values[key])

    def _choose_spills(self) -> dict[int, int]:
        """Return {row value: result} for values the last phase would recompute with a libm
        call: the value's own phase stores it into that result's memory (same shape and
        dtype, stored in the last phase at the same elements) and the last phase loads it
        back before overwriting it. Softmax computes ``exp(x - max)`` once, not twice."""
        last = self.group.phases - 1
        spills: dict[int, int] = {}
        calls_math: dict[int, bool] = {}
        for result_id in self.group.nodes if last > 0 else ():
            result = self.graph.node(result_id)
            if (result_id not in self.in_memory or result.op is Op.WRITE
                    or self.group.placement[result_id] != Placement(Level.ROW, last)
                    or result.type.shape != self.group.shape):
                continue
            cone = self._row_cone(result_id)
            candidates = [v for v in cone if v not in spills and v != result_id
                          and self.group.placement[v].phase < last
                          and self.graph.node(v).type == result.type
                          and self._calls_math(v, calls_math)]
            if candidates:
                spills[max(candidates)] = result_id
        return spills

    def _is_row(self, node_id: int) -> bool:
        placement = self.group.placement.get(node_id)
        return placement is not None and placement.level == Level.ROW

    def _calls_math(self, node_id: int, memo: dict[int, bool]) -> bool:
        """Return whether a row value's cone (``_row_cone``) has a libm call. ``memo`` holds
        the answer of every value visited, so a kernel visits each row value once (a cone
        walked per candidate was quadratic in the kernel's size: 0.3 s of a 10,000-op
        program's plan)."""
        pending = [node_id]
        while pending:
            current = pending[-1]
            if current in memo:
                pending.pop()
                continue
            inputs = [i for i in self.graph.node(current).inputs if self._is_row(i)]
            missing = [i for i in inputs if i not in memo]
            if missing:
                pending.extend(missing)
                continue
            pending.pop()
            memo[current] = (bool(OP_TABLE[self.graph.node(current).op].math_name)
                             or any(memo[i] for i in inputs))
        return memo[node_id]

    def _row_cone(self, node_id: int) -> set[int]:
        """Return ``node_id`` and the row values of this kernel it is computed from."""
        cone, pending = set(), [node_id]
        while pending:
            current = pending.pop()
            placement = self.group.placement.get(current)
            if current in cone or placement is None or placement.level != Level.ROW:
                continue
            cone.add(current)
            pending.extend(self.graph.node(current).inputs)
        return cone

    def _spill_buffer(self, result_id: int, where: Placement, *, load: bool = False,
                      store: int | None = None) -> int:
        """Store ``store`` into ``result_id``'s memory, or (``load``) load it back through
        the result's own buffer: the same pointer as the final store, so the vectoriser
        sees a load and store of one element, not two arrays that may overlap."""
        result = self.graph.node(result_id)
        strides, axes = self.strides(result.type.shape, True)
        if load:
            buffer = self._result_buffer(result_id)
            self.kb.position(Level.ROW, where.phase)
            return self.kb.load(buffer)
        buffer = self.kb.add_buffer(f"spill{len(self.kb.buffers)}", result.type.dtype, strides,
                                    True, result_id, axes)
        self.kb.position(Level.ROW, where.phase)
        self.kb.store(buffer, store)
        return store

    def _emit(self, node: Node, where: Placement) -> int:
        if node.op is Op.CONST:
            return self.kb.const(node.attr("value"), node.type.dtype)
        if self._is_buffer(node) and node.id not in self.members:   # stored by another
            strides, axes = self.strides(node.type.shape, self._is_contiguous(node), where.form,
                                         self._inner_unit(node))
            buffer = self.kb.input_buffer(node.type.dtype, strides, node.id, axes)
            self.kb.position(where.level, where.phase)
            return self.kb.load(buffer)
        if node.op is Op.INDEX and node.type.shape[node.attr("axis")] == 1:
            return self.kb.const(0, np.dtype(np.int64))   # a size-1 axis has no loop
        if node.op is Op.INDEX:   # its group iterates over its own shape: one loop dim
            full_axis = node.attr("axis") + len(self.group.shape) - len(node.type.shape)
            self.kb.position(where.level, where.phase)
            return self.kb.emit(Op.INDEX, (), np.dtype(np.int64), self.perm.index(full_axis))
        if node.op in (Op.ARG, Op.SIZE):
            name = (self.graph.params[node.attr("index")].name if node.op is Op.ARG
                    else "size_" + "_".join(node.attr("symbols")))
            return self.kb.load_scalar(self.kb.add_scalar(name, node.type.dtype, node.id))
        if node.op is Op.WRITE:   # the region is written, never read
            return self._write(node, self.value(node.inputs[1], where))
        inner = Placement(Level.ROW, where.phase) if node.op is Op.REDUCE else where
        operands = tuple(self.value(i, inner) for i in node.inputs)
        self.kb.position(where.level, where.phase)
        self.kb.current_node = node.id
        if node.op is Op.CAST:
            return self.kb.cast(operands[0], node.type.dtype)
        if node.op is Op.REDUCE:
            return self._reduce(node, operands[0])
        if node.op is Op.SCAN:   # at row level (a later phase reading it scans again)
            return self.kb.scan(node.attr("kind"), operands[0], node.type.dtype)
        return self.kb.graph_op(node.op, operands, node.type.dtype, dict(node.attrs))

    def _write(self, node: Node, value: int) -> int:
        """Store ``value`` into the written region of the argument (a view of it)."""
        region = self.graph.node(node.inputs[0])
        strides, axes = self.strides(region.type.shape, self._is_contiguous(region),
                                     inner_unit=self._inner_unit(region))
        buffer = self.kb.add_buffer(f"out{len(self.kb.buffers)}", region.type.dtype, strides,
                                    True, region.id, axes)
        self.kb.position(Level.ROW, 0)
        self.kb.store(buffer, value)
        return value

    def _reduce(self, node: Node, operand: int) -> int:
        """Emit a REDUCE in the row loop. A float sum adds in NumPy's order and dtype
        (float32 in float32): pairwise along the innermost loop when NumPy's inner loop
        is a reduced axis (``pairwise_block``), else one element after another."""
        kind, dtype = node.attr("kind"), node.type.dtype
        placement = self.group.placement[node.id]
        self.kb.position(Level.ROW, placement.phase)
        pairwise = None
        if kind == "add" and dtype == np.float32 and node.inputs[0] not in self.ordered:
            # the CPU refuses this plan (Plan.cpu_refusal); the GPU keeps a float64 sum
            wide = self.kb.reduce(kind, self.kb.cast(operand, np.float64), np.float64)
            self.kb.position(Level.OUTER, placement.phase)
            return self.kb.cast(wide, dtype)
        if kind == "add" and np.dtype(dtype).kind == "f" and node.inputs[0] in self.ordered:
            shape = self.graph.node(node.inputs[0]).type.shape
            block = pairwise_block(shape, node.attr("axes"))
            if shape != self.group.shape or (len(block) > 1 and not self.rows_collapsed
                                             and not self.span_rows):
                raise _NotFlat
            if len(block) > 1 and not self.rows_collapsed:
                self.pairwise_from = self.perm.index(block[0])
            if block:
                pairwise = NUMPY_BUFSIZE if node.attr("buffered") else 0
        return self.kb.reduce(kind, operand, dtype, pairwise)

    def _result_buffer(self, node_id: int) -> int:
        """Return the output buffer of stored value ``node_id`` (declared on first use)."""
        if node_id not in self.result_buffers:
            node, where = self.graph.node(node_id), self.group.placement[node_id]
            strides, axes = self.strides(node.type.shape, True, where.form)
            self.result_buffers[node_id] = self.kb.add_buffer(
                f"out{self.stored[node_id]}", node.type.dtype, strides, True, node_id, axes)
        return self.result_buffers[node_id]

    def emit(self) -> Kernel:
        self.spills = self._choose_spills()
        self.result_buffers: dict[int, int] = {}
        #: stored value -> its position among the kernel's results (its buffer's name)
        self.stored = {n: i for i, n in enumerate(
            n for n in self.group.nodes if n in self.in_memory)}
        for node_id in self.group.nodes:
            self.value(node_id, self.group.placement[node_id])
        for node_id in self.stored:
            where = self.group.placement[node_id]
            buffer = self._result_buffer(node_id)
            self.kb.position(where.level, where.phase)
            self.kb.current_node = node_id
            self.kb.store(buffer, self.values[(node_id, where)])
        rows = 1 if self.rows_collapsed else len(self.group.row_axes or ())
        return self.kb.finish(tuple(self.group.nodes), rows, self.group.phases,
                              self.pairwise_from)


def pairwise_block(shape: tuple[Dim, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """Return the axes NumPy's float sum over ``axes`` of a C-ordered array of ``shape``
    adds with one ``pairwise_sum``: its iterator drops length-1 axes and coalesces the
    rest, so when the last remaining axis is reduced, the trailing run of reduced axes is
    one contiguous inner loop (else the inner loop is not reduced: ``out[j] += a[i, j]``,
    one element after another). Verified bit for bit against NumPy 2.4."""
    block: list[int] = []
    for axis in reversed([a for a, d in enumerate(shape) if d != 1]):
        if axis not in axes:
            break
        block.insert(0, axis)
    return tuple(block)


def _emit_kernel(graph: Graph, group: Group, name: str, in_memory: set[int],
                 contiguous: Sequence[bool], ordered: set[int]) -> Kernel:
    """Emit one group's kernel. A pairwise sum over several row axes wants them as one
    loop (when every buffer is flat over them), else a run spanning the row loops."""
    try:
        return _KernelEmitter(graph, group, name, in_memory, contiguous, ordered).emit()
    except _NotFlat:
        pass
    try:
        return _KernelEmitter(graph, group, name, in_memory, contiguous, ordered,
                              True).emit()
    except _NotFlat:   # the run spans the row loops: positions split by division
        pass
    try:
        return _KernelEmitter(graph, group, name, in_memory, contiguous, ordered,
                              span_rows=True).emit()
    except _NotFlat:
        first = graph.node(group.nodes[0])
        raise UnsupportedError("a float sum of a value broadcast along its reduced axes",
                               first.loc) from None


@dataclass(frozen=True)
class Outline:
    """What a kernel is before it is emitted, for a compile-cost estimate that need not
    emit it (``plan_kernels``' ``check``): its loops (``phases``), graph ops, and a ``key``
    equal for kernels whose module texts are equal (it may tell apart a few that are not)."""

    phases: int
    ops: int
    key: tuple


def _const_key(node: Node) -> object:
    """The constant as its kernel text holds it (its bytes in its dtype: -0.0 is not 0.0)."""
    try:
        return np.asarray(node.attr("value"), node.type.dtype).tobytes()
    except (TypeError, ValueError, OverflowError):
        return repr(node.attr("value"))


def _outline(graph: Graph, group: Group, in_memory: set[int]) -> Outline:
    """Return ``group``'s Outline: the ops (and dtypes) it emits in order, and the values
    of the constants they read (rendered into the text), with its phases."""
    emitted = sorted(group.placement)
    nodes = [graph.node(n) for n in emitted]
    consts = tuple(_const_key(graph.node(i)) for node in nodes for i in node.inputs
                   if graph.node(i).op is Op.CONST and i not in in_memory)
    ops = tuple((node.op, node.type.dtype.str) for node in nodes)
    return Outline(group.phases, len(emitted), (group.phases, ops, consts))


def plan_kernels(graph: Graph, contiguous: Sequence[bool], max_ops: int = DEFAULT_MAX_OPS,
                 check: Callable[[Sequence[Outline]], None] | None = None,
                 c_strided: Sequence[bool] = (), prefix: str = "") -> Plan:
    """Partition ``graph`` and emit one Kernel per group.

    ``contiguous[i]`` says whether parameter i is a C-contiguous array (from the signature),
    ``c_strided[i]`` whether it is a C-ordered strided one (signature.c_ordered_strided).
    ``check`` sees the kernels' outlines before they are emitted (emitting is most of the
    planning time) and raises to stop: a program over the compile budget falls back
    within the time its trace and partition took. With checks on (``AUTOJIT_CHECKS``) the
    graph, the graph with its reductions split and every kernel are verified (``ir.verify``).
    """
    if len(graph.nodes) > MAX_PLAN_NODES:
        raise UnsupportedError(f"the program has {len(graph.nodes)} operations, over the "
                               f"{MAX_PLAN_NODES} autojit plans (a long Python loop "
                               "unrolled?); running it as plain Python", graph.loc)
    graph = check_graph(split_reductions(check_graph(graph)))
    ordered, in_order = _order_sets(graph, contiguous, c_strided)
    exact = numpy_ordered_reductions(graph, ordered, in_order)
    # the values the kernels sum in NumPy's order (a refused plan runs on the GPU only)
    ordered |= {graph.node(r).inputs[0] for r in exact}
    groups = partition_graph(graph, max_ops)
    allocations = _materialised(graph, groups)
    in_memory = set(allocations)
    if check is not None:
        check([_outline(graph, g, in_memory) for g in groups if not g.library])
    kernels: list[Kernel] = []
    libraries: list[LibraryCall] = []
    order: list[tuple[str, int]] = []
    bodies: list[tuple[Node, Group, Plan, NativeLoop | None]] = []
    for group in groups:
        first = graph.node(group.nodes[0])
        if first.op is Op.REGION:
            order.append(("region", len(bodies)))
            region = first.attr("region")
            bodies.append((first, group, plan_kernels(
                region.body, region.contiguous, max_ops, check,
                prefix=f"{prefix}r{len(bodies)}_"),
                native_loop(region, f"{prefix}r{len(bodies)}_loop")))
            continue
        if group.library:
            order.append(("library", len(libraries)))
            libraries.append(LibraryCall(first.op.value, first.inputs, first.id))
            continue
        name = f"{prefix}k{len(kernels)}_{first.op.value}"
        order.append(("kernel", len(kernels)))
        kernels.append(check_kernel(_emit_kernel(graph, group, name, in_memory, contiguous,
                                                 ordered)))
    refusal = _summation_order_refusal(graph, exact, in_order)
    regions = []
    for node, group, body, native in bodies:
        carries = sorted((graph.node(n).attr("index"), n) for n in group.nodes
                         if graph.node(n).op is Op.CARRY)
        regions.append(RegionCall(node.id, node.attr("region"), body, node.inputs,
                                  tuple(n for _, n in carries), len(kernels), native))
        kernels += body.kernels   # named r<j>_k<i>_<op> (unique across the plan)
        if native is not None:
            kernels.append(native.kernel)   # r<j>_loop
        refusal = refusal or body.cpu_refusal
    return Plan(graph, tuple(kernels), tuple(allocations), tuple(libraries), tuple(order),
                cpu_refusal=refusal, regions=tuple(regions))


__all__ = ["DEFAULT_MAX_OPS", "LEAF_OPS", "Outline", "Plan", "RegionCall", "c_ordered_values",
           "numpy_ordered_reductions", "pairwise_block", "plan_kernels"]
