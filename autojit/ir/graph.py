"""The traced dataflow graph: frozen nodes in topological order."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from autojit.ir.host import HostStep
from autojit.ir.ops import Op
from autojit.ir.types import TensorType


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's source: ``model.py:11:9``."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}:{self.col}"

    @property
    def full(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Node:
    """One value of the graph. ``attrs`` holds op-specific data as sorted (key, value) pairs.

    ARG nodes have ``index`` (position among the call's arguments); CONST nodes ``value``;
    CAST nodes take their target dtype from ``type``.
    """

    id: int
    op: Op
    inputs: tuple[int, ...]
    type: TensorType
    loc: SourceLoc | None = None
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, name: str, default: Any = None) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        return default


@dataclass(frozen=True)
class Param:
    """A function parameter as traced: ``kind`` is 'array' or 'scalar' (a runtime scalar)."""

    name: str
    kind: str
    type: TensorType


@dataclass(frozen=True)
class Graph:
    """A traced function.

    ``outputs`` are node ids; ``output_tuple`` says whether the function returned a tuple;
    ``scalar_outputs`` marks results NumPy returns as a scalar rather than a 0-d array
    (2: a Python number, ``tracer/pyscalars.py``).
    ``guards`` are sizes the Python code read as concrete numbers (the trace is specialised
    on them); ``dims`` maps each size symbol to the (argument, axis) pairs it is read from
    (several when broadcasting made sizes equal: a call must agree or NumPy would raise);
    ``int_guards`` lists (call argument, dtype) pairs: a Python scalar (an argument or a
    prologue value) NumPy converts to that dtype, so a call must pass a value it converts
    (an int in range; no NaN or inf into an integer), else NumPy raises.
    ``prologue`` is the host prologue (``autojit.ir.host``): Python-scalar arithmetic,
    replayed per call; its values are the last ``len(prologue)`` params (kind 'scalar').
    ``scalar_dims`` lists (size symbol, call argument) pairs: a size a Python int of the
    call gives (``np.empty((n, n))``, ``np.arange(n)``: an argument or a prologue value),
    bound at each call (a negative value: NumPy raises); a symbol the trace specialised on
    being 1 is the literal 1 there (another value misses and retraces).
    ``decisions`` lists (call argument, value, where): a bool prologue value Python branched
    on while tracing (``if n > 100:``); a call where it differs misses and retraces.
    """

    name: str
    params: tuple[Param, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]
    output_tuple: bool = False
    scalar_outputs: tuple[bool | int, ...] = ()
    guards: tuple[tuple[str, int], ...] = ()
    dims: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
    int_guards: tuple[tuple[int, str], ...] = ()
    nonempty: tuple[str, ...] = ()          # sizes NumPy requires > 0 (max of nothing raises)
    loc: SourceLoc | None = None
    prologue: tuple[HostStep, ...] = ()
    scalar_dims: tuple[tuple[str | int, int], ...] = ()
    decisions: tuple[tuple[int, bool, str], ...] = ()
    #: for reports only: ("loop" or "branch", file:line, why) of each loop or branch on a
    #: traced value that ran as Python while tracing (unrolled into the trace, or inline)
    declined: tuple[tuple[str, str, str], ...] = field(default=(), compare=False)
    #: size symbols a loop body was frozen with that the trace merged with another later
    #: (``x += z`` after the loop makes x's size z's): (old name, the size it is now)
    size_aliases: tuple[tuple[str, Any], ...] = ()
    _by_id: dict[int, Node] = field(default_factory=dict, compare=False, repr=False)

    def node(self, node_id: int) -> Node:
        if not self._by_id:
            self._by_id.update((n.id, n) for n in self.nodes)
        return self._by_id[node_id]

    def users(self) -> dict[int, list[int]]:
        """Return node id -> ids of the nodes that read it, in topological order."""
        result: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                result[i].append(n.id)
        return result
