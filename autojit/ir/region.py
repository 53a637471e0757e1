"""Loop regions: a ``for`` over ``range`` or a ``while`` traced once, its body a graph.

A REGION node of the outer graph holds a :class:`Region` (attr ``region``). Its inputs are
the outer values the loop reads (bounds, initial carried values, captured values: each
body parameter names its ``Source``); CARRY nodes (attr ``index``) are the carried values
after the loop, and WRITE nodes with attr ``region`` (inputs: the argument's version
before the loop, the REGION) are the next versions of the arguments the body writes into.

Body parameters, in order: for a ``for`` loop the index (a Python int, a host scalar of
the body), then the carried values, then the captured values; the body returns the
carried values (a ``while`` body also returns the next condition, last; a ``for`` body
with a ``break`` returns its break flag among the carried values, ``Region.exit``). The
runner (``runtime.regions``) runs the body's plan once per iteration on the current values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autojit.ir.graph import Graph

#: where a body parameter's value comes from: ("input", k): the REGION node's k-th input
#: (its slot at run time); ("const", value): a Python constant of the trace
Source = tuple[str, Any]


@dataclass(frozen=True)
class Region:
    """One loop. ``kind`` is "for" (``bounds``: start, stop, step) or "while" (``first``:
    the condition before the first iteration); ``carried``/``captured`` are the body
    parameters' sources after the index; ``names`` the carried names (for printing);
    ``contiguous`` per body parameter (how the body is planned). CARRY ``index`` j reads
    the j-th carried result, then the ``private`` copies."""

    kind: str
    body: Graph
    bounds: tuple[Source, ...] = ()
    first: Source | None = None
    carried: tuple[Source, ...] = ()
    captured: tuple[Source, ...] = ()
    names: tuple[str, ...] = ()
    contiguous: tuple[bool, ...] = ()
    #: body parameters (positions in ``sources``) the body writes into that hold a value
    #: computed before the loop: the runner gives the body its own copy, CARRY reads it
    private: tuple[int, ...] = ()
    #: for printing and reports only: the loop index's name in the user's source ("" when
    #: unnamed: ``_`` or not known) and the captured parameters' names, in source order
    index_name: str = ""
    captured_names: tuple[str, ...] = ()
    #: carried parameters (positions in ``sources``) holding a value computed before the
    #: loop that the body updates in place and keeps (``count += inside``): the runner
    #: gives the loop its own copy of the value (the one before the loop may share its
    #: buffer with an equal value), the body then writes it in place at every iteration
    copied: tuple[int, ...] = ()
    #: a ``for`` loop's break flag (``break`` in the body, ``control.Names.flags``): the
    #: carried parameter (position in ``sources``, a 0-d bool) the body sets at the
    #: iteration that breaks; the runners stop after that iteration (and run none where it
    #: is set before the loop). -1: the loop runs its whole range. The body is not guarded
    #: on the flag: every runner must stop there (the host loop, the native driver's EXIT
    #: records, the reference evaluator; ``fuse.native_loop``'s kernel guards itself on it
    #: and runs in pieces, stopping after the piece that breaks)
    exit: int = -1

    @property
    def sources(self) -> tuple[Source, ...]:
        """Every body parameter's source, in parameter order (a for loop's index aside)."""
        return self.carried + self.captured

    def __repr__(self) -> str:   # a node's attrs are keyed by repr: keep it short and exact
        return f"Region({self.kind}, {self.names}, body={id(self.body):#x})"
