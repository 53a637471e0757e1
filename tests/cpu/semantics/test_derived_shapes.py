"""Sizes derived from arguments (slices, np.diff, reshape, reductions, sizes Python reads) and
element reads of computed values: one compiled function called with changing sizes, 0, 1,
2, 3 and 31 included, must answer as NumPy does at every call. A derived size that is 1 at
the first call is a broadcast 1 only where NumPy broadcasting makes it one, and only for as
long as it stays 1 (the next call retraces)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import FallbackWarning

SIZES = (0, 1, 2, 3, 31)


def _vector(n: int, offset: float = 0.0) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * 1.5 - offset


def _python_calls(jitted) -> int:
    return jitted.stats()["routes"]["python"]


# -- a derived size that is 1 at the first call -----------------------------------------------

def test_slice_of_length_one_is_not_a_broadcast_one_at_later_calls():
    def shifted(x, y):
        return x[1:] + y
    calls = [(_vector(n), np.ones(1)) for n in (2, 31, 3, 1, 0, 2)]
    jitted = assert_calls_match_numpy(shifted, calls)
    assert _python_calls(jitted) == 0


def test_slice_that_broadcast_at_the_first_call_raises_where_numpy_does():
    def product(x, y):
        return x[1:] * y
    calls = [(_vector(n), _vector(7)) for n in (2, 8, 9, 3, 1, 2, 8)]
    assert_calls_match_numpy(product, calls)


def test_write_of_a_slice_that_was_length_one_raises_where_numpy_does():
    def fill(x, y):
        y[...] = x[1:]
    calls = [(_vector(n), np.zeros(7)) for n in (2, 3, 8, 31, 0, 1, 2)]
    assert_calls_match_numpy(fill, calls)


def test_diff_of_length_two_is_not_a_broadcast_one_at_later_calls():
    def differences(x):
        return np.diff(x), x.sum(keepdims=True)
    calls = [(_vector(n) ** 2,) for n in (2, 31, 3, 1, 0, 2)]
    assert_calls_match_numpy(differences, calls)


def test_write_into_a_slice_of_length_one_writes_every_element_later():
    def scaled(x, y):
        x[1:] = y * 2
    calls = [(np.zeros(n), np.ones(1)) for n in (2, 31, 3, 1, 0, 2)]
    jitted = assert_calls_match_numpy(scaled, calls)
    assert _python_calls(jitted) == 0


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(slice(1, None), x[:-1]),
    lambda x: x.__setitem__(slice(None, None, 2), x[::-2]),
    lambda x: x.__setitem__(Ellipsis, x.reshape(-1, 1).T[0][::-1]),
], ids=["shift", "reversed_steps", "reversed_reshape"])
def test_write_of_an_overlapping_view_of_the_same_argument(write):
    def overlapping(x):
        write(x)
    calls = [(_vector(n),) for n in (*SIZES, 1000, 2)]
    jitted = assert_calls_match_numpy(overlapping, calls)
    assert _python_calls(jitted) == 0


def test_write_of_the_transpose_of_the_same_argument():
    def transposed(x):
        x[...] = x.T
    calls = [(np.arange(n * n, dtype=np.float64).reshape(n, n),) for n in (*SIZES, 64)]
    assert_calls_match_numpy(transposed, calls)


def test_two_derived_sizes_of_one_broadcast_as_numpy_does():
    def pair(x, y):
        return x[1:] - y[:-1]
    calls = [(_vector(a), _vector(b)) for a, b in
             ((2, 2), (2, 9), (9, 2), (9, 9), (31, 31), (5, 9), (1, 1), (0, 2))]
    assert_calls_match_numpy(pair, calls)


def test_squeeze_of_a_derived_size_follows_its_size_at_each_call():
    def squeezed(x):
        return np.squeeze(x[1:]) * 2
    calls = [(_vector(n),) for n in (2, 3, 31, 2, 0, 1)]
    assert_calls_match_numpy(squeezed, calls)


def test_reshape_of_a_slice_reads_its_length_at_each_call():
    def column(x, y):
        return x[1:].reshape(-1, 1) + y
    calls = [(_vector(n), _vector(4)) for n in (2, 3, 31, 1, 0, 2)]
    assert_calls_match_numpy(column, calls)


def test_matmul_of_a_slice_that_was_length_one():
    def inner(x, y):
        return x[1:] @ y
    calls = [(_vector(a), _vector(b)) for a, b in ((2, 1), (3, 2), (32, 31), (3, 5), (1, 0))]
    assert_calls_match_numpy(inner, calls)


def test_matmul_with_a_one_element_result_used_further():
    def gram(v):
        return (v @ v.T) + 1, (v[0] @ v[0]) * 2
    calls = [(np.ones(shape),) for shape in ((1, 1), (1, 3), (2, 3), (1, 0), (31, 2))]
    jitted = assert_calls_match_numpy(gram, calls)
    assert _python_calls(jitted) == 0


def test_buffer_taken_over_twice_through_a_narrower_dtype():
    """Small kernels (fusion_max_ops=3): an int64 buffer is reused for a bool value, then
    for an int32 one; the second reuse must take the int64 memory, not the bool view."""
    def plus_eye(a0):
        return a0 + np.eye(a0.shape[-2], a0.shape[-1], dtype=np.uint16)
    calls = [(np.ones(shape, np.int8),) for shape in ((3, 3), (2, 5), (31, 3), (1, 4), (0, 2))]
    jitted = assert_calls_match_numpy(plus_eye, calls, options={"fusion_max_ops": 3})
    assert _python_calls(jitted) == 0


def test_matmul_with_an_array_made_inside_the_function():
    def weighted(x):
        return x @ np.ones(x.shape[-1]), np.full((x.shape[-1], 2), 0.5).T @ x.T
    calls = [(np.arange(n * 4.0).reshape(n, 4),) for n in (50, 0, 1, 2, 31)]
    jitted = assert_calls_match_numpy(weighted, calls)
    assert _python_calls(jitted) == 0


def test_unused_matmul_of_a_computed_value():
    def unused(a0, a1):
        v4 = np.less_equal(-float("inf"), np.expand_dims(np.isnan(a0), -2))
        np.matmul(v4, a1)
        return np.isnan(a0)
    calls = [(np.ones((n, 3)), np.ones((3, 2), bool)) for n in (2, 0, 1, 3, 31)]
    jitted = assert_calls_match_numpy(unused, calls)
    assert _python_calls(jitted) == 0


# -- sizes Python reads, sizes the code fixes ---------------------------------------------------

def test_size_read_by_a_python_loop_retraces_when_it_changes():
    def horner(coeffs, x):
        y = np.zeros_like(x)
        for k in range(coeffs.shape[0]):
            y = y * x + coeffs[k]
        return y
    calls = [(_vector(n), np.linspace(0, 1, 8)) for n in (12, 5, 0, 1, 2, 3, 31, 5)]
    jitted = assert_calls_match_numpy(horner, calls)
    assert _python_calls(jitted) == 0


def test_length_of_a_slice_read_by_a_python_loop_retraces_when_it_changes():
    def tail_horner(c, x):
        tail = c[1:]
        y = x * 0
        for k in range(len(tail)):
            y = y * x + tail[k]
        return y
    calls = [(_vector(n), np.linspace(0, 1, 5)) for n in (6, 3, 0, 1, 2, 31, 3)]
    jitted = assert_calls_match_numpy(tail_horner, calls)
    assert _python_calls(jitted) == 0


def test_view_of_a_value_built_from_read_sizes():
    def ones_tail(a):
        return (np.zeros(a.shape) + 1)[1:]
    assert_calls_match_numpy(ones_tail, [(np.arange(n),) for n in (3, *SIZES, 3)])


def test_view_of_a_created_array():
    def tail(a):
        return np.zeros(a.shape)[1:] + a[:1]
    assert_calls_match_numpy(tail, [(_vector(n),) for n in (3, *SIZES)])


@pytest.mark.parametrize("shape", [(5,), (2, 1), (1,), (0,), (3, 31)])
def test_linspace_of_an_argument_length(shape):
    def centred(a):
        return a - np.linspace(0.0, 1.0, a.shape[-1])
    calls = [(np.ones(shape, np.int32),), (np.ones(shape[:-1] + (2,)),),
             (np.full(shape, 3.0),)]
    assert_calls_match_numpy(centred, calls)


@pytest.mark.parametrize("num", [0, 1, 2, 3, 31])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_lengths(num, endpoint):
    def ramp(a):
        return np.linspace(-2.0, 5.0, num, endpoint=endpoint) + a
    assert_calls_match_numpy(ramp, [(np.zeros(1),), (np.float64(0.5),)])


# -- element reads of computed values -----------------------------------------------------------

def test_element_of_a_computed_array_used_further():
    def doubled_first(x):
        return (x + 1)[0] * 2
    calls = [(np.arange(n),) for n in (1, 2, 3, 31, 0, 1)]
    assert_calls_match_numpy(doubled_first, calls)


def test_last_element_of_a_computed_array_used_further():
    def last(x):
        return (x * 3.0)[-1] + x[0]
    assert_calls_match_numpy(last, [(_vector(n),) for n in (1, 2, 3, 31, 0)])


def test_empty_index_of_a_computed_0d_value_used_further():
    def element(a):
        return (a + 1)[()] * 1
    assert_calls_match_numpy(element, [(np.array(7.0),), (np.array(-0.0),),
                                       (np.array(3),)])


def test_squeeze_of_a_computed_value():
    def squeezed(a):
        return np.squeeze(a[None] + 1)
    calls = [(np.array(-2.0),), (np.array(5.0),), (_vector(1),), (_vector(3),),
             (_vector(0),)]
    assert_calls_match_numpy(squeezed, calls)


def test_two_views_and_a_reshape_of_a_transposed_reduction():
    def views(a0):
        v5 = np.min(a0, axis=1).T
        return v5[-1, ..., None], v5.reshape(9, -1)
    calls = [(np.arange(72.0).reshape(3, 8, 3),), (np.arange(18.0).reshape(9, 2, 1),),
             (np.arange(90.0).reshape(3, 5, 6),), (np.arange(16.0).reshape(2, 4, 2),),
             (np.zeros((3, 0, 3)),)]
    assert_calls_match_numpy(views, calls)


def test_reshape_of_a_transposed_argument_after_a_write():
    def written(x):
        x[...] = x * 2
        return x.T.reshape(-1) + 1
    calls = [(np.arange(6.0).reshape(2, 3),), (np.arange(12.0).reshape(3, 4),),
             (np.zeros((0, 3)),)]
    assert_calls_match_numpy(written, calls)


def test_integer_index_writes_land_in_the_argument():
    def elements(a, b):
        a[0] = -2
        b[-1, 1] = 9
    calls = [(np.zeros(n), np.zeros((n, 3))) for n in (1, 2, 3, 31)] + [(np.zeros(0),
                                                                          np.zeros((2, 3)))]
    jitted = assert_calls_match_numpy(elements, calls)
    assert _python_calls(jitted) <= 1   # only a[0] of an empty a (NumPy raises)


def test_ravel_of_a_fortran_argument_after_a_write():
    def bumped(a):
        a += 1
        return a.ravel()
    calls = [(np.asfortranarray(np.arange(n * 3, dtype=np.int32).reshape(n, 3)),)
             for n in (2, 1, 3, 31, 0)]
    assert_calls_match_numpy(bumped, calls)


def test_0d_argument_receives_a_scan_result():
    def scanned(a0, a1):
        a1[...] = np.cumsum(a0) * 2
    calls = [(np.array(3.0), np.array(0.0)), (np.array(-1.5), np.array(7.0))]
    assert_calls_match_numpy(scanned, calls)


@pytest.mark.parametrize("index", [(Ellipsis, -1), (0, Ellipsis), (Ellipsis,), ()],
                         ids=["ellipsis_last", "first_ellipsis", "ellipsis", "empty"])
def test_ellipsis_index_gives_an_array_and_integers_a_scalar(index):
    def element(a):
        return (a * 2)[index]
    calls = [(_vector(n),) for n in (3, 1, 2, 31, 0)] + [(np.array(4.0),)]
    assert_calls_match_numpy(element, calls)


def test_integer_index_of_every_axis_gives_a_scalar():
    def element(a):
        return (a - 1)[1, -1], a[..., 0, 0]
    calls = [(np.arange(n * 4.0).reshape(n, 4),) for n in (2, 3, 31, 1, 0)]
    assert_calls_match_numpy(element, calls)


# -- random compositions ----------------------------------------------------------------------

def _slice_op(rng: np.random.Generator):
    start, stop = rng.choice([None, 0, 1, -1, 2]), rng.choice([None, 1, -1, 2, -2])
    step, axis = rng.choice([None, 1, 2, -1]), int(rng.integers(3))
    key = slice(None if start is None else int(start), None if stop is None else int(stop),
                None if step is None else int(step))
    return f"[{axis}]{key}", lambda v, y: v[(slice(None),) * (axis % v.ndim) + (key,)]


def _index_op(rng: np.random.Generator):
    k, axis = int(rng.choice([0, -1, 1])), int(rng.integers(3))
    return f"[{axis}]={k}", lambda v, y: v[(slice(None),) * (axis % v.ndim) + (k,)]


def _reduce_op(rng: np.random.Generator):
    kind, axis, keep = str(rng.choice(["sum", "max"])), int(rng.integers(3)), bool(
        rng.integers(2))
    return f"{kind}({axis},{keep})", lambda v, y: getattr(v, kind)(axis=axis % v.ndim,
                                                                   keepdims=keep)


_FIXED_OPS = [
    ("T", lambda v, y: v.T),
    ("newaxis", lambda v, y: v[None]),
    ("ellipsis_last", lambda v, y: v[..., -1]),
    ("ravel", lambda v, y: v.reshape(-1)),
    ("rows", lambda v, y: v.reshape(-1, v.shape[-1])),
    ("squeeze", lambda v, y: np.squeeze(v)),
    ("diff", lambda v, y: np.diff(v)),
    ("plus_y", lambda v, y: v + y),
    ("times_y_tail", lambda v, y: v * y[1:]),
    ("affine", lambda v, y: v * 2.0 + 1.0),   # exact: sums of whole numbers stay exact
    ("stencil", lambda v, y: v[1:] + v[:-1]),
    ("expand", lambda v, y: np.expand_dims(v, -1)),
    ("swap", lambda v, y: np.swapaxes(v, 0, -1)),
    ("reversed", lambda v, y: v[::-1]),
    ("where", lambda v, y: np.where(v > 0, v, y[:1])),
    ("outer", lambda v, y: v[..., None] * y),
    ("first_rows", lambda v, y: v.reshape(v.shape[0], -1)),
    ("one_row", lambda v, y: v.reshape(1, -1)),
    ("like", lambda v, y: np.zeros_like(v) + v[..., :1]),
    ("ones", lambda v, y: np.ones(v.shape) * v),
    ("cumsum", lambda v, y: np.cumsum(v, axis=-1)),
    ("gram", lambda v, y: v @ v.T),
    ("argmax", lambda v, y: v.argmax(axis=0)),
    ("first_element", lambda v, y: v[(0,) * v.ndim] + v),
]


def _random_program(rng: np.random.Generator):
    makers = [_slice_op, _index_op, _reduce_op] + [lambda r, op=op: op for op in _FIXED_OPS]
    ops = [makers[int(rng.integers(len(makers)))](rng) for _ in range(int(rng.integers(2, 6)))]

    def program(x, y):
        v = x
        for _, op in ops:
            if v.ndim == 0:
                break
            v = op(v, y)
        return v
    return " ".join(name for name, _ in ops), program


def _whole(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Whole numbers as float64: sums are exact in any order (autojit's summation order
    differs from NumPy's pairwise one, within the documented bound)."""
    return rng.integers(-9, 10, shape).astype(np.float64)


@pytest.mark.parametrize("seed", range(12))
def test_random_compositions_match_numpy_across_sizes(seed):
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shapes = [tuple(int(rng.choice([0, 1, 2, 2, 3, 5])) for _ in range(ndim))
              for _ in range(5)]
    shapes.insert(0, tuple(2 for _ in range(ndim)))   # a size-1 slice at the first call
    for program_number in range(3):
        name, program = _random_program(rng)
        calls = [(_whole(rng, shape), _whole(rng, (int(rng.choice([1, 2, 3])),)))
                 for shape in shapes]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FallbackWarning)
            try:
                assert_calls_match_numpy(program, calls)
            except AssertionError as exc:
                raise AssertionError(f"program {program_number} ({name}) with shapes "
                                     f"{shapes}: {exc}") from exc
