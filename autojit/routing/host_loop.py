"""Plain Python for a compiled function whose loops run as the host loop much slower than
the function itself runs (a tiny body per iteration, a huge trip count): a measured rule,
per compiled entry, not a guess from the cost model.

The host loop (``runtime.regions``) runs a body's plan per iteration, a few microseconds
of Python; the plain function's iteration of ``x[i % 4] += 1.0`` costs ~0.1 us. A compiled
call that ran at least ``MIN_ITERATIONS`` host iterations is remembered with its time and
its arguments' layout and Python values; the next call of the same arguments (same
shapes, dtypes, strides and scalars: the same trip counts) runs as plain Python, timed.
Python ``PREFER_RATIO`` times faster or more: the entry's later calls of arrays up to
``SIZE_SCOPE`` times as big run as plain Python, with the measured reason (bigger arrays
give the kernels more work per iteration: those stay compiled); else the entry stays
compiled and is not probed again. A forced route (``force=``, ``AUTOJIT_FORCE``) is never
changed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: host loop iterations one compiled call must run before it is compared with Python
MIN_ITERATIONS = 1000
#: how much faster the plain function must have run the same call
PREFER_RATIO = 3.0
#: how much bigger (elements of all array arguments) a call may be than the measured one
SIZE_SCOPE = 2

_SCALARS = (bool, int, float, complex, str, type(None))


def call_key(args: tuple) -> tuple | None:
    """What fixes a call's trip counts, as a key: each array's shape, dtype and strides,
    each Python scalar's type and value; None where an argument is neither."""
    parts: list[Any] = []
    for value in args:
        if value.__class__ is np.ndarray:
            parts.append((value.shape, value.dtype.str, value.strides))
        elif value.__class__ in _SCALARS:
            parts.append((value.__class__, value))
        else:
            return None
    return tuple(parts)


class HostLoopRule:
    """One entry's comparison of its host loop with plain Python: ``pending`` (the key and
    seconds of a compiled call to compare), then ``python`` (the reason: later calls run
    as plain Python) or ``done`` (compiled stays)."""

    __slots__ = ("pending", "python", "done", "limit")

    def __init__(self) -> None:
        self.pending: tuple[tuple, float, int] | None = None
        self.python: str | None = None
        self.done = False
        self.limit = 0   # the most array elements of a call run as Python

    def covers(self, args: tuple) -> bool:
        """Whether the measured verdict (``python``) holds for this call's array sizes."""
        return sum(a.size for a in args if a.__class__ is np.ndarray) <= self.limit

    def after_compiled(self, args: tuple, seconds: float, iterations: int) -> None:
        """A compiled call ran ``iterations`` host loop iterations in ``seconds``."""
        if self.done or self.pending is not None or iterations < MIN_ITERATIONS:
            return
        key = call_key(args)
        if key is not None:
            self.pending = (key, seconds, iterations)

    def wants_probe(self, args: tuple) -> bool:
        """Whether this call repeats the pending one's arguments (run it as Python, timed)."""
        pending = self.pending
        return pending is not None and call_key(args) == pending[0]

    def after_python(self, seconds: float) -> str | None:
        """The probe ran as plain Python in ``seconds``: the reason later calls run as
        Python, or None (the entry stays compiled)."""
        assert self.pending is not None
        key, compiled, iterations = self.pending
        self.pending, self.done = None, True
        if seconds * PREFER_RATIO > compiled:
            return None
        self.limit = SIZE_SCOPE * sum(math.prod(part[0]) for part in key
                                      if part[0].__class__ is tuple)   # (arrays' shapes)
        self.python = (f"plain Python ran a call {compiled / max(seconds, 1e-9):.0f}x faster "
                       f"than its compiled host loop ({iterations} iterations, "
                       f"{compiled / iterations * 1e6:.1f} us each)")
        return self.python
