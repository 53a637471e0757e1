"""Loops and branches on traced values as regions of the graph (issue 15).

``tracer/control.py`` asks these while a trace records; each returns the carried values
after the statement, or ``NotImplemented`` to decline (the statement then runs as Python:
a loop with concrete bounds unrolls into the trace, a traced condition falls back).

Interface (fixed for issue 15's helpers; filled in by the regions branch):

- ``trace_for(bounds, body, carried, captured, names)``
- ``trace_while(cond, body, carried, captured, names)``
- ``trace_if(pred, then, orelse, carried, captured, names)``

with the arguments of ``control.for_range``, ``control.while_loop``, ``control.if_else``.
"""

from __future__ import annotations

from typing import Any


def trace_for(bounds: tuple, body: Any, carried: tuple, captured: tuple, names: Any) -> Any:
    return NotImplemented


def trace_while(cond: Any, body: Any, carried: tuple, captured: tuple, names: Any) -> Any:
    return NotImplemented


def trace_if(pred: Any, then: Any, orelse: Any, carried: tuple, captured: tuple,
             names: Any) -> Any:
    return NotImplemented
