"""The full Python call path's shortcuts (native kernel call, per-plan precomputed checks)
give NumPy's answers, and every check they stand for still decides the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.dispatch import fastpath
from autojit.lower_cpu import program as program_module
from autojit.runtime import binding, targets

needs_native = pytest.mark.skipif(not fastpath.available(), reason="no native extension")


def _full_path(f: Any) -> Any:
    """Return dispatcher ``f`` with its native fast path off: every call takes __call__'s
    full Python path."""
    f._fastpath.after_cpu_call = lambda *args, **kwargs: None
    f._fast = None
    return f


def _full_path_calls(fn: Callable, calls: list[tuple]) -> Any:
    jitted = _full_path(autoroute(fn, force="cpu"))
    for args in calls:
        expected = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        got = jitted(*args)
        assert type(got) is type(expected)
        np.testing.assert_array_equal(got, expected)
    return jitted


@needs_native
def test_native_kernel_call_gives_the_ctypes_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    f = autoroute(lambda a, b: a * b + 1.0, force="cpu")
    x, y = np.arange(50.0), np.linspace(-1, 1, 50)
    f(x, y)
    entry = next(iter(f._cache.values()))[0]
    program = entry.programs("cpu")[0]
    natively, by_ctypes = np.empty_like(x), np.empty_like(x)
    program.call(targets._addresses([x, y, natively]), [x.size])
    monkeypatch.setattr(program_module, "_native_call", None)
    program.call(targets._python_addresses([x, y, by_ctypes]), [x.size])
    np.testing.assert_array_equal(natively, x * y + 1.0)
    np.testing.assert_array_equal(by_ctypes, natively)


@needs_native
def test_native_addresses_are_the_data_pointers() -> None:
    x = np.arange(10.0)[::3]
    assert targets._addresses([x, 7, np.int64(9)]) == [x.ctypes.data, 7, 9]
    with pytest.raises(TypeError, match="ndarray or an address"):
        targets._addresses([1.5])


@pytest.mark.parametrize("native", [True, False], ids=["native", "ctypes"])
def test_full_path_answers_match_numpy_with_or_without_native_helpers(
        monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    if not native:
        monkeypatch.setattr(program_module, "_native_call", None)
        monkeypatch.setattr(targets, "_addresses", targets._python_addresses)
    x = np.arange(12.0).reshape(3, 4)
    _full_path_calls(lambda a: a + 1.0, [(x,), (x.T,), (np.arange(5.0),)])
    _full_path_calls(lambda a, s: (a * s).sum(axis=0), [(x, 2.0), (x[:, ::2], 3)])
    _full_path_calls(lambda a: np.sqrt(a)[1:], [(np.arange(7.0),), (np.arange(3.0),)])
    assert_calls_match_numpy(lambda a, b: a - b, [(x, x[0]), (x, np.float32(2))])


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 7])
def test_size_limit_is_the_exact_integer_root(rank: int) -> None:
    root = binding._integer_root(binding._MAX_ELEMENTS, rank)
    assert root ** rank <= binding._MAX_ELEMENTS < (root + 1) ** rank


def test_a_broadcast_too_big_for_numpy_still_raises_on_the_full_path() -> None:
    big = 1 << 32   # (2**32, 1) + (1, 2**32): 2**64 elements, NumPy's ValueError
    column = np.broadcast_to(np.zeros((1, 1)), (big, 1))
    row = np.broadcast_to(np.zeros((1, 1)), (1, big))
    small = (np.zeros((3, 1)), np.ones((1, 4)))
    jitted = _full_path_calls(lambda a, b: a + b, [small, small])
    with pytest.raises(ValueError):
        column + row
    with pytest.raises(ValueError):
        jitted(column, row)


def _expect_same(jitted: Any, fn: Callable, *args: Any) -> None:
    """One call of ``jitted`` against ``fn``: the same result (type, values) or exception."""
    try:
        expected = fn(*args)
    except Exception as exc:  # the oracle's exception is the answer
        with pytest.raises(type(exc)):
            jitted(*args)
        return
    got = jitted(*args)
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)


def test_host_prologue_replayed_per_call_on_the_full_path() -> None:
    def fn(a: np.ndarray, s: Any) -> np.ndarray:
        return a * (1.0 / s + 2.0)

    jitted = _full_path(autoroute(fn, force="cpu"))
    x = np.arange(6.0)
    for s in (1.5, 4.0, 0.0, 3, 1.5, -0.0):   # 0.0: ZeroDivisionError; 3: an int, retrace
        _expect_same(jitted, fn, x, s)


def test_python_int_ranges_still_checked_on_the_full_path() -> None:
    def fn(a: np.ndarray, k: int) -> np.ndarray:
        return a + k

    jitted = _full_path(autoroute(fn, force="cpu"))
    small = np.arange(5, dtype=np.uint8)
    for k in (3, 255, 256, -1, 7):   # 256 and -1: NumPy's OverflowError for uint8
        _expect_same(jitted, fn, small, k)
    wide = np.arange(5, dtype=np.int16)
    for k in (1, 32767, 32768, -32769, 2):
        _expect_same(jitted, fn, wide, k)
