"""A call whose arguments share memory that the compiled version took for separate arrays
(``f(z, z)`` of a function writing one and reading the other after the write) runs as plain
Python — NumPy's answer — and says so, as every fallback does: the reason (with the
function's file:line and both names) in ``stats()["fallbacks"]`` and a FallbackWarning;
before, only ``routes["python"]`` moved (an npbench differential test)."""

from __future__ import annotations

import warnings

import numpy as np

from autojit import autoroute
from autojit.errors import FallbackWarning


def smooth(a, b):
    b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    return a


def test_a_call_on_shared_arguments_notes_its_fallback() -> None:
    jitted = autoroute(smooth)
    jitted(np.arange(8.0), np.arange(8.0))
    assert jitted.stats()["fallbacks"] == []
    z, expected = np.arange(8.0), np.arange(8.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = jitted(z, z)
    want = smooth(expected, expected)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(z, expected)
    stats = jitted.stats()
    assert stats["routes"] == {"cpu": 1, "gpu": 0, "python": 1}
    (reason,) = stats["fallbacks"]
    assert "arguments a and b share memory; the compiled version writes a" in reason, reason
    assert "test_shared_argument_fallback.py:" in reason, reason
    assert any(issubclass(w.category, FallbackWarning) for w in caught)
    jitted(np.arange(8.0), np.arange(8.0))   # separate arrays again: compiled
    assert jitted.stats()["routes"]["cpu"] == 2
