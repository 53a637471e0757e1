"""The native warm-call fast path (autojit/dispatch/fastpath.py): same results as the full path
and NumPy, fallback on anything unusual, configuration honoured, stats truthful.

No timings here: ``benchmarks/bench_call_overhead.py`` measures the call overhead.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.oracle import call_numpy, compare_results

import autojit
from autojit import autoroute
from autojit.dispatch import fastpath

pytestmark = pytest.mark.skipif(not fastpath.available(),
                                reason="the native extension autojit._native.fastcall is not built")

ALL_DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                    "uint16", "uint32", "uint64", "float32", "float64")]


def _slow(f: Any, *args: Any) -> Any:
    """Return ``f(*args)`` through the full path (the fast table is set aside for the call)."""
    table, f._fast = f._fast, None
    try:
        return f(*args)
    finally:
        f._fast = table


def _fast_calls(f: Any) -> int:
    return f.stats()["fast_calls"]


def check_three_ways(fn: Callable, *args: Any, fast: bool = True, ulps: int = 0,
                     **options: Any) -> Any:
    """Call ``fn`` under autojit twice (arming, then the fast path), through the full path
    and under NumPy; assert all agree (kind, dtype, shape, values; the two autojit paths
    exactly). ``fast``: whether the second call must have been served natively. Returns
    the dispatcher."""
    f = autoroute(fn, **options)
    expected, error = call_numpy(fn, args)
    assert error is None, error
    first = f(*args)
    before = _fast_calls(f)
    second = f(*args)
    assert _fast_calls(f) == before + int(fast), "fast path use"
    slow = _slow(f, *args)
    for result in (first, second, slow):
        compare_results(result, expected, ulps)
    compare_results(second, slow)
    return f


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dtypes_binary(dtype: np.dtype) -> None:
    x = (np.arange(100) % 7).astype(dtype)
    y = (np.arange(100) % 3).astype(dtype)
    check_three_ways(lambda a, b: a * b + a if a.dtype != bool else a & b | a, x, y)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [2, 2.5, True], ids=["int", "float", "bool"])
def test_python_scalars(dtype: np.dtype, scalar: Any) -> None:
    x = (np.arange(50) % 5).astype(dtype)
    check_three_ways(lambda a, s: a + s, x, scalar)


@pytest.mark.parametrize("scalar", [np.float32(1.5), np.int16(-3), np.float64(2.0),
                                    np.uint8(7), np.bool_(True)], ids=repr)
def test_numpy_scalars(scalar: Any) -> None:
    check_three_ways(lambda a, s: a * s, (np.arange(20) % 3).astype(scalar.dtype), scalar)


def test_scalar_values_change_between_fast_calls() -> None:
    f = autoroute(lambda a, s: a - s)
    x = np.arange(10, dtype=np.int16)
    f(x, 1)
    for s in (0, 5, -300, 32767, -32768):
        compare_results(f(x, s), x - s)
    assert _fast_calls(f) == 5


def test_int_out_of_range_raises_like_numpy() -> None:
    f = autoroute(lambda a, s: a + s)
    x = np.arange(10, dtype=np.int8)
    f(x, 1)
    f(x, 1)
    with pytest.raises(OverflowError):
        x + 200   # NumPy 2 (NEP 50): a Python int that does not fit the array's dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(OverflowError):
            f(x, 200)
    compare_results(f(x, 127), x + 127)


def test_float32_array_with_a_huge_python_float() -> None:
    f = autoroute(lambda a, s: a * s)
    x = np.ones(8, np.float32)
    f(x, 2.0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = x * 1e300
        compare_results(f(x, 1e300), expected)
        compare_results(_slow(f, x, 1e300), expected)


def test_reductions_return_numpy_scalars() -> None:
    x = np.linspace(0, 1, 100)
    f = check_three_ways(lambda a: a.sum(), x)
    assert type(f(x)) is np.float64
    check_three_ways(lambda a: a.mean(), x)
    check_three_ways(lambda a: (a * a).max(axis=0), x.reshape(10, 10))


def _libm_ulps(fn: Callable) -> int:
    """sin/exp are within ULP bounds of NumPy's (``lower_cpu/ulp_bounds.py``), not bit
    for bit, and a sum of them adds those differences (the two autojit paths still agree
    exactly)."""
    return 4 if {"sin", "exp"} & set(fn.__code__.co_names) else 0


@pytest.mark.parametrize("fn", [
    lambda a: a + np.ones(a.shape[1]), lambda a: a * np.full(3, 2.5),
    lambda a: np.where(a > 2, a, 0.0), lambda a: np.sin(a).mean(), lambda a: a.argmax(),
    lambda a: a - a.mean(axis=1, keepdims=True), lambda a: (a * 2.0).sum(axis=0),
], ids=["ones", "full", "where", "sin-mean", "argmax", "keepdims", "column-sum"])
def test_one_kernel_plans(fn: Callable) -> None:
    check_three_ways(fn, np.arange(12.0).reshape(4, 3) - 5.0, ulps=_libm_ulps(fn))


@pytest.mark.parametrize("fn", [
    lambda a: a - a.mean(), lambda a: np.sqrt((a * a).sum(axis=1)),
    lambda a: (np.exp(a - a.max()) / np.exp(a - a.max()).sum(), a.sum()),
    lambda a, s: (a * s).sum() + a.min(),
], ids=["centre", "row-norm", "softmax-pair", "two-reductions"])
def test_fused_plans(fn: Callable) -> None:
    x = np.arange(12.0).reshape(4, 3) - 5.0
    args = (x, 2.5) if fn.__code__.co_argcount == 2 else (x,)
    check_three_ways(fn, *args, ulps=_libm_ulps(fn))


@pytest.mark.parametrize("max_ops", [2, 3])
def test_plans_of_several_kernels(max_ops: int) -> None:
    f = check_three_ways(lambda a: ((a * 2.0 + a * a - 1.0) / (a + 4.0), a.sum()),
                         np.linspace(1, 3, 50), fusion_max_ops=max_ops)
    assert 1 < len(next(iter(f._cache.values()))[0].plan.kernels) <= fastpath.MAX_CALLS


def test_too_many_kernels_take_the_full_path() -> None:
    check_three_ways(lambda a: ((a * 2.0 + a * a - 1.0) / (a + 4.0), a.sum()),
                     np.linspace(1, 3, 50), fusion_max_ops=1, fast=False)


def test_views_of_arguments_take_the_full_path() -> None:
    check_three_ways(lambda a: (a.T * 2.0).sum(axis=0), np.arange(12.0).reshape(4, 3),
                     fast=False)
    check_three_ways(lambda a: a[1:] - a[:-1], np.arange(10.0), fast=False)


def test_zero_dimensional_arguments() -> None:
    check_three_ways(lambda a: a + 1.0, np.array(3.0))
    check_three_ways(lambda a, b: a * b, np.array(3, np.int32), np.arange(4, dtype=np.int32))


def test_tuple_results() -> None:
    x = np.arange(30.0).reshape(5, 6)
    check_three_ways(lambda a: (a + 1, a.sum(axis=1)), x)


def test_empty_arrays() -> None:
    check_three_ways(lambda a: a * 2.0, np.zeros(0))
    check_three_ways(lambda a: a.sum(), np.zeros((0, 3)))


def test_empty_max_raises_like_numpy() -> None:
    f = autoroute(lambda a: a.max())
    f(np.arange(5.0))
    f(np.arange(5.0))
    with pytest.raises(ValueError):
        f(np.zeros(0))
    assert f(np.arange(3.0)) == 2.0


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((5, 4), (4,)), ((1,), (6,)),
                                    ((2, 1, 3), (4, 1))], ids=str)
def test_broadcasting(shapes: tuple) -> None:
    a, b = (np.arange(np.prod(s), dtype=np.float64).reshape(s) for s in shapes)
    check_three_ways(lambda x, y: x * y - x, a, b)


def test_wrong_shapes_raise_numpys_error() -> None:
    f = autoroute(lambda x, y: x + y)
    a, b = np.ones(5), np.ones(5)
    f(a, b)
    f(a, b)
    expected, error = call_numpy(lambda x, y: x + y, (np.ones(5), np.ones(4)))
    with pytest.raises(type(error), match="broadcast"):
        f(np.ones(5), np.ones(4))
    compare_results(f(a, b), a + b)


def test_size_one_pattern_is_part_of_the_match() -> None:
    f = autoroute(lambda x, y: x + y)
    f(np.ones((3, 4)), np.ones((3, 4)))
    compare_results(f(np.ones((3, 4)), np.ones((1, 4))), np.ones((3, 4)) * 2)
    compare_results(f(np.ones((1, 4)), np.ones((3, 4))), np.ones((3, 4)) * 2)


@pytest.mark.parametrize("view", [
    lambda x: x[::2], lambda x: x[::-1], lambda x: x.reshape(10, 10).T,
    lambda x: x.reshape(10, 10)[:, ::-3], lambda x: x.reshape(10, 10)[::-1, 1:],
], ids=["step2", "reversed", "transposed", "negative-col", "rows-reversed"])
def test_strided_and_negative_strides(view: Callable) -> None:
    x = np.arange(100.0)
    v = view(x)
    f = autoroute(lambda a: a * 3.0 + 1.0)
    compare_results(f(np.ascontiguousarray(v)), np.ascontiguousarray(v) * 3.0 + 1.0)
    for _ in range(3):
        compare_results(f(v), v * 3.0 + 1.0)   # not the contiguous spec: matched or missed
    compare_results(f(np.ascontiguousarray(v)), v * 3.0 + 1.0)


def test_unusual_arrays_take_the_full_path() -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(8.0)
    f(x)

    class Sub(np.ndarray):
        pass

    odd_stride = np.lib.stride_tricks.as_strided(x, (1, 8), (7, 8))   # C-contiguous still
    cases = [x.astype(">f8"), x.view(Sub), np.frombuffer(b"\0" + x.tobytes(), np.float64,
                                                           8, 1), x.astype(np.float16)]
    f(x.reshape(1, 8))
    cases.append(odd_stride)
    for case in cases:
        before = _fast_calls(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = f(case)
        assert _fast_calls(f) == before
        compare_results(np.asarray(result), np.asarray(case + 1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert type(result) is type(_slow(f, case))


def test_results_are_fresh_arrays() -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    _, second, third = f(x), f(x), f(x)
    assert _fast_calls(f) == 2
    assert not np.shares_memory(second, third) and not np.shares_memory(second, x)
    second[:] = 0
    compare_results(third, x + 1.0)
    assert second.flags.writeable and second.flags.c_contiguous and second.base is None


def test_readonly_inputs() -> None:
    x = np.arange(10.0)
    x.flags.writeable = False
    check_three_ways(lambda a: a * a, x)


def test_guarded_sizes_recompile() -> None:
    f = autoroute(lambda a: a + np.ones(a.shape[0]))
    for n in (10, 10, 20, 20, 10):
        compare_results(f(np.arange(float(n))), np.arange(float(n)) + 1)


def test_new_signature_after_arming() -> None:
    f = autoroute(lambda a: a * 2)
    x64, x32 = np.arange(10.0), np.arange(10, dtype=np.float32)
    f(x64)
    f(x64)
    compare_results(f(x32), x32 * 2)
    compare_results(f(x32), x32 * 2)
    compare_results(f(x64), x64 * 2)
    compare_results(f(np.arange(6).reshape(2, 3)), np.arange(6).reshape(2, 3) * 2)
    assert _fast_calls(f) == 3


def test_large_calls_take_the_full_path() -> None:
    f = autoroute(lambda a: a + 1.0)
    small, large = np.arange(100.0), np.arange(float(fastpath.MAX_WORK + 1))
    f(small)
    before = _fast_calls(f)
    compare_results(f(large), large + 1.0)
    assert _fast_calls(f) == before
    outer = autoroute(lambda a: a[:, None] * a[None, :])   # n elements, n*n work
    v = np.arange(200.0)
    outer(v)
    compare_results(outer(v), v[:, None] * v[None, :])
    assert _fast_calls(outer) == 0


def test_config_force_python_and_disable_are_honoured() -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    f(x)
    f(x)
    with autojit.config(force="python"):
        compare_results(f(x), x + 1.0)
        compare_results(f(x), x + 1.0)
    with autojit.config(disable=True):
        compare_results(f(x), x + 1.0)
    routes = f.stats()["routes"]
    assert routes["python"] == 3 and routes["cpu"] == 2
    f(x)
    assert f.stats()["routes"]["cpu"] == 3


def test_decorator_force_python_never_arms() -> None:
    f = autoroute(lambda a: a + 1.0, force="python")
    x = np.arange(10.0)
    f(x)
    f(x)
    assert f._fast is None and f.stats()["routes"]["python"] == 2


def test_environment_disable_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    f(x)
    f(x)
    monkeypatch.setenv("AUTOJIT_DISABLE", "1")
    autojit.reload_environment()
    try:
        compare_results(f(x), x + 1.0)
        assert f.stats()["routes"]["python"] == 1
    finally:
        monkeypatch.delenv("AUTOJIT_DISABLE")
        autojit.reload_environment()


def test_config_context_rearms_inside() -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    with autojit.config(strict=True):
        for _ in range(4):
            compare_results(f(x), x + 1.0)
        assert _fast_calls(f) == 3
    compare_results(f(x), x + 1.0)
    assert f.stats()["calls"] == 5


def test_debug_logging_sees_every_call(caplog: pytest.LogCaptureFixture) -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    f(x)
    f(x)
    with caplog.at_level(logging.DEBUG, logger="autojit"):
        f(x)
        f(x)
    assert _fast_calls(f) == 1


def test_stats_count_fast_calls() -> None:
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(100.0)
    calls = 3 * fastpath.SAMPLE_EVERY
    for _ in range(calls):
        f(x)
    stats = f.stats()
    assert stats["calls"] == calls and stats["routes"]["cpu"] == calls
    assert stats["cache_hits"] + stats["cache_misses"] == calls
    assert calls - 1 - 3 <= stats["fast_calls"] < calls   # sampled calls take the full path
    latency = stats["latency"]["cpu"]
    assert latency["samples"] == min(calls, 2048) and 0 < latency["p50"] <= latency["p99"]
    assert stats["latency_sum_s"]["cpu"] > 0
    assert len(stats["decisions"]) >= 3   # the sampled calls keep the decision log current
    totals = autojit.stats()
    assert totals["per_function"][f.__qualname__]["calls"] >= calls
    assert totals["fast_calls"] >= stats["fast_calls"]    # the process totals add them up


def test_threads_share_the_fast_path() -> None:
    f = autoroute(lambda a, s: a * s + 1.0)
    f(np.arange(100.0), 2.0)
    errors: list[BaseException] = []
    per_thread = 500

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(per_thread):
                x = rng.random(int(rng.integers(1, 300)))
                s = float(rng.random())
                compare_results(f(x, s), x * s + 1.0)
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert f.stats()["calls"] == 1 + 8 * per_thread
    assert f.stats()["fast_calls"] > 0


def test_config_in_one_thread_does_not_leak_into_another() -> None:
    f = autoroute(lambda a: a * 2.0)
    x = np.arange(50.0)
    f(x)
    f(x)
    inside = threading.Event()
    done = threading.Event()

    def forced_python() -> None:
        with autojit.config(force="python"):
            inside.set()
            for _ in range(200):
                compare_results(f(x), x * 2.0)
            done.wait(10)

    thread = threading.Thread(target=forced_python)
    thread.start()
    inside.wait(10)
    for _ in range(200):
        compare_results(f(x), x * 2.0)
    done.set()
    thread.join()
    routes = f.stats()["routes"]
    assert routes["python"] == 200 and routes["cpu"] == 202


def test_static_arguments_use_the_fast_path() -> None:
    f = autoroute(lambda a, k: a * k, static_argnames=("k",))
    x = np.arange(10.0)
    for k in (2, 3, 2, 3):
        compare_results(f(x, k=k), x * k)
    stats = f.stats()
    assert stats["calls"] == stats["routes"]["cpu"] == 4 and stats["fast_calls"] == 2


def test_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "_native", None)
    f = autoroute(lambda a: a + 1.0)
    x = np.arange(10.0)
    for _ in range(3):
        compare_results(f(x), x + 1.0)
    assert f._fast is None and f.stats()["calls"] == 3 and f.stats()["fast_calls"] == 0


def test_an_errstate_that_raises_closes_the_armed_fast_path():
    """The native gate compares NumPy's error-policy object: a warm function called under
    ``np.errstate(divide="raise")`` runs as Python and raises as NumPy does; afterwards (and
    under a new errstate that only ignores) the fast path serves it again."""
    f = autoroute(lambda x: 1.0 / x)
    x = np.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(5):
            f(x)
        fast_before = f.stats()["fast_calls"]
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            f(x)
        for _ in range(3):
            with np.errstate(all="ignore"):
                assert np.array_equal(f(x), np.full(3, np.inf))
    assert f.stats()["fast_calls"] >= fast_before + 2
