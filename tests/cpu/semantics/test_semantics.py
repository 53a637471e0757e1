"""NumPy semantics that need more than the op matrix: integers, promotion, kinds, errors."""

import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning, autoroute

I8 = np.array([-128, -127, -7, -1, 0, 1, 7, 126, 127], dtype=np.int8)
I64 = np.array([np.iinfo(np.int64).min, -7, -1, 0, 1, 7, np.iinfo(np.int64).max])


@pytest.mark.parametrize("x", [I8, I64, I8.astype(np.uint8), I64.astype(np.uint64)],
                         ids=["i8", "i64", "u8", "u64"])
def test_integer_wraparound(x):
    assert_matches_numpy(lambda a: (a + a, a * a, a - 1, -a, a * 3 + 100, abs(a)), x)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_floor_division_and_modulo_signs_and_zero(dtype):
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -7, -3, -1, 0, 1, 3, 7, info.max]
    x = np.array([v for v in values if info.min <= v <= info.max], dtype=dtype)
    a, b = x[:, None], x[None, :]
    assert_matches_numpy(lambda a, b: (a // b, a % b, np.fmod(a, b)), a, b)


def test_minimum_integer_divided_by_minus_one():
    x = np.array([np.iinfo(np.int64).min, np.iinfo(np.int32).min], dtype=np.int64)
    assert_matches_numpy(lambda a: (a // -1, a % -1), x)


def test_float_floor_division_matches_npy_divmod():
    values = np.array([5.0, -5.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 7.5, -0.5])
    assert_matches_numpy(lambda a, b: (a // b, a % b), values[:, None], values[None, :])


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 7, 13])
def test_integer_power_with_constant_exponent(exponent):
    assert_matches_numpy(lambda a: (a ** exponent, np.power(a, exponent)), I8)


def test_integer_power_with_negative_exponent_raises_like_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        assert_matches_numpy(lambda a: a ** -1, I64, compiled=False)


def test_float_power_shortcuts_match_numpy():
    x = np.array([-0.0, 0.0, -np.inf, np.inf, 2.0, 1e-310, np.nan, -3.0])
    assert_matches_numpy(lambda a: (a ** 2, a ** 0.5, a ** -1, a ** 3.0, np.power(a, a)), x,
                         ulps=[0, 0, 0, 4, 4])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [1.8, -0.3, 2.5, 1e-3, -7.25])
def test_constant_non_integer_powers_match_numpy_on_every_edge_value(dtype, exponent):
    """x ** c keeps zeros, infinities, negatives and NaN away from the vector pow (its slow
    path) and gives C99's answers for them by select: the bits must still be NumPy's."""
    tiny = np.finfo(dtype).smallest_subnormal
    special = np.array([0.0, -0.0, 1.0, -1.0, -2.5, np.inf, -np.inf, np.nan, -np.nan, -tiny],
                       dtype=dtype)
    ordinary = np.array([0.5, 3.7, tiny, np.finfo(dtype).max, np.finfo(dtype).tiny, 1e-30,
                         65504.0], dtype=dtype)
    with np.errstate(all="ignore"):
        assert_matches_numpy(lambda a: a ** exponent, np.tile(special, 5))       # exact
        assert_matches_numpy(lambda a: a ** exponent, np.tile(ordinary, 5), ulps=4)


def test_nep50_weak_python_scalars():
    f32 = np.linspace(-2, 2, 11, dtype=np.float32)
    assert_matches_numpy(lambda a: (a * 2.5, a + 1, 3 - a, a / 7), f32)
    assert_matches_numpy(lambda a: (a + 1, a * 2, a // 3), np.arange(-5, 5, dtype=np.int8))
    assert_matches_numpy(lambda a: a + 1.5, np.arange(5, dtype=np.int8))   # -> float64


def test_runtime_python_scalar_arguments():
    x = np.linspace(0, 1, 17, dtype=np.float32)
    f = assert_matches_numpy(lambda a, s, k: a * s + k, x, 0.1, 3)
    assert f(x, 0.2, 5).dtype == np.float32
    np.testing.assert_array_equal(f(x, 0.2, 5), x * 0.2 + 5)
    assert f.stats()["compiles"] == 1


def test_python_int_out_of_range_for_the_array_dtype_raises_like_numpy():
    f = autoroute(lambda a, k: a + k)
    x = np.arange(4, dtype=np.int8)
    np.testing.assert_array_equal(f(x, 3), x + 3)
    with pytest.raises(OverflowError):
        f(x, 1000)


def test_numpy_scalar_arguments_are_strong():
    x = np.arange(6, dtype=np.float32)
    assert_matches_numpy(lambda a, s: a * s, x, np.float64(2.5))   # -> float64
    assert_matches_numpy(lambda a, s: a + s, np.arange(3, dtype=np.int8), np.int16(300))


def test_result_kinds_scalar_versus_zero_d_array():
    zero_d = np.array(1.5)
    assert_matches_numpy(lambda a: np.sin(a), zero_d, ulps=4)           # NumPy scalar
    assert_matches_numpy(lambda a: np.where(a > 0, a, 0.0), zero_d)      # 0-d array
    assert_matches_numpy(lambda a: a.astype(np.float32), zero_d)         # 0-d array
    assert_matches_numpy(lambda a: a * 2, np.float32(3))                 # NumPy scalar


def test_broadcasting_across_ranks_and_size_one_dims():
    a = np.arange(24.0).reshape(2, 3, 4)
    assert_matches_numpy(lambda a, b, c: a * b + c, a, np.arange(4.0), np.ones((3, 1)))
    assert_matches_numpy(lambda a, b: a - b, np.ones((5, 1, 3)), np.arange(4.0).reshape(4, 1))


def test_shape_mismatch_raises_value_error_like_numpy():
    f = autoroute(lambda a, b: a + b)
    f(np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        f(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        autoroute(lambda a, b: a + b)(np.ones(3), np.ones(4))


def test_unsupported_ufunc_dtype_combination_raises_like_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        assert_matches_numpy(lambda a: a & 1, np.ones(3), compiled=False)      # TypeError
        assert_matches_numpy(lambda a: -a, np.ones(3, bool), compiled=False)   # TypeError


def test_returning_an_argument_returns_the_same_object():
    x = np.ones(3)
    f = autoroute(lambda a, b: (a, a + b))
    same, total = f(x, x)
    assert same is x
    np.testing.assert_array_equal(total, x + x)


def test_keyword_arguments_bind_to_parameters():
    def scaled(x, scale=2.0):
        return x * scale
    f = autoroute(scaled)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, scale=3.0), x * 3.0)
    np.testing.assert_array_equal(f(x=x, scale=0.5), x * 0.5)


def test_non_contiguous_inputs_are_not_copied_and_outputs_fresh():
    base = np.arange(60.0).reshape(6, 10)
    view = base[::2, ::-3]
    assert_matches_numpy(lambda a: a * 2 + 1, view)
    f = autoroute(lambda a: a * 2)
    out = f(view)
    assert out.flags.c_contiguous and not np.shares_memory(out, base)
