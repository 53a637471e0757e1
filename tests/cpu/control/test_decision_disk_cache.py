"""Plans that differ only in a Python decision (``if n > 100:`` taken or not) are each kept
in the disk cache: a new process finds both, instead of the last one written replacing
the other (both were stored under one name, the variant of their guards)."""

from __future__ import annotations

import numpy as np

from tests.support.loop_programs import step

from autojit import autoroute


def test_both_decisions_come_back_from_the_disk_cache() -> None:
    x = np.linspace(0.0, 4.0, 7)
    first = autoroute(step)
    for n in (500, 3):
        first(x, n)
    assert first.stats()["compiles"] == 2, first.stats()
    again = autoroute(step)   # a new dispatcher: the memory cache is its own, the disk shared
    for n in (500, 3, 500, 3):
        np.testing.assert_array_equal(again(x, n), step(x, n))
    stats = again.stats()
    assert stats["compiles"] == 0 and stats["routes"]["python"] == 0, stats
    assert stats["disk_hits"] == 2, stats
