"""Float reductions add and multiply in NumPy's order and dtype, so single-threaded CPU
results are bit-identical to NumPy's, overflow and cancellation included: NumPy's two-pass
variance (``_methods._var``), float32 sums accumulated in float32, and the element order
NumPy's reduction iterator visits."""

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

RNG = np.random.default_rng(20261201)

#: float32 values where the summation order and precision decide the answer
EXTREMES32 = np.array([3.4028235e38, -3.4028235e38, 1.4e-45, -1.4e-45, 4.2e-45, 1.1754944e-38,
                       1.0, -1.0, 0.5, 1.1920929e-07, 0.0, -0.0], dtype=np.float32)


def _extreme_float32(shape: tuple[int, ...]) -> np.ndarray:
    picks = RNG.choice(EXTREMES32, size=shape)
    plain = RNG.uniform(-1, 1, size=shape).astype(np.float32)
    return np.where(RNG.random(shape) < 0.5, picks, plain)


def test_float32_std_over_an_outer_axis_is_numpy_s_two_pass_answer():
    """std(axis=-2) near float32's maximum: NumPy's float32 mean, deviations and sum of
    squares overflow to inf or cancel exactly where they do in NumPy."""
    calls = [(_extreme_float32((8, 8, 8)),) for _ in range(6)]
    calls.append((RNG.uniform(-1, 1, (8, 8, 8)).astype(np.float32),))
    assert_calls_match_numpy(lambda a: np.std(a, axis=-2), calls)
    assert_calls_match_numpy(lambda a: (a.var(axis=-1), a.std(axis=0, ddof=1)), calls)


#: lengths around NumPy's pairwise block (8, 128), its splits, and its 8192-element buffer
SIZES = [0, 1, 7, 8, 9, 15, 16, 17, 127, 128, 129, 130, 255, 257, 1000, 4099, 8192, 8193,
         20000, 70001]
REDUCTIONS = {
    "sum": lambda a, axis: np.sum(a, axis=axis),
    "mean": lambda a, axis: a.mean(axis=axis),
    "var": lambda a, axis: a.var(axis=axis),
    "std": lambda a, axis: np.std(a, axis=axis, ddof=1),
    "nansum": lambda a, axis: np.nansum(a, axis=axis),
    "sum_f32": lambda a, axis: a.sum(axis=axis, dtype=np.float32),
    "mean_f64": lambda a, axis: a.mean(axis=axis, dtype=np.float64),
}


