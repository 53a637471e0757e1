"""Python scalars and integer semantics: NEP 50 promotion, Python-int range rules, exact
mixed-sign comparisons, and Python arithmetic on Python scalars staying Python's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.oracle import TRANSCENDENTAL_ULPS, assert_calls_match_numpy, assert_matches_numpy

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_DTYPES = ["bool", *INT_DTYPES, "float32", "float64"]
#: Python ints at and beyond every integer dtype's edge (a generator that does not share
#: autojit's idea of what fits where).
EDGE_INTS = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 2**15, -(2**15) - 1, 2**31,
             -(2**31) - 1, 2**32, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]


def _edges(dtype: str) -> np.ndarray:
    """An array holding the extremes of ``dtype`` and a few ordinary values."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True])
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 2.0**63], dt)
    info = np.iinfo(dt)
    below = info.min // 2 - 1 if info.min else 3
    return np.array([info.min, info.max, 0, 1, info.max // 2, below], dt)


# -- the ** operator -------------------------------------------------------------------------
def test_bool_array_squared_by_the_operator_is_int8():
    """``a ** 2`` is ``np.square`` for arrays (NumPy's fast path): int8 for bool."""
    assert_matches_numpy(lambda a: (a ** 2, a ** 3, np.power(a, 2)), np.array([True, False]))


# -- np.clip converts its first argument with np.asarray ------------------------------------
def test_clip_of_a_python_int_promotes_it_as_an_int64_array():
    def upper(s):
        return np.clip(s, None, np.uint64(7751921672582079718))

    def lower(s, x):
        return np.clip(s, np.int16(-53), None), x + 1

    assert_calls_match_numpy(upper, [(5,), (7,)])
    assert_calls_match_numpy(lower, [(5, np.zeros(2)), (-100, np.zeros(3))])


def test_clip_of_a_python_float_argument_is_a_float64_scalar():
    assert_calls_match_numpy(lambda s: np.clip(s, np.float32(0.5), np.float32(2.5)),
                             [(1.25,), (3.0,)])


# -- mixed signed / unsigned comparisons are exact -------------------------------------------
COMPARISONS = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


def _all_comparisons(a, b):
    return tuple(f(a, b) for f in COMPARISONS) + tuple(f(b, a) for f in COMPARISONS)


def test_int64_against_uint64_compares_values_not_bits():
    a = np.array([-1, 2**63 - 1, 0, -(2**63), 5, 7], np.int64)
    b = np.array([2**64 - 1, 2**63, 0, 0, 5, 2**63 + 7], np.uint64)
    assert_matches_numpy(_all_comparisons, a, b)
    assert_matches_numpy(lambda a, b: (a == b, a < b, a <= b, a != b, a > b, a >= b), a, b)


def test_small_signed_against_uint64_in_where():
    def fn(a0, a1):
        return np.where(np.less(a0, a1), a0, -3.25)

    assert_matches_numpy(fn, np.array([-32768, 0, -471, 794], np.int16),
                         np.array([[4], [1], [3]], np.uint64))


@pytest.mark.parametrize("left, right", [(s, u) for s in INT_DTYPES if s[0] == "i"
                                         for u in INT_DTYPES if u[0] == "u"])
def test_every_signed_unsigned_pair_compares_exactly(left, right):
    a = np.repeat(_edges(left), 6)
    b = np.tile(_edges(right), 6)
    assert_matches_numpy(_all_comparisons, a, b)


# -- Python-int range rules (NumPy raises, or compares exactly) ------------------------------
def test_uint64_array_plus_minus_one_raises_like_numpy():
    assert_calls_match_numpy(lambda x, s: x + s, [(np.ones(3, np.uint64), -1),
                                                  (np.ones(3, np.uint64), 1),
                                                  (np.ones(3, np.uint64), -1)])


def test_comparison_with_an_out_of_range_python_int_is_exact():
    assert_calls_match_numpy(lambda x, s: (x < s, x == s, x >= s),
                             [(np.arange(3, dtype=np.uint8), -1),
                              (np.arange(3, dtype=np.uint8), 1),
                              (np.arange(3, dtype=np.uint8), 300)])


def test_python_int_beyond_int64_reaches_uint64_arrays():
    assert_calls_match_numpy(lambda x, s: np.minimum(x, s),
                             [(np.ones(2, np.uint64), 5), (np.ones(2, np.uint64), 2**63),
                              (np.ones(2, np.uint64), 2**64 - 1), (np.ones(2, np.uint64), 2**64)])
    assert_calls_match_numpy(lambda x, s: x * s,
                             [(np.ones(2), 5), (np.ones(2), 2**63), (np.ones(2), 2**70)])


def test_one_python_int_used_with_two_dtypes_must_fit_both():
    """The fast path checks the intersection of the ranges, not the last dtype's."""
    def fn(a, b, s):
        return a + s, b + s

    a, b = np.zeros(3, np.uint8), np.zeros(3, np.int8)
    assert_calls_match_numpy(fn, [(a, b, 5)] * 3 + [(a, b, 200), (a, b, -5), (a, b, 7)])


def test_out_of_range_literal_writes_raise_like_numpy():
    def to_int8(a):
        a[...] = 300

    def nan_into_int(a):
        a[...] = float("nan")

    def inf_into_int(a):
        a[:-1] = -float("inf")

    def masked(a):
        a[a > 0] = 300

    assert_matches_numpy(to_int8, np.zeros(3, np.int8))
    assert_matches_numpy(nan_into_int, np.zeros(3, np.int32))
    assert_matches_numpy(inf_into_int, np.zeros(3, np.int64))
    assert_matches_numpy(masked, np.ones(3, np.int8))


def test_python_scalar_argument_writes_convert_like_numpy():
    def store(a, s):
        a[...] = s

    def masked(a, s):
        a[a > 0] = s

    for fn in (store, masked):
        assert_calls_match_numpy(fn, [(np.ones(3, np.uint32), 7), (np.ones(3, np.uint32), -1),
                                      (np.ones(3, np.uint32), 2**32)])
        assert_calls_match_numpy(fn, [(np.ones(3, np.int32), 2.7), (np.ones(3, np.int32), -2.7),
                                      (np.ones(3, np.int32), float("nan")),
                                      (np.ones(3, np.int32), float("inf")),
                                      (np.ones(3, np.int32), 1e10), (np.ones(3, np.int32), 1.5)])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_python_ints_at_every_edge_against_every_dtype(dtype):
    """One compiled function per operation, called with every edge value in turn (cached
    versions must re-check the value) and, separately, traced first at each value."""
    x = _edges(dtype)
    operations = [lambda x, s: x + s, lambda x, s: x < s, lambda x, s: x == s,
                  lambda x, s: np.maximum(x, s), lambda x, s: np.where(x > 0, s, x),
                  lambda x, s: np.logical_and(x, s), lambda x, s: np.logical_or(x, 2**63)]
    for fn in operations:
        assert_calls_match_numpy(fn, [(x, s) for s in EDGE_INTS])
        for s in (-1, 2**63, 2**64 - 1, -(2**63)):
            assert_calls_match_numpy(fn, [(x, s), (x, 1)])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_python_floats_and_bools_at_every_edge(dtype):
    x = _edges(dtype)
    values = [0.0, -0.0, 1.5, -2.5, float("inf"), float("-inf"), float("nan"), 1e308, 5e-324,
              3.5e38, 2.0**63, True, False]
    for fn in (lambda x, s: x * s, lambda x, s: x <= s, lambda x, s: np.minimum(s, x)):
        assert_calls_match_numpy(fn, [(x, s) for s in values if type(s) is float])
        assert_calls_match_numpy(fn, [(x, True), (x, False)])


def _write_value(a, s):
    a[1:] = s


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_writing_python_scalars_at_every_edge(dtype):
    calls = [(_edges(dtype), s) for s in EDGE_INTS]
    calls += [(_edges(dtype), s) for s in (2.7, -2.7, float("nan"), float("inf"), 1e20)]
    assert_calls_match_numpy(_write_value, [c for c in calls if type(c[1]) is int])
    assert_calls_match_numpy(_write_value, [c for c in calls if type(c[1]) is float])


# -- arithmetic on Python scalars stays Python's (the host prologue) -------------------------
def test_python_int_arithmetic_has_arbitrary_precision():
    def fn(x, s):
        return x + 1, s * s, x * (s * s), s ** 3 - s

    jitted = assert_calls_match_numpy(fn, [(np.ones(2), 2**40), (np.ones(3), 7),
                                           (np.ones(2), -(2**62)), (np.ones(2), 2**100)])
    assert not jitted.stats()["fallbacks"]


def test_python_division_by_zero_raises_zero_division_error():
    def fn(x, s):
        return x + 1, 3 / s

    assert_calls_match_numpy(fn, [(np.ones(2), 2), (np.ones(2), 0), (np.ones(4), -4)])
    jitted = assert_calls_match_numpy(fn, [(np.ones(2), 0), (np.ones(2), 2), (np.ones(2), 0)])
    assert not jitted.stats()["fallbacks"], "a first call that raises must not stick"
    assert jitted.stats()["routes"].get("cpu") == 1
    assert_calls_match_numpy(lambda x, s: x * (1 // s), [(np.ones(2), 1), (np.ones(2), 0)])
    assert_calls_match_numpy(lambda x, s: x * (1.5 % s), [(np.ones(2), 1.0), (np.ones(2), 0.0)])


def test_python_results_are_python_objects():
    def fn(x, s):
        return x + s, s > 1, s * 2, s / 4, -s, abs(s), s // 1, s == s, s

    for s in (1.5, 3, True, -0.0, float("nan")):
        assert_calls_match_numpy(fn, [(np.ones(2), s), (np.ones(3), s)])


def test_invert_of_a_python_bool_is_a_python_int():
    def fn(x, s):
        flag = s > s
        return x + 1, ~flag, ~(s < 2), flag & (s > 0), flag | True

    assert_calls_match_numpy(fn, [(np.ones(2), 1.5), (np.ones(2), 2.5)])


def test_a_python_type_change_retraces():
    """``s ** t`` is an int for t >= 0 and a float for t < 0: each is its own version."""
    def fn(x, s, t):
        return x + 1, s ** t, x * s ** t

    jitted = assert_calls_match_numpy(fn, [(np.ones(2), 2, 3), (np.ones(2), 2, -1),
                                           (np.ones(2), 3, 2), (np.ones(2), 4, -2)])
    assert not jitted.stats()["fallbacks"]


def test_half_a_python_float_feeding_array_math_stays_compiled():
    def step(x, v, dt):
        half = dt * 0.5
        return x + v * half, v - half * x

    x, v = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    jitted = assert_calls_match_numpy(step, [(x, v, 0.1), (x, v, 1e-3), (x[:3], v[:3], 0.1),
                                             (x, v, 0.0), (x, v, float("inf"))])
    assert not jitted.stats()["fallbacks"]
    assert_matches_numpy(step, x.astype(np.float32), v.astype(np.float32), 0.1)


def test_python_scalar_expressions_meet_arrays_as_weak_scalars():
    def fn(x, s, t):
        return x * (s + t), np.maximum(x, s - t), np.where(x > s * 2, s / t, x), np.sin(s * t)

    for dtype in ("float32", "int8", "uint8", "int64"):
        x = np.arange(5).astype(dtype)
        assert_calls_match_numpy(fn, [(x, 2, 1), (x, 100, 100), (x, -3, 2), (x, 2**62, 2**62)])
        assert_calls_match_numpy(fn, [(x, 2.5, 0.5), (x, 1e20, 1.0), (x, 1.0, 0.0)])


def test_repeat_calls_with_python_scalars_stay_correct_on_the_fast_path():
    """Warm calls take the native fast path (host arithmetic replayed first); new values,
    types and out-of-range ints must still answer like NumPy."""
    def direct(x, s):
        return x * s

    def computed(x, s):
        return x * (s * s)

    def raising(x, s):
        return x * (1 / s)

    x = np.arange(4.0)
    assert_calls_match_numpy(raising, [(x, 2)] * 5 + [(x, 0), (x, 2.0), (x, 0.0), (x, 4)] * 3)
    for fn in (direct, computed):
        jitted = assert_calls_match_numpy(fn, [(x, 3)] * 5 + [(x, 2**40), (x, 2**70), (x, 3.5),
                                                              (x, 3)] + [(x, 5)] * 5)
        assert not jitted.stats()["fallbacks"]
        assert jitted.stats()["fast_calls"] > 0, "Python scalars keep the fast path"


def test_power_with_a_python_float_exponent_takes_numpys_scalar_shortcuts():
    """NumPy's power loop computes ``x ** 0.5`` with a scalar exponent as ``sqrt(x)``
    (-0.0 stays -0.0, -inf gives NaN), ``x ** 2`` as ``x * x``, ``x ** -1`` as ``1 / x``."""
    base = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, 3.0, -2.0, 1e-310, 7.5])
    for dtype in ("float32", "float64"):
        x = base.astype(dtype)
        exact = [(x, e) for e in (0.5, 2.0, -1.0, 0.0, 1.0)] + [(x, 2), (x, -1)]
        other = [(x, e) for e in (1.5, 3.0, -0.5)] + [(x, 0.5)]
        for fn in (lambda x, e: np.power(x, e), lambda x, e: x ** e):
            assert_calls_match_numpy(fn, exact)
            assert_calls_match_numpy(fn, other, ulps=TRANSCENDENTAL_ULPS)
        half = np.full(1, 0.5, dtype)
        assert_matches_numpy(np.power, x, half)                         # one value: sqrt
        assert_matches_numpy(np.power, np.stack([x, x]), half[:, None].repeat(2, 0),  # pow
                             ulps=TRANSCENDENTAL_ULPS)


# -- randomised: Python scalars of any size and kind, against NumPy ---------------------------
python_scalars = st.one_of(
    st.integers(-(2**65), 2**65), st.sampled_from(EDGE_INTS), st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True, width=64))
small_exponents = st.one_of(st.integers(-3, 5), st.sampled_from([0.5, -1.0, 2.0, 1.5]))

_HOST_EXPRESSIONS = {
    "add": lambda s, t: s + t, "sub": lambda s, t: s - t, "mul": lambda s, t: s * t,
    "truediv": lambda s, t: s / t, "floordiv": lambda s, t: s // t, "mod": lambda s, t: s % t,
    "lt": lambda s, t: s < t, "eq": lambda s, t: s == t, "neg": lambda s, t: -s + t,
}


def _with_arrays(expression):
    """A function returning the Python expression and its meetings with an array."""
    def fn(x, s, t):
        value = expression(s, t)
        return x + 1, value, x * value, x < value
    return fn


_FUNCTIONS = {name: _with_arrays(f) for name, f in _HOST_EXPRESSIONS.items()}
_FUNCTIONS["pow"] = lambda x, s, t: (s ** t, x - s ** t)
_FUNCTIONS["direct"] = lambda x, s, t: (x + s, np.maximum(x, t), x == s, np.where(x > t, s, x))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(ALL_DTYPES), name=st.sampled_from(sorted(_FUNCTIONS)),
       first=st.tuples(python_scalars, python_scalars),
       second=st.tuples(python_scalars, python_scalars), exponent=small_exponents)
