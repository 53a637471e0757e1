"""Scans (np.cumsum, np.cumprod, their methods, np.cumulative_*, ufunc.accumulate) against
NumPy on the CPU: every dtype × axis form × layout, exactly (NumPy's float scans are
sequential, and so are ours), NaN/inf, empty and 0-d inputs, fusion of producers and
consumers, fallbacks."""

import warnings

import numpy as np
import pytest

from tests.support.corpus import DTYPES, edge_values
from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute

SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod}
AXES = [None, 0, 1, -1]


def _data(dtype: np.dtype) -> np.ndarray:
    values = edge_values(dtype, 60)
    if dtype.kind == "f":   # finite sums stay meaningful; NaN and inf still propagate
        values = np.where(np.abs(values) < 1e30, values, 2.5)
        values[[7, 41]] = np.nan, np.inf
    return values.reshape(3, 4, 5).astype(dtype)


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scans_match_numpy_exactly(dtype, axis):
    x = _data(dtype)

    def program(a):
        return np.cumsum(a, axis=axis), np.cumprod(a, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_matches_numpy(program, x, labels=list(SCANS))
        assert_matches_numpy(program, x[:, ::-1, ::2], labels=list(SCANS))   # strided
        assert_matches_numpy(program, x.transpose(2, 0, 1), labels=list(SCANS))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_float_rows_are_bit_exact_sequential_sums(dtype):
    x = np.random.default_rng(1).standard_normal((3, 5000)).astype(dtype)
    assert_matches_numpy(lambda a: (np.cumsum(a, axis=1), np.cumsum(a), np.cumsum(a, 0)), x)
    assert_matches_numpy(lambda a: np.cumprod(1 + a / 1000, axis=-1), x)


def test_nan_and_inf_propagate_as_in_numpy():
    x = np.array([[1.0, np.nan, 2.0, 3.0], [np.inf, 1.0, -np.inf, 5.0],
                  [-0.0, -0.0, 0.0, -0.0], [1e308, 1e308, -1e308, 1.0]])
    assert_matches_numpy(lambda a: (np.cumsum(a, 1), np.cumprod(a, 1), np.cumsum(a, 0)), x)


def test_dtype_argument_and_accumulator_dtypes():
    i8 = np.arange(-60, 60, dtype=np.int8).reshape(4, 30)
    f64 = np.linspace(-3, 3, 24).reshape(4, 6)
    assert_matches_numpy(lambda a: (np.cumsum(a, axis=1), np.cumsum(a, axis=1, dtype=np.int8),
                                    np.cumprod(a % 3, axis=0, dtype=np.uint16),
                                    np.cumsum(a, dtype=np.float32), np.cumsum(a > 0, axis=1),
                                    np.cumsum(a, axis=1, dtype=bool),
                                    np.cumprod(a, axis=0, dtype=bool)), i8)
    assert_matches_numpy(lambda a: (np.cumsum(a, 1, np.float32), np.cumprod(a, dtype=np.int64)),
                         f64)


def test_methods_and_cumulative_functions():
    x = np.random.default_rng(2).random((5, 7))
    x[1, 2], x[3, 0] = np.nan, np.nan
    assert_matches_numpy(lambda a: (a.cumsum(), a.cumsum(1), a.cumprod(axis=0, dtype=np.float32),
                                    np.cumulative_sum(a, axis=1),
                                    np.cumulative_prod(a, axis=0, dtype=np.float32),
                                    np.cumulative_sum(a[0]), np.nancumsum(a, 1),
                                    np.nancumprod(a), np.nancumsum(a > 0.5, 0)), x)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32"])
def test_ufunc_accumulate(dtype):
    x = _data(np.dtype(dtype))[0]
    assert_matches_numpy(lambda a: (np.add.accumulate(a), np.multiply.accumulate(a, axis=1),
                                    np.logical_or.accumulate(a, axis=-1),
                                    np.logical_and.accumulate(a, 0),
                                    np.add.accumulate(a, 1, dtype=np.float64)), x)


def test_empty_zero_d_and_single_element_inputs():
    assert_matches_numpy(lambda a: (np.cumsum(a, 1), np.cumsum(a, 0), np.cumsum(a),
                                    np.cumprod(a)), np.ones((3, 0)))
    assert_matches_numpy(lambda a: (np.cumsum(a), np.cumprod(a, axis=0)), np.zeros(0, np.int16))
    assert_matches_numpy(lambda a: (np.cumsum(a), np.cumprod(a, axis=-1), a.cumsum(0)),
                         np.array(-0.0))
    assert_matches_numpy(lambda a: (np.cumsum(a[1, 2]), np.cumsum(a[:1], 0)),
                         np.arange(12.0).reshape(3, 4))
    assert_matches_numpy(lambda s: np.cumsum(s), 2.5)        # a Python scalar argument


def test_negative_strides_and_broadcast_producers():
    rng = np.random.default_rng(3)
    x, row, col = rng.random((6, 9)), rng.random(9), rng.random((6, 1))
    assert_matches_numpy(lambda a: np.cumsum(a[::-1, ::-2], axis=1), x)
    assert_matches_numpy(lambda a, r, c: np.cumsum(a * r + c, axis=0), x, row, col)
    assert_matches_numpy(lambda r, c: np.cumprod(r + c, axis=1), row, col)


def test_written_back_and_indexed_scans():
    def running_in_place(a):
        a[1:] = np.cumsum(a[:-1] * np.arange(a.shape[0] - 1))
        return a

    assert_matches_numpy(running_in_place, np.arange(1.0, 9.0))
    assert_matches_numpy(lambda a, s: np.cumprod(a, 0) * s, np.ones((4, 3)) * 1.5, 2.0)


def test_bad_axis_raises_as_numpy_does():
    assert_matches_numpy(lambda a: np.cumsum(a, axis=2), np.ones((2, 3)))
    assert_matches_numpy(lambda a: np.cumsum(a, axis=1), np.array(1.0))
    assert_matches_numpy(lambda a: np.cumulative_sum(a), np.ones((2, 3)))


RNG = np.random.default_rng(4)
X, Y = RNG.random((8, 50)), RNG.random((8, 50))
FUSED = [
    ("producers_fuse", lambda x, y: np.cumsum(x * 2 + y, axis=1), 1),
    ("consumer_fuses", lambda x, y: np.cumsum(x, -1) / x.shape[-1], 1),
    ("producer_and_consumer", lambda x, y: np.sqrt(np.cumsum(x * x, axis=0)) - y, 1),
    ("normalised_by_row_total", lambda x, y: np.cumsum(x, 1) / x.sum(1, keepdims=True), 1),
    ("after_a_row_max", lambda x, y: np.cumsum(np.exp(x - x.max(1, keepdims=True)), 1), 1),
    ("sum_and_cumsum_share_a_pass", lambda x, y: (x.sum(1), np.cumsum(x, 1)), 1),
    ("two_scans_of_one_input", lambda x, y: (np.cumsum(x, 1), np.cumprod(x + y, 1)), 1),
    ("sum_of_a_cumsum", lambda x, y: np.cumsum(x, 1).sum(1), 1),
    ("flattened", lambda x, y: np.cumsum(x + y), 1),
    ("scan_of_a_scan_is_stored", lambda x, y: np.cumsum(np.cumsum(x, 1), 1), 2),
    ("scans_along_other_axes", lambda x, y: np.cumsum(np.cumsum(x, 0), 1), 2),
]


@pytest.mark.parametrize("name, fn, kernels", FUSED, ids=[f[0] for f in FUSED])
def test_fused_scans_match_numpy_with_few_kernels(name, fn, kernels):
    f = assert_matches_numpy(fn, X, Y, rtol=1e-12)
    assert len(f.inspect(X, Y).kernels) == kernels


def test_producers_are_read_once():
    f = autoroute(lambda x, y: np.cumsum(x * 2 + y, axis=1))
    (traffic,) = f.inspect(X, Y).traffic
    assert traffic.read_bytes == X.nbytes + Y.nbytes and traffic.write_bytes == X.nbytes


@pytest.mark.parametrize("fn, reason", [
    (lambda x, o: np.cumsum(x, out=o), "out="),
    (lambda x, o: np.cumulative_sum(x, include_initial=True), "include_initial"),
    (lambda x, o: np.cumsum(x, dtype=np.float16), "float16"),
    (lambda x, o: np.add.accumulate(x, out=o), "out="),
    (lambda x, o: np.maximum.accumulate(x), "np.maximum.accumulate"),
])
def test_unsupported_forms_fall_back_with_a_reason(fn, reason):
    f = autoroute(fn)
    x, o = np.arange(1.0, 5.0), np.zeros(4)
    with pytest.warns(FallbackWarning, match=r"test_scans\.py:\d+:\d+"):
        got = f(x, o.copy())
    np.testing.assert_array_equal(got, fn(x, o.copy()))
    (recorded,) = f.stats()["fallbacks"]
    assert reason in recorded
