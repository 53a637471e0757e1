"""The trace being recorded: nodes, size symbols and guards, plus the user's source location.

The current trace lives in a ContextVar, the only mutable global of the package.
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.graph import Node, SourceLoc
from autojit.ir.ops import Op
from autojit.ir.types import Dim, TensorType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_SKIPPED_DIRS = (_PACKAGE_DIR + os.sep, _NUMPY_DIR + os.sep)

#: Python loops over arrays unroll into the trace; beyond this many nodes, compiling would
#: take longer than it could save.
MAX_TRACE_NODES = 20_000


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
    memory_of: dict[int, int] = field(default_factory=dict)     # node -> argument it views
    param_memory: dict[int, list[int]] = field(default_factory=dict)  # since the last write
    param_readers: dict[int, set[int]] = field(default_factory=dict)  # since the last write

    # -- size symbols ---------------------------------------------------------------------
    def new_symbol(self, example_size: int) -> str:
        name = f"n{len(self.parent)}"
        self.parent[name] = name
        self.example_sizes[name] = example_size
        return name

    def find(self, dim: Dim) -> Dim:
        if isinstance(dim, int):
            return dim
        while self.parent[dim] != dim:
            self.parent[dim] = self.parent[self.parent[dim]]
            dim = self.parent[dim]
        return dim

    def unify(self, a: Dim, b: Dim) -> Dim:
        """Merge two size symbols NumPy requires to be equal; return the survivor."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        if self.example_sizes.get(a) != self.example_sizes.get(b):
            raise BroadcastError(f"shapes do not broadcast: sizes {self.example_sizes.get(a)} "
                             f"and {self.example_sizes.get(b)}", user_location(2))
        keep, drop = sorted((a, b), key=lambda s: int(s[1:]))
        self.parent[drop] = keep
        return keep

    def concrete(self, dim: Dim) -> int:
        """Return a dim's size at trace time, guarding on it (the trace now depends on it)."""
        dim = self.find(dim)
        if isinstance(dim, int):
            return dim
        self.guards[dim] = self.example_sizes[dim]
        return self.example_sizes[dim]

    # -- nodes ------------------------------------------------------------------------------
    def add_node(self, op: Op, inputs: tuple[int, ...], type_: TensorType,
                 attrs: tuple[tuple[str, Any], ...] = (), loc: SourceLoc | None = None) -> int:
        if len(self.nodes) >= MAX_TRACE_NODES:
            raise TraceError(f"the trace exceeds {MAX_TRACE_NODES} operations (a long Python "
                             "loop unrolled?); running it as plain Python instead of "
                             "compiling for minutes", loc or user_location(2))
        if self.stale.intersection(inputs):
            raise UnsupportedError("reading an argument (or a view of it) as it was before a "
                                   "later write to it is not supported", loc or user_location(2))
        key = (op, inputs, repr(attrs), type_.dtype.str, type_.shape)
        if op not in (Op.ARG, Op.FILL, Op.WRITE) and key in self.seen:
            return self.seen[key]   # the same pure computation again (x @ w twice): reuse it
        node = Node(len(self.nodes), op, inputs, type_, loc or user_location(2), attrs)
        self.nodes.append(node)
        self.seen[key] = node.id
        self._index_memory(node)
        return node.id

    def _index_memory(self, node: Node) -> None:
        """Keep, per argument, its memory's nodes and their readers since the last write
        (kept as the trace grows: a loop of writes must not rescan the whole trace)."""
        param = node.attr("index") if node.op is Op.ARG else (
            self.memory_of.get(node.inputs[0]) if node.op in (Op.VIEW, Op.WRITE) else None)
        if param is not None:
            self.memory_of[node.id] = param
            self.param_memory.setdefault(param, []).append(node.id)
        if node.op is Op.VIEW:
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
        """After a write: the argument's earlier versions and views may no longer be read."""
        written = self.nodes[-1].id
        self.stale.update(n for n in self.param_memory.get(param, ()) if n != written)
        self.param_memory[param] = [written]
        self.param_readers[param] = set()

    def add_const(self, value: Any, dtype: np.dtype) -> int:
        dtype = np.dtype(dtype)
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
        for n in self.nodes:
            n = replace(n, type=TensorType(n.type.dtype, tuple(self.find(d) for d in n.type.shape)))
            if n.op is Op.SIZE:
                symbols = tuple(sorted(str(self.find(s)) for s in n.attr("symbols")))
                n = replace(n, attrs=(("symbols", symbols),))
            nodes.append(n)
        return nodes


CURRENT_TRACE: contextvars.ContextVar[TraceState | None] = contextvars.ContextVar(
    "autojit_current_trace", default=None)


def current_trace() -> TraceState:
    """Return the trace being recorded; raise TraceError outside a trace."""
    state = CURRENT_TRACE.get()
    if state is None:
        raise TraceError("a traced array escaped its trace (stored in a global or closure?)")
    return state
