"""The trace being recorded: nodes, size symbols and guards, plus the user's source location.

The current trace lives in a ContextVar, the only mutable global of the package.
"""

from __future__ import annotations

import contextvars
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.graph import Node, SourceLoc
from autojit.ir.host import HostStep
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
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_SKIPPED_DIRS):
            return _frame_location(frame)
        frame = frame.f_back
    return None


def _frame_location(frame: Any) -> SourceLoc:
    positions = list(frame.f_code.co_positions())
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
    arg_count: int = 0                                   # the call's own arguments
    host_steps: list[HostStep] = field(default_factory=list)   # the host prologue
    host_inputs: dict[tuple[int, str], int] = field(default_factory=dict)

    # -- the host prologue (Python scalars; see autojit.ir.host) ------------------------
    def add_host_step(self, step: HostStep) -> int:
        """Append a host step; return the call argument index its value will have."""
        self.host_steps.append(step)
        self.params_kind.append("scalar")
        return self.arg_count + len(self.host_steps) - 1

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
        return node.id

    def param_nodes(self, param: int) -> set[int]:
        """Return nodes that are (views of) argument ``param``'s memory, any version."""
        found: set[int] = set()
        for node in self.nodes:
            is_root = node.op is Op.ARG and node.attr("index") == param
            if is_root or node.op in (Op.VIEW, Op.WRITE) and node.inputs[0] in found:
                found.add(node.id)
        return found

    def readers_of_param(self, param: int) -> set[int]:
        """Return nodes that read argument ``param``'s memory (a write must follow them)."""
        memory = self.param_nodes(param)
        return {n.id for n in self.nodes if n.op not in (Op.VIEW,)
                and any(i in memory for i in n.inputs) and n.id not in memory}

    def retire(self, param: int) -> None:
        """After a write: the argument's earlier versions and views may no longer be read."""
        self.stale |= self.param_nodes(param) - {self.nodes[-1].id}

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
