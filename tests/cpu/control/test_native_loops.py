"""Loop regions whose body is scalar work run as ONE native kernel (issue 15 point 5): the
loop is the kernel's row, carried scalars a recurrence (``RECUR``), element reads and
writes strided loads and stores, the iterations in Python's order (bit for bit NumPy's
host loop). Each compiles once for every trip count, including 0 and 1 iterations."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

import autojit.runtime.regions as regions_module


def trace_tanh(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += np.tanh(a[i, i])
    return a + acc


def scalar_update(a, n):
    acc = np.sum(a)
    for i in range(n):  # noqa: B007 (the issue's program, as written)
        acc = acc * 0.5 + 1.0
    return acc


def axpy_rows(x, y, a):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]
    return y


def column_sum(a, j):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i, j]
    return acc + a[0, 0] * 0.0


def strided_recurrence(x, n):
    s = x[0] * 0.0
    p = x[0] * 0.0 + 1.0
    for i in range(1, n, 2):
        s = s * 0.25 + x[i]
        p = p * x[i] - s
    return s, p


def index_as_value(x):
    acc = x[0] * 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * i
    return acc


def shift_right(y):   # reads y[i - 1]'s new value: iterations must run in order
    for i in range(1, y.shape[0]):
        y[i] = y[i] + 0.5 * y[i - 1]
    return y


@pytest.fixture
def native_runs(monkeypatch):
    """Counts the loops that ran as their native kernel."""
    ran = []
    original = regions_module._run_native

    def counting(*args, **kwargs):
        result = original(*args, **kwargs)
        ran.append(result is not None)
        return result
    monkeypatch.setattr(regions_module, "_run_native", counting)
    return ran


def _assert_native(jitted, *args, compiles=1):
    inspection = jitted.inspect(*args)
    calls = inspection.plan.regions
    assert calls and all(call.native is not None for call in calls)
    assert "as one native kernel" in inspection.kernels_text
    assert jitted.stats()["compiles"] == compiles
    assert jitted.stats()["routes"]["python"] == 0


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_carried_sum_of_element_reads_is_one_kernel(native_runs, monkeypatch):
    rng = _rng()
    calls = [(rng.standard_normal((n, n)),) for n in (5, 1, 40, 2, 300)]
    # tanh is libm's (1 ulp off NumPy's at some inputs, ulp_bounds), summed 300 times
    jitted = assert_calls_match_numpy(trace_tanh, calls, rtol=1e-13, atol=1e-13)
    _assert_native(jitted, calls[0][0], compiles=2)   # size 1 is a signature of its own
    assert sum(native_runs) == 4   # a single trip is peeled into the trace: no loop left
    a = calls[-1][0]
    native = jitted(a.copy())
    monkeypatch.setattr(regions_module, "_run_native", lambda *args: None)
    np.testing.assert_array_equal(native, jitted(a.copy()))   # the host loop, bit for bit


def test_empty_loop_takes_the_other_path():
    assert_calls_match_numpy(trace_tanh, [(np.ones((3, 3)),), (np.ones((0, 0)),)])


def test_scalar_recurrence_in_python_order(native_runs):
    calls = [(np.full(8, 3.0), n) for n in (10, 0, 1, 2, 1000, 100_000)]
    jitted = assert_calls_match_numpy(scalar_update, calls)
    _assert_native(jitted, np.ones(8), 10)
    assert native_runs == [True, False, True, True, True, True]   # 0 trips: the host loop


def test_element_writes_through_the_index(native_runs):
    rng = _rng(1)
    calls = [(rng.standard_normal(n), rng.standard_normal(n), 1.5) for n in (7, 0, 1, 300)]
    x, y = rng.standard_normal(20), rng.standard_normal(14)
    calls.append(lambda: (x.copy()[::3], y.copy()[::2], -2.0))   # strided, fresh each call
    jitted = assert_calls_match_numpy(axpy_rows, calls)
    _assert_native(jitted, np.ones(3), np.ones(3), 1.0, compiles=3)   # size 1, strided
    assert sum(native_runs) == 4


def test_out_of_range_element_raises_as_numpy_does():
    rng = _rng(2)
    assert_calls_match_numpy(axpy_rows, [(rng.standard_normal(6), rng.standard_normal(6), 1.0),
                                         (rng.standard_normal(6), rng.standard_normal(4), 1.0)])


def test_captured_int_and_negative_index(native_runs):
    rng = _rng(3)
    a = rng.standard_normal((9, 4))
    calls = [(a, 2), (a, -1), (a.T.copy(), 3), (a[::2], 0), (a, 7)]
    assert_calls_match_numpy(column_sum, calls)
    assert sum(native_runs) >= 3


def test_two_recurrences_with_a_step(native_runs):
    rng = _rng(4)
    calls = [(rng.standard_normal(30), n) for n in (30, 1, 2, 3, 17)]
    assert_calls_match_numpy(strided_recurrence, calls)
    assert any(native_runs)


def test_loop_index_as_a_value(native_runs):
    rng = _rng(5)
    assert_calls_match_numpy(index_as_value, [(rng.standard_normal(n),) for n in (9, 1, 50)])
    assert any(native_runs)


def wrap_around(x):   # x[i - 1] is x[-1] at i == 0: Python counts it from the end
    acc = x[0] * 0.0
    for i in range(x.shape[0]):
        acc = acc * 0.5 + x[i - 1]
    return acc


def forward_difference(x, out):
    for i in range(0, x.shape[0] - 1):
        out[i] = x[i + 1] - x[i]
    return out


def every_other_from_the_end(x):
    acc = x[0] * 0.0
    for i in range(x.shape[0] // 2):
        acc = acc + x[-2 * i - 1] * 0.5
    return acc


def test_write_then_read_of_the_previous_element_runs_in_order(native_runs):
    rng = _rng(6)
    assert_calls_match_numpy(shift_right, [(rng.standard_normal(n),) for n in (10, 2, 500)])
    assert native_runs and all(native_runs)


def test_affine_offsets_of_the_index(native_runs):
    rng = _rng(7)
    assert_calls_match_numpy(forward_difference, [
        (rng.standard_normal(n), np.zeros(max(n - 1, 0))) for n in (9, 3, 2, 200)])
    assert native_runs and all(native_runs)


def test_an_index_that_goes_negative_keeps_the_host_loop(native_runs):
    rng = _rng(8)
    assert_calls_match_numpy(wrap_around, [(rng.standard_normal(n),) for n in (5, 2, 40)])
    assert native_runs and not any(native_runs)


def test_a_negative_affine_index_keeps_python_semantics(native_runs):
    rng = _rng(9)
    assert_calls_match_numpy(every_other_from_the_end,
                             [(rng.standard_normal(n),) for n in (8, 3, 41)])


def accumulate_as_the_array(x):
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


def accumulate_from_a_python_float(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * 2
    return acc


def any_above(x, t):
    found = x[0] < t
    for i in range(x.shape[0]):
        found = found | (x[i] > t)
    return found


def write_with_a_cast(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * 3
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8])
def test_dtypes_promote_and_wrap_as_numpy(dtype, native_runs):
    rng = _rng(10)
    xs = [(rng.standard_normal(n) * 50).astype(dtype) for n in (7, 3, 100)]
    assert_calls_match_numpy(accumulate_as_the_array, [(x,) for x in xs])
    assert_calls_match_numpy(accumulate_from_a_python_float, [(x,) for x in xs])
    assert_calls_match_numpy(any_above, [(x, 3.0) for x in xs])
    assert_calls_match_numpy(write_with_a_cast, [(x, np.zeros(len(x), np.float32)) for x in xs])
    assert len(native_runs) == 12 and all(native_runs)