def test_random_python_scalars_match_numpy(dtype, name, first, second, exponent):
    """Two calls of one compiled function (traced at the first values, re-checked at the
    second) with Python scalars of any kind and size: results, their Python types and
    exceptions as NumPy and Python give them."""
    if name == "pow":   # keep Python's own ints small enough to compute
        first, second = (first[0], exponent), (second[0], exponent)
        if any(type(v) is int and abs(v) > 2**70 for v in (first[0], second[0])):
            return
        if type(exponent) is float and (first[0] < 0 or second[0] < 0):
            return   # a complex result: the oracle compares real dtypes
    x = _edges(dtype)
    assert_calls_match_numpy(_FUNCTIONS[name], [(x, *first), (x, *second)])


def test_backends_agree_on_python_scalar_arithmetic_with_cuda_emulation():
    from autojit.testing import assert_backends_agree

    def step(x, v, dt):
        half = dt * 0.5
        return x + v * half, half > 0

    x = np.linspace(0, 1, 5)
    assert_backends_agree(step, x, x + 1, 0.25, backends=["python", "cpu", "cuda-emulated"])


def test_math_functions_and_rounding_of_python_scalars_stay_python():
    import math

    def oscillator(x, k, m, s):
        w = math.sqrt(k / m)
        return (x * w, w, round(s), math.floor(s), math.ceil(s), round(s, 1), math.trunc(s),
                math.exp(-s) * x, math.isnan(s), math.atan2(s, k), abs(s))

    x = np.ones(3)
    jitted = assert_calls_match_numpy(oscillator, [
        (x, 2.0, 0.5, 1.26), (x, 2.0, 0.5, -3.75), (x, -2.0, 0.5, 1.0), (x, 2.0, 0.5, 2.5),
        (x, 1e308, 1e-308, 0.5)])
    assert not jitted.stats()["fallbacks"]
    assert type(math.sqrt).__name__ == "builtin_function_or_method", "math is restored"
    assert_calls_match_numpy(oscillator, [(x, 3, 2, 7), (x, 3, 0, 7), (x, 2**1100, 1, 7)])


