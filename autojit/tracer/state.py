"""The trace being recorded: nodes, size symbols and guards, plus the user's source location.

The current trace lives in a ContextVar, the only mutable global of the package.
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.fp_errors import current_policy, numpy_reports_fp_errors
from autojit.ir.graph import Node, SourceLoc
from autojit.ir.host import HostStep
from autojit.ir.ops import Op
from autojit.ir.types import Dim, TensorType
from autojit.ir.views import ScalarRef

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_SKIPPED_DIRS = (_PACKAGE_DIR + os.sep, _NUMPY_DIR + os.sep)

#: Python loops over arrays unroll into the trace (where a loop is not traced once as a
#: region); beyond this many nodes the call falls back. Measured on the 2-core Xeon, shared
#: (A/B against 20,000, alternating processes): tracing costs a flat 25-50 us a node (1,000
#: to 30,000 iterations), planning ~55-100 us; a 100,000-iteration loop's first call falls
#: back in 0.21-0.30 s (0.56-0.57 s at 20,000), and the longest trace under the bound
#: (go_fast 3000x3000, 9,003 nodes) compiles and runs in 1.1-1.7 s.
MAX_TRACE_NODES = 10_000

#: operations a trace may record, new or reused (``y = x * 2`` in a loop is one node, and
#: 200,000 iterations of it took 6.7 s to trace), host prologue steps included: each costs
#: the tracer what a new node does, so this bounds the trace's time as the other its size
MAX_TRACE_OPERATIONS = 2 * MAX_TRACE_NODES


def user_location(skip_frames: int = 1) -> SourceLoc | None:
    """Return the innermost caller frame outside autojit and NumPy as a SourceLoc."""
    frame = sys._getframe(skip_frames)
    while frame is not None:
        if not _is_skipped(frame.f_code.co_filename):
            return _frame_location(frame)
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=1024)
def _is_skipped(filename: str) -> bool:
    """Return True for autojit's and NumPy's own files (asked once per node: cached)."""
    return os.path.abspath(filename).startswith(_SKIPPED_DIRS)


@functools.lru_cache(maxsize=256)
def _positions(code: Any) -> list:
    return list(code.co_positions())


def _frame_location(frame: Any) -> SourceLoc:
    positions = _positions(frame.f_code)
    index = frame.f_lasti // 2
    line, col = frame.f_lineno, 0
    if 0 <= index < len(positions):
        start_line, _, start_col, _ = positions[index]
        line = start_line or line
        col = (start_col or 0) + 1
    return SourceLoc(frame.f_code.co_filename, line, col)


@dataclass
class TraceState:
    """Mutable recording state of one trace; frozen into a Graph at the end."""

    nodes: list[Node] = field(default_factory=list)
    parent: dict[str, str] = field(default_factory=dict)
    guards: dict[str, int] = field(default_factory=dict)
    example_sizes: dict[str, int] = field(default_factory=dict)
    int_guards: set[tuple[int, str]] = field(default_factory=set)
    nonempty: set[str] = field(default_factory=set)
    seen: dict[tuple, int] = field(default_factory=dict)
    stale: set[int] = field(default_factory=set)        # versions of arguments since written
    params_kind: list[str] = field(default_factory=list)
    consts: dict[tuple, int] = field(default_factory=dict)
    fp_policy: object = field(default_factory=current_policy)   # np.errstate at trace start
    versions: dict[int, int] = field(default_factory=dict)   # argument -> its current node
    argument_symbols: set[str] = field(default_factory=set)   # never 1 (the signature's)
    arg_count: int = 0                                   # the call's own arguments
    host_steps: list[HostStep] = field(default_factory=list)   # the host prologue
    host_inputs: dict[tuple[int, str], int] = field(default_factory=dict)
    # Python ints of the call read as index or slice bounds (ScalarRef) -> trace-time value
    ref_values: dict[int, int] = field(default_factory=dict)
    # size symbols bound from a Python int of the call (np.empty(n)): symbol -> argument
    scalar_dims: dict[str, int] = field(default_factory=dict)
    # each argument size symbol -> the (argument, axis) it is read from; prologue steps
    # reading a size as a Python value of the call, by (argument, axis)
    symbol_sources: dict[str, tuple[int, int]] = field(default_factory=dict)
    size_refs: dict[tuple[int, int], int] = field(default_factory=dict)
    # decisions Python took on traced scalars (if n > 100): bool host value -> (its value,
    # where in the user's source)
    decisions: dict[int, tuple[bool, str]] = field(default_factory=dict)
    # loops and branches on traced values that run as Python: ("loop" or "branch",
    # file:line, why), for the report (``Graph.declined``)
    declined: list[tuple[str, str, str]] = field(default_factory=list)
    operations: int = 0                                  # recorded, new or reused
    # inside a branch of an if on a traced value (``tracer/regions.py``): makes the bool
    # scalar Proxy under which the branch runs; every write stores where(it, new, old)
    predicate: Any = None
    # comparisons of Python numbers computed from traced values (``tracer/pyscalars.py``):
    # Python bools that only a condition may read
    python_bools: set[int] = field(default_factory=set)
    # Python ints of the graph (``tracer/pyscalars.py``): what bounds each one's magnitude;
    # ``in_body``: a loop body's trace (its ints are bounded when its region is built)
    python_ints: Any = None   # a ``pyscalars.IntBounds``, made on first use
    in_body: bool = False
    # the node count where each conditional expression on a traced value began (its sides
    # may not write: ``tracer/regions.trace_select``)
    select_marks: list[int] = field(default_factory=list)
    # a loop body's trace (``tracer/regions._Body``): the size symbol's Python int as the
    # enclosing trace gives it (``x.shape[0]`` of a captured argument), or None
    outer_size: Any = None
    # a loop body's trace: the parameter holding a host step's value where the enclosing
    # trace computes it once (the step is the same at every iteration), or None
    hoist_step: Any = None
    # ``and``/``or`` right operands being evaluated whichever way their traced left operand
    # decides (``control.and_left``): with ``predicate`` and ``select_marks``, where a host
    # step Python may raise in is refused (``host._record``)
    speculative: int = 0
    # in a loop body: the sizes its outermost trace guards nonzero for it (``nonempty``)
    outer_nonempty: set[str] = field(default_factory=set)

    # -- the host prologue (Python scalars; see autojit.ir.host) ------------------------
    def add_host_step(self, step: HostStep, value: Any = None) -> int:
        """Append a host step (``value``: its value for the example arguments); return the
        call argument index its value will have. Bounded as the nodes are: a Python loop
        deciding on scalars (``while i < n``) unrolls."""
        if self.hoist_step is not None:   # a loop body: computed before the loop?
            hoisted = self.hoist_step(step, value)
            if hoisted is not None:
                return hoisted
        self.count_operation(None)
        if len(self.host_steps) >= MAX_TRACE_NODES:
            raise TraceError(f"the trace exceeds {MAX_TRACE_NODES} Python scalar operations "
                             "(a Python loop on scalars unrolled?); running it as plain Python",
                             user_location(3))
        self.host_steps.append(step)
        self.params_kind.append("scalar")
        return self.arg_count + len(self.host_steps) - 1

    def size_ref(self, arg: int, axis: int) -> int:
        """Return the call argument index of argument ``arg``'s size along ``axis`` as a
        Python int of the call (a host step ``dim``, made once)."""
        key = (arg, axis)
        if key not in self.size_refs:
            self.size_refs[key] = self.add_host_step(
                HostStep("dim", (("ref", arg), ("const", axis)), "int"))
        return self.size_refs[key]

    def size_value(self, dim: Dim) -> Any:
        """``x.shape[k]`` for a size ``dim``: a plain int where it is fixed (1, or
        specialised), the HostScalar of a Python int argument that gave it
        (``np.zeros(n)``), an argument's size as a HostScalar read per call (in a loop
        body: the enclosing trace's, ``outer_size``); any other size (a view's) is
        concrete and guarded, as before."""
        from autojit.tracer.host import HostScalar
        root = self.find(dim)
        if root.__class__ is not str:
            return root
        example = self.example_sizes[root]
        for symbol, ref in self.scalar_dims.items():
            if self.find(symbol) == root:
                return HostScalar(ref, example, None, root)
        for symbol, source in self.symbol_sources.items():
            if self.find(symbol) == root:
                return HostScalar(None, example, frozenset((root,)), root, source)
        if self.outer_size is not None:   # a loop body: the enclosing trace's, unguarded
            found = self.outer_size(root)
            if found is not None:
                return found
        return self.concrete(dim)

    def host_input(self, ref: int, dtype: np.dtype, python_type: type,
                   ufunc_operand: bool = True) -> int:
        """Return the node reading Python scalar call argument ``ref`` converted to
        ``dtype`` as NumPy converts it (a kernel scalar); a conversion NumPy may refuse
        (an int out of range, NaN into an integer) is guarded: such calls run as Python.
        A ufunc converts a Python int for a bool loop through C long: it must fit int64."""
        dtype = np.dtype(dtype)
        if python_type is int and dtype.kind == "b" and ufunc_operand:
            self.int_guards.add((ref, "int64"))
        key = (ref, dtype.str)
        if key not in self.host_inputs:
            if python_type in (int, float) and dtype.kind in "iu":
                self.int_guards.add((ref, dtype.name))
            self.host_inputs[key] = self.add_node(Op.ARG, (), TensorType(dtype, ()),
                                                  (("index", ref),), user_location(3))
        return self.host_inputs[key]
    # node -> the memory it is or views: an argument's index, or a computed value's
    # ``scratch_key`` (an array made inside the function, written into as a scratch array)
    memory_of: dict[int, int] = field(default_factory=dict)
    reused: set[int] = field(default_factory=set)   # nodes a second computation returned
    param_memory: dict[int, list[int]] = field(default_factory=dict)  # since the last write
    param_readers: dict[int, set[int]] = field(default_factory=dict)  # since the last write
    view_copies: dict[int, int] = field(default_factory=dict)   # node -> argument (copy_of)
    # 1-d values NumPy returns as a view of a new array (np.linspace scales a reshaped
    # arange in place): returned, they become a view of the stored value
    numpy_views: set[int] = field(default_factory=set)
    # such values where it depends on Python scalars of the call (np.linspace(0, 1, n)):
    # node -> the bool host value saying so; returning one decides on it (a decision guard)
    conditional_views: dict[int, Any] = field(default_factory=dict)
    c_contiguous_args: set[int] = field(default_factory=set)   # part of the signature

    # -- size symbols ---------------------------------------------------------------------
    def new_symbol(self, example_size: int) -> str:
        name = f"n{len(self.parent)}"
        self.parent[name] = name
        self.example_sizes[name] = example_size
        return name

    def find(self, dim: Dim) -> Dim:
        """Return ``dim``'s class representative: a symbol, or the literal 1 for a derived
        size the trace specialised on being 1 (see ``broadcast``)."""
        root = dim
        while root.__class__ is str and self.parent[root] != root:
            root = self.parent[root]
        while dim.__class__ is str and dim != root:   # path compression
            self.parent[dim], dim = root, self.parent[dim]
        return root

    def unify(self, a: Dim, b: Dim) -> Dim:
        """Merge two size symbols NumPy requires to be equal; return the survivor."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        if self.example_of(a) != self.example_of(b):
            raise BroadcastError(f"shapes do not broadcast: sizes {self.example_of(a)} "
                                 f"and {self.example_of(b)}", user_location(2))
        if a.__class__ is not str or b.__class__ is not str:   # 1 and a derived size 1:
            self.parent[b if a == 1 else a] = 1                # specialise it on 1
            return 1
        keep, drop = sorted((a, b), key=lambda s: int(s[1:]))
        self.parent[drop] = keep
        return keep

    def broadcast(self, a: Dim, b: Dim) -> Dim:
        """Return the size NumPy broadcasting gives two sizes (neither the literal 1).

        A derived size (a view's) that is 1 now while the other is not broadcasts at this
        call only: the trace specialises on it being 1, the symbol becomes the literal 1,
        and a call where that view's size is not 1 misses and retraces (``bind_sizes``)."""
        a, b = self.find(a), self.find(b)
        if a == b or b == 1:
            return a
        if a == 1:
            return b
        example_a, example_b = self.example_sizes[a], self.example_sizes[b]
        if example_a == 1 and example_b != 1:
            self.parent[a] = 1
            return b
        if example_b == 1 and example_a != 1:
            self.parent[b] = 1
            return a
        return self.unify(a, b)

    def as_one(self, dim: Dim) -> bool:
        """Return True when ``dim`` is 1 at this call, specialising a derived size on it
        (NumPy asks "is this size 1?": squeeze, dropping leading dimensions in a write)."""
        dim = self.find(dim)
        if dim.__class__ is not str:
            return dim == 1
        if self.example_sizes[dim] != 1:
            return False
        self.parent[dim] = 1
        return True

    def may_be_one(self, dim: Dim) -> bool:
        """Return True for a symbol that may be 1 at some call of this trace's signature:
        one no argument's dimension is equal to (an argument's size 1 is the literal 1)."""
        dim = self.find(dim)
        return dim.__class__ is str and all(self.find(s) != dim for s in self.argument_symbols)

    def example_of(self, dim: Dim) -> int:
        """Return a dim's size at trace time (no guard)."""
        dim = self.find(dim)
        return self.example_sizes[dim] if dim.__class__ is str else dim

    def concrete(self, dim: Dim) -> int:
        """Return a dim's size at trace time, guarding on it (the trace now depends on it)."""
        dim = self.find(dim)
        if dim.__class__ is not str:
            return dim
        self.guards[dim] = self.example_sizes[dim]
        return self.example_sizes[dim]

    # -- nodes ------------------------------------------------------------------------------
    def add_node(self, op: Op, inputs: tuple[int, ...], type_: TensorType,
                 attrs: tuple[tuple[str, Any], ...] = (), loc: SourceLoc | None = None) -> int:
        if len(self.nodes) >= MAX_TRACE_NODES:
            raise TraceError(f"the trace exceeds {MAX_TRACE_NODES} operations (a long Python "
                             "loop unrolled?); running it as plain Python instead of "
                             "compiling it for seconds", loc or user_location(2))
        self.count_operation(loc)
        if self.fp_policy is not current_policy() and numpy_reports_fp_errors():
            raise UnsupportedError("np.errstate/np.seterr inside the function asks NumPy to "
                                   "raise, call, print or log FP errors, which compiled code "
                                   "cannot report", loc or user_location(2))
        if self.stale.intersection(inputs):   # NumPy shows the write through old views
            inputs = tuple(self.rebase(i, loc or user_location(2)) for i in inputs)
        key = (op, inputs, repr(attrs), type_.dtype.str, type_.shape)
        if op not in (Op.ARG, Op.FILL, Op.WRITE) and key in self.seen:
            # the same pure computation again (x @ w twice): reuse it, unless it is an array
            # written since (its memory holds other values now): then it is computed anew
            hit = self.seen[key]
            if hit not in self.stale:
                self.reused.add(hit)   # two values are one node: writing one copies it first
                return hit
        node = Node(len(self.nodes), op, inputs, type_, loc or user_location(2), attrs)
        self.nodes.append(node)
        self.seen[key] = node.id
        self._index_memory(node)
        return node.id

    def count_operation(self, loc: SourceLoc | None) -> None:
        """Count one recorded operation (``MAX_TRACE_OPERATIONS``): a loop whose every
        iteration reuses nodes grows the trace's time, not its size."""
        self.operations += 1
        if self.operations > MAX_TRACE_OPERATIONS:
            raise TraceError(f"the trace exceeds {MAX_TRACE_OPERATIONS} operations recorded "
                             f"({len(self.nodes)} distinct; a long Python loop unrolled?); "
                             "running it as plain Python instead of tracing it for seconds",
                             loc or user_location(3))

    def current_version(self, param: int) -> int:
        """Return the node that is memory ``param``'s now (an argument's index, or a
        computed value's ``scratch_key``): its last write, or the argument or value itself."""
        if param not in self.versions:
            self.versions[param] = -1 - param if param < 0 else next(
                n.id for n in self.nodes if n.op is Op.ARG and n.attr("index") == param)
        return self.versions[param]

    def rebase(self, node_id: int, loc: SourceLoc | None = None) -> int:
        """Return ``node_id``; for an argument's memory as it was before a later write (a
        version, or a view of one), that memory now: the argument's current version seen
        through the same view steps. A copy NumPy made then (a scalar ``a[0]``, a reshape
        that may copy) keeps the old values: that is refused, not guessed."""
        chain: list[Node] = []   # the stale views, outermost first (walked, not recursed:
        while node_id in self.stale:   # a view chain is as long as the loop that made it)
            node = self.nodes[node_id]
            if node_id in self.view_copies:
                raise UnsupportedError("reading a copy of an array (a scalar a[i], a reshape) "
                                       "taken before a later write to it is not supported", loc)
            if node.op is not Op.VIEW:   # a version: the argument, a computed value, a write
                node_id = self.current_version(self.memory_of[node_id])
                break
            base = self.nodes[node.inputs[0]]
            if not aliases_base(node.attr("step"), base.type.ndim):
                raise UnsupportedError("reading a copy of an array (a scalar a[i], a reshape) "
                                       "taken before a later write to it is not supported", loc)
            chain.append(node)
            node_id = base.id
        for node in reversed(chain):
            key = view_key(node_id, node.attr("step"))
            if key not in self.seen:
                self.seen[key] = self.add_node(Op.VIEW, (node_id,), node.type, node.attrs,
                                               node.loc)
            node_id = self.seen[key]
        return node_id

    def copy_of(self, node_id: int, param: int) -> None:
        """Record ``node_id`` as a copy the trace made of argument ``param``'s memory where
        NumPy may take a view (a reshape after a write): a later write makes it stale, and
        reading it then is refused (``rebase``), as NumPy's view would show that write."""
        self.view_copies[node_id] = param
        self.param_memory.setdefault(param, []).append(node_id)

    def _index_memory(self, node: Node) -> None:
        """Keep, per argument, its memory's nodes and their readers since the last write
        (kept as the trace grows: a loop of writes must not rescan the whole trace)."""
        param = node.attr("index") if node.op is Op.ARG else (
            self.memory_of.get(node.inputs[0]) if node.op in (Op.VIEW, Op.WRITE) else
            None if node.op in (Op.CONST, Op.SIZE) else scratch_key(node.id))
        if param is not None:
            self.memory_of[node.id] = param
            self.param_memory.setdefault(param, []).append(node.id)
        if node.op is Op.VIEW:
            if node.inputs[0] in self.view_copies:   # a view of such a copy: the same
                self.copy_of(node.id, self.view_copies[node.inputs[0]])
            return
        for i in node.inputs:
            read = self.memory_of.get(i)
            if read is not None and read != param:
                self.param_readers.setdefault(read, set()).add(node.id)

    def readers_of_param(self, param: int) -> set[int]:
        """Return nodes that read argument ``param``'s memory since its last write (a write
        must follow them; earlier readers precede that write, which this one follows)."""
        return set(self.param_readers.get(param, ()))

    def retire(self, param: int) -> None:
        """After a write (the last node): the argument's earlier versions and views are
        stale; a read of one reads the new version instead (``rebase``)."""
        written = self.nodes[-1].id
        self.stale.update(n for n in self.param_memory.get(param, ()) if n != written)
        self.param_memory[param] = [written]
        self.param_readers[param] = set()
        self.versions[param] = written

    def add_const(self, value: Any, dtype: np.dtype) -> int:
        dtype = np.dtype(np.dtype(dtype).str)   # np.longlong's dtype is int64's: one node, one type
        python_value = np.asarray(value).astype(dtype).item()
        key = (dtype.str, repr(python_value))
        if key not in self.consts:
            self.consts[key] = self.add_node(Op.CONST, (), TensorType(dtype, ()),
                                             (("value", python_value),))
        return self.consts[key]

    def canonical_nodes(self) -> list[Node]:
        """Return the nodes with every size symbol (in shapes and in SIZE products)
        replaced by its class representative."""
        nodes = []
        find = self.find
        for n in self.nodes:   # (a node per loop iteration: built directly, not replace())
            shape = tuple(d if d.__class__ is int else find(d) for d in n.type.shape)
            attrs = n.attrs
            if n.op is Op.SIZE:   # a size specialised to 1 leaves the product
                found = (find(s) for s in n.attr("symbols"))
                attrs = (("symbols", tuple(sorted(f for f in found if f.__class__ is str))),)
            if shape != n.type.shape or attrs is not n.attrs:
                n = Node(n.id, n.op, n.inputs, TensorType(n.type.dtype, shape), n.loc, attrs)
            nodes.append(n)
        return nodes


def scratch_key(node_id: int) -> int:
    """The memory key of the array computed by ``node_id`` (arguments' keys are >= 0)."""
    return -1 - node_id


def view_key(base: int, step: tuple[str, Any]) -> tuple:
    """The key of view ``step`` of node ``base`` in ``TraceState.seen`` (one node per view)."""
    return ("view", base, repr(step))


def aliases_base(step: tuple[str, Any], base_ndim: int) -> bool:
    """Return True when NumPy's result of ``step`` is always a view of its base: not a
    reshape (a copy when the strides do not allow one) nor an integer per axis (a scalar)."""
    name, argument = step
    if name == "transpose":
        return True
    if name != "getitem":
        return False
    ints = sum(isinstance(part, int) or part.__class__ is ScalarRef for part in argument)
    return ints < base_ndim or any(part is None or part is Ellipsis for part in argument)


CURRENT_TRACE: contextvars.ContextVar[TraceState | None] = contextvars.ContextVar(
    "autojit_current_trace", default=None)


def current_trace() -> TraceState:
    """Return the trace being recorded; raise TraceError outside a trace."""
    state = CURRENT_TRACE.get()
    if state is None:
        raise TraceError("a traced array escaped its trace (stored in a global or closure?)")
    return state
