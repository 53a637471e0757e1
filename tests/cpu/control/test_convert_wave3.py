"""More of the code people write compiles (issue 15, wave 3, the converter and host side):
Python scalars returned as Python scalars, ``int()``/``float()``/``len()``/``bool()`` of
traced values, ``if`` on a loop index inside a loop body, ``for`` loops that ``break``.
Every test compares with plain NumPy through the oracle and checks the result types."""

from __future__ import annotations

import numpy as np

from tests.support.oracle import assert_calls_match_numpy


def _compiled(jitted, compiles: int = 1) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == compiles, stats["recompiles"]


# -- returning Python scalars ------------------------------------------------------------
def constant_float(x, c):
    acc = 1.5
    acc += 0.5
    return x * 2.0, acc


def constant_int(x):
    count = 0
    return count


def constants_exact(x):
    return -0.0, float("nan"), 2 ** 70, True, x + 1


def test_a_python_constant_returned_stays_a_python_scalar() -> None:
    for fn, calls in ((constant_float, [(np.ones(3), 0.5), (np.arange(5.0), 1.5)]),
                      (constant_int, [(np.ones(3),), (np.ones(7),)]),
                      (constants_exact, [(np.ones(2),), (np.zeros(4),)])):
        _compiled(assert_calls_match_numpy(fn, calls))