def test_code_branching_on_the_python_type_traces_pythons_branch():
    def scale(x, s):
        if isinstance(s, float):
            return x * s
        return x + s

    jitted = assert_calls_match_numpy(scale, [(np.ones(2), 2.0), (np.ones(2), 2),
                                              (np.ones(3), 0.5), (np.ones(3), True)])
    assert not jitted.stats()["fallbacks"]


def test_python_scalars_as_indices_and_sizes_run_as_python():
    """Indexing and sizes need the value: the call runs as Python, never a baked-in one."""
    def pick(x, s):
        return x[s], x[s:], np.zeros(s)

    assert_calls_match_numpy(pick, [(np.arange(4.0), 1), (np.arange(4.0), 2), (np.arange(4.0), 9)])


def test_python_arithmetic_on_a_shape_dependent_branch():
    """Only the branch the trace took replays: another shape takes its own version."""
    def fn(x, s):
        k = 1 / s if x.shape[0] > 2 else 1.0
        return x * k

    assert_calls_match_numpy(fn, [(np.ones(3), 2), (np.ones(1), 0), (np.ones(3), 0),
                                  (np.ones(1), 4), (np.ones(3), 4)])


def test_transpose_of_a_numpy_scalar_is_the_scalar():
    def fn(x):
        b = x + x
        return b.T, np.transpose(b), b.transpose()

    assert_calls_match_numpy(fn, [(np.array(False),), (np.array(2.5),)])