def _spread(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Values over many magnitudes, so any other order rounds differently."""
    values = RNG.standard_normal(shape) * 10.0 ** RNG.integers(-4, 5, shape)
    return values.astype(dtype)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_dimensional_float_reductions_are_bit_identical(name, dtype):
    fn = REDUCTIONS[name]
    calls = [(_spread((n,), dtype),) for n in SIZES]
    calls[3][0][2] = np.nan
    assert_calls_match_numpy(lambda a: fn(a, None), calls)


SHAPES = [(3, 5, 7), (2, 130, 3), (4, 1, 300), (1, 9000, 2), (5, 3, 2000), (300, 4, 1)]
AXES = [None, 0, 1, 2, -1, (0, 1), (1, 2), (0, 2)]


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "var", "sum_f32"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_reductions_over_every_axis_form_are_bit_identical(dtype, name, axis):
    """Pairwise along NumPy's inner loop when it is reduced (one run over trailing reduced
    axes), one element after another across outer axes, in chunks of 8192 with a cast."""
    fn = REDUCTIONS[name]
    assert_calls_match_numpy(lambda a: fn(a, axis), [(_spread(s, dtype),) for s in SHAPES])


@pytest.mark.parametrize("axis", [None, 0, -1], ids=str)
def test_integer_means_and_float32_dtype_sums_sum_in_numpy_s_buffer_chunks(axis):
    ints = [(RNG.integers(-10**15, 10**15, s),) for s in [(20000,), (3, 9000), (9000, 2)]]
    assert_calls_match_numpy(lambda a: (a.mean(axis=axis), a.sum(axis=axis, dtype=np.float32),
                                        a.var(axis=axis, dtype=np.float32)), ints)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_multiply_in_numpy_s_order(dtype):
    big = np.finfo(dtype).max
    rows = (1 + _spread((6, 40), dtype) / 1e3).astype(dtype)
    rows[1, [3, 30]] = [big, 0.0]       # inf * 0 only if the overflow comes first
    rows[2, [3, 30]] = [0.0, big]
    assert_calls_match_numpy(lambda a: (np.prod(a), np.prod(a, axis=0), a.prod(axis=1)),
                             [(rows,), (rows[:, :7].copy(),)])


def test_sums_of_zeros_keep_numpy_s_signs():
    """NumPy starts a sum at +0.0: a sum of -0.0 values is +0.0; a product keeps -0."""
    zeros = np.full((3, 20), -0.0)
    assert_calls_match_numpy(lambda a: (a.sum(), a.sum(axis=0), a.sum(axis=1), np.prod(a)),
                             [(zeros,), (zeros[:, :5].copy(),)])


def test_float32_variance_with_a_float32_dtype_overflows_where_numpy_s_does():
    """var(dtype=float32) of big int64 values: float32 sums overflow to inf in NumPy."""
    calls = [(np.broadcast_to(np.array([[-7966699821887099067], [2], [-3889411632103476441]]),
                              (3, 7)).copy(),),
             (RNG.integers(-2**62, 2**62, (3, 7)),)]
    assert_calls_match_numpy(lambda a: a.var(axis=-1, keepdims=True, dtype=np.float32), calls)


def test_products_and_means_of_fortran_ordered_arrays_are_numpy_s():
    """NumPy reduces an F-ordered array in memory order (pairwise down each column for
    mean(axis=0)); autojit cannot know that order when compiling, so it runs as Python."""
    big = np.finfo(np.float64).max
    a = np.asfortranarray(_spread((6, 7), np.float64))
    a[0, 0], a[3, 4], a[5, 6] = np.inf, 1.5e-323, -big
    b = np.asfortranarray(_spread((8, 5), np.float64))
    b[[0, 2, 5], 4] = [big, big, -np.inf]
    assert_calls_match_numpy(np.prod, [(a,), (a * 0.5,)])
    assert_calls_match_numpy(lambda x: x.mean(axis=0), [(b,), (b.T.copy().T,)])


def test_threaded_sums_stay_within_rounding_of_numpy():
    """Split across threads (partials), a sum differs from NumPy's by rounding only."""
    from autojit import autoroute
    from autojit import config as autojit_config
    x = RNG.random(300001)
    with autojit_config(num_threads=3, thread_min_work=0):
        got = autoroute(np.sum, force="cpu")(x)
    assert np.isclose(got, np.sum(x), rtol=1e-13)


def test_broadcast_and_sliced_values_sum_as_one_pairwise_run():
    """NumPy materialises ``a * w`` (C order) and sums it as one run: autojit walks the
    row loops' C-order positions through one pairwise tree, not one per row."""
    m, w = _spread((30, 500), np.float64), _spread((500,), np.float64)
    col = _spread((40,), np.float64)
    jitted = [
        assert_calls_match_numpy(lambda a, b: ((a * b).sum(), (a[:, :1] * b).mean()), [(m, w)]),
        assert_calls_match_numpy(lambda a, b: (a[:, None] * b[None, :]).sum(), [(col, w)]),
        assert_calls_match_numpy(lambda a: (a[2:25].sum(), a[:, 7].sum(), a[3, ::2].sum()),
                                 [(m,), (_spread((26, 9), np.float64),)])]
    assert all(not f.stats()["fallbacks"] for f in jitted)   # compiled, not run as Python


def test_a_casting_sum_and_a_plain_sum_of_one_row_both_compile_exactly():
    """NumPy chunks a casting float sum by 8192 and not a plain one; one kernel phase walks
    its row once, so the two go to separate phases or kernels (they were an internal
    CompileError and a fallback)."""
    def both(a):
        return a.sum(axis=-1), a.sum(axis=1, dtype=np.float32), a.mean(axis=1)

    rng = np.random.default_rng(3)
    jitted = assert_calls_match_numpy(both, [(rng.random((3, 9000)),), (rng.random((2, 5)),)])
    assert not jitted.stats()["fallbacks"], jitted.stats()["fallbacks"]
