"""Writes into arguments and overlapping memory: integer-index writes, reads after writes,
right sides that read what the left side writes (inside one function, and through two
arguments that share memory at call time), on one thread and split across threads.
NumPy's rule throughout: the right side is evaluated completely, then written."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

import autojit

RNG = np.random.default_rng(7)


def _layouts(shape: tuple[int, ...]) -> list:
    """Fresh-argument makers: C order, F order, negative strides, a strided slice."""
    base = np.arange(float(np.prod(shape))).reshape(shape) - 3.5
    return [lambda: (base.copy(),),
            lambda: (np.array(base, order="F"),),
            lambda: (base.copy()[(slice(None, None, -1),) * base.ndim],),
            lambda: (np.repeat(base, 2, axis=-1)[..., ::2],)]


def _set_first(a):
    a[0] = -2


def _set_corner(a):
    a[0, 1] = 9
    return a.sum()


def _bump_first(a):
    a[0] += 1
    return a[0]


def _set_last_row(a):
    a[-1] = 5.0
    return a[-1] * 2


@pytest.mark.parametrize("fn, shape", [(_set_first, (3,)), (_set_first, (4, 5)),
                                       (_set_corner, (2, 3)), (_set_corner, (5, 4)),
                                       (_bump_first, (6,)), (_bump_first, (3, 4)),
                                       (_set_last_row, (4, 3))])
def test_single_element_write_is_kept(fn, shape):
    assert_calls_match_numpy(fn, _layouts(shape))


def _cumsum_into_scalar(a0, a1):
    a1[...] = np.cumsum(a0) * 2


def _cumprod_into_scalar(a0, a1):
    a1[...] = np.cumprod(a0 + 1)


@pytest.mark.parametrize("fn", [_cumsum_into_scalar, _cumprod_into_scalar])
def test_zero_d_argument_receives_a_scan_result(fn):
    assert_calls_match_numpy(fn, [(np.array(3.0), np.array(0.0)),
                                  (np.array(-1.5), np.array(7.0))])


def _value_before_write(a):
    v = a * 0.5
    a[...] = v
    return v + 0


def _broadcast_value_before_write(a, b):
    v = a + 1.0
    a[...] = 0
    return v[:, None] * b + a.sum()


def _mask_from_the_target(a0, a1):
    v1 = np.floor(a1)
    v3 = np.clip(a0, False, None)
    a0[v3] = True
    return v1, a0 > v3


def _scalar_of_the_target(a):
    s = a[0] * 2
    a[...] = a + 1
    return s + a[0]


def test_value_computed_before_a_write_keeps_its_value():
    assert_calls_match_numpy(_value_before_write, [
        (np.array(3, np.int16),), (np.array(-7, np.int16),), (np.arange(5, dtype=np.int16),)])
    assert_calls_match_numpy(_broadcast_value_before_write, [
        (np.arange(4.0), np.ones((4, 3))), (np.arange(6.0)[::-1], RNG.random((6, 2)))])
    assert_calls_match_numpy(_scalar_of_the_target, [(np.arange(1.0, 4.0),), (np.ones(1),)])


def test_mask_derived_from_the_written_argument():
    assert_calls_match_numpy(_mask_from_the_target, [
        (np.array([True]), np.array([1.5])), (np.array([True, False, True]), np.ones(3)),
        (np.array([False]), np.array([-0.5]))])


def _ravel_after_add(a):
    a += 1
    return a.ravel()


def _reshape_after_write(a):
    a[...] = a * 2
    return a.reshape(-1)[::-1] + a.T.reshape(-1)


def _view_read_after_write(a):
    a[1:] = 3.0
    return a.T[0], a[0] * 1


@pytest.mark.parametrize("fn", [_ravel_after_add, _reshape_after_write,
                                _view_read_after_write])
def test_view_taken_after_a_write_sees_the_written_values(fn):
    assert_calls_match_numpy(fn, _layouts((2, 3)) + _layouts((4, 5)) + [
        lambda: (np.arange(6, dtype=np.int32).reshape(2, 3).T,)])


def _tail_doubled(a):
    return a[1:] * 2 + a[-1:]


def test_view_of_one_element_at_trace_time_grows_with_the_argument():
    """``a[1:]`` of two elements has one: typed 1 (it broadcasts), so guarded, not kept."""
    assert_calls_match_numpy(_tail_doubled, [(np.arange(2.0),), (np.arange(5.0),),
                                             (np.arange(2.0),), (np.arange(7.0)[::-2],)])
    assert_calls_match_numpy(_view_read_after_write, [(np.ones((2, 3)),), (np.ones((4, 3)),)])



def _reverse_in_place(a):
    a[::-1] = a


def _shift_right(a):
    a[1:] = a[:-1]


def _shift_left(a):
    a[:-1] = a[1:]


def _transpose_in_place(a):
    a[...] = a.T


def _broadcast_own_element(a):
    a[...] = a[0]


def _scaled_own_element(a):
    a[...] = a[-1] * 2 + a


def _smooth_reversed(a):
    a[1:-1] = a[::-1][1:-1] + a[2:]


def _augmented_reversed(a):
    a += a[::-1]


def _noop_self_copy(a):
    a[...] = a
    a[1:] = a[1:]
    return a.sum()


SELF_OVERLAP = [_reverse_in_place, _shift_right, _shift_left, _broadcast_own_element,
                _scaled_own_element, _smooth_reversed, _augmented_reversed, _noop_self_copy]


def _threaded() -> autojit.config:
    """Every splittable kernel call split across two threads."""
    return autojit.config(num_threads=2, thread_min_work=0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fn", SELF_OVERLAP)
def test_self_overlapping_write_evaluates_the_right_side_first(fn, threads):
    calls = _layouts((6,)) + _layouts((1,)) + _layouts((257,)) + [
        lambda: (np.arange(40.0).reshape(5, 8)[:, 1],)]
    with _threaded() if threads == 2 else autojit.config(num_threads=1):
        assert_calls_match_numpy(fn, calls)


@pytest.mark.parametrize("threads", [1, 2])
def test_transpose_into_itself(threads):
    calls = _layouts((3, 3)) + _layouts((1, 1)) + _layouts((17, 17))
    with _threaded() if threads == 2 else autojit.config(num_threads=1):
        assert_calls_match_numpy(_transpose_in_place, calls)


def test_large_self_overlapping_copies_split_across_threads():
    big = np.arange(3_000_000, dtype=np.float64)
    with _threaded():
        assert_calls_match_numpy(_shift_right, [lambda: (big.copy(),)])
        assert_calls_match_numpy(_reverse_in_place, [lambda: (big.copy(),)])
        assert_calls_match_numpy(_transpose_in_place,
                                 [lambda: (big[:1_000_000].reshape(1000, 1000).copy(),)])


def _double_into(x, y):
    x[...] = y * 2


def _copy_into(x, y):
    x[...] = y


def _add_sine_then_sum(x, y):
    x += np.sin(y)
    return y.sum()


def _add_sine_then_max(x, y):
    x += np.sin(y)
    return y.max()   # (a float sum of strided arguments runs as Python: memory order)


def _write_both(x, y):
    x += 1
    y *= 2
    return x - y


def _read_then_write_then_return(x, y):
    s = y.sum()
    x[1:] = y[:-1] + s
    return y


def _scale_rows(x, y):
    x[...] = x * y[::-1]


def _aliased(make_base, *views):
    """A maker of fresh arguments: views of one new base array."""
    def make():
        base = make_base()
        return tuple(view(base) for view in views)
    return make


def _same(a):
    return a


def _reversed(a):
    return a[::-1]


def _shifted(a):
    return a[1:]


def _head(a):
    return a[:-1]


OVERLAPPING_PAIRS = [(_same, _same), (_same, _reversed), (_shifted, _head), (_head, _shifted),
                     (_reversed, _same)]


@pytest.mark.parametrize("fn", [_double_into, _copy_into, _add_sine_then_sum, _write_both,
                                _read_then_write_then_return, _scale_rows])
@pytest.mark.parametrize("threads", [1, 2])
def test_arguments_sharing_memory_behave_like_numpy(fn, threads):
    """The first calls (distinct arrays) compile and warm the function; the aliased calls
    that follow must be evaluated then written, or run as Python."""
    distinct = [lambda: (np.linspace(0, 1, 9)[:8], np.linspace(2, 3, 9)[1:])] * 3
    aliased = [_aliased(lambda n=n: np.linspace(0, 1, n), first, second)
               for first, second in OVERLAPPING_PAIRS for n in (2, 9, 50)]
    fortran = [_aliased(lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)).T[:, 1:],
                        _same, _reversed)]
    disjoint = [_aliased(lambda: np.arange(20.0), lambda a: a[::2], lambda a: a[1::2])]
    with _threaded() if threads == 2 else autojit.config(num_threads=1):
        assert_calls_match_numpy(fn, distinct + aliased + distinct + fortran + disjoint)


def test_disjoint_interleaved_arguments_stay_compiled():
    """``a[::2]`` and ``a[1::2]`` share bounds but no element: still the compiled code."""
    jitted = assert_calls_match_numpy(
        _add_sine_then_max, [_aliased(lambda: np.arange(20.0), lambda a: a[::2],
                                      lambda a: a[1::2])] * 3)
    assert jitted.stats()["calls"] == 3
    assert jitted.stats()["routes"].get("python", 0) == 0


def _random_slice(rng: np.random.Generator, size: int, length: int | None = None) -> slice:
    """A random slice of ``size`` elements (of exactly ``length`` elements when given)."""
    step = int(rng.choice([1, 1, 2, -1, -2, 3]))
    if length is None:
        length = int(rng.integers(1, size + 1))
    span = (length - 1) * abs(step) + 1
    if span > size:
        step, span = (1 if step > 0 else -1), length
    start = int(rng.integers(0, size - span + 1))
    if step > 0:
        return slice(start, start + span, step)
    stop = start - 1 if start > 0 else None
    return slice(start + span - 1, stop, step)


_RIGHT_SIDES = {
    "copy": lambda s: s,
    "affine": lambda s: s * 2 + 1,
    "reversed": lambda s: s[::-1] - 0.5,
}


def _overlapping_case(seed: int) -> tuple:
    """Return (shape, target key, source key, right side name, augmented) for one seed."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 13)),) if seed % 3 else (int(rng.integers(1, 5)),
                                                          int(rng.integers(1, 6)))
    target = tuple(_random_slice(rng, n) for n in shape)
    lengths = [len(range(*k.indices(n))) for k, n in zip(target, shape)]
    source = tuple(_random_slice(rng, n, m) for n, m in zip(shape, lengths))
    side, augmented = str(rng.choice(list(_RIGHT_SIDES))), bool(rng.random() < .3)
    if side == "copy" and len(shape) == 1 and not augmented and _numpy_copies_forward(
            target[0], source[0]):
        side = "affine"
    return shape, target, source, side, augmented


def _numpy_copies_forward(target: slice, source: slice) -> bool:
    """NumPy's one exception to evaluate-then-write: a plain 1-D copy between views
    whose steps point the same way but differ (``b[0:9:2] = b[2:7]``) runs its strided
    loop forward without a temporary, so later elements read values already written
    (NumPy 2.4). autojit evaluates first; such cases are left out of the comparison."""
    return target.step * source.step > 0 and target.step != source.step


@pytest.mark.parametrize("seed", range(24))
def test_random_writes_between_overlapping_views_match_numpy(seed):
    """One base array, a random slice of it as the target and one as the source: inside
    one function, and as two arguments viewing one array (random layouts, two threads)."""
    shape, target, source, side, augmented = _overlapping_case(seed)
    right = _RIGHT_SIDES[side]

    def inside(a):
        if augmented:
            a[target] += right(a[source])
        else:
            a[target] = right(a[source])
        return a[source] + 0     # read after the write: the new values

    def between(x, y):
        if augmented:
            x += right(y)
        else:
            x[...] = right(y)

    rng = np.random.default_rng(1000 + seed)
    base = rng.standard_normal(shape)
    bases = [lambda: (base.copy(),), lambda: (np.array(base, order="F"),),
             lambda: (np.repeat(base, 2, axis=0)[::2],)]
    pairs = [lambda make=make: (lambda b: (b[target], b[source]))(make()[0]) for make in bases]
    with _threaded() if seed % 2 else autojit.config(num_threads=1):
        assert_calls_match_numpy(inside, bases)
        assert_calls_match_numpy(between, pairs)


def _bump_tail(a):
    a[1:] += 1
    return a


def _scale_column(a):
    a[:, 0] *= 2
    return a.sum(axis=0)


def _row_plus_row(a):
    row = a[1]
    row += a[0]            # writes a[1] through the view, reading another row of a
    return row * 1


def _write_through_transpose(a):
    t = a.T
    t[0] = -1.0
    t[1:] -= t[:-1]
    return a


def _old_view_sees_later_writes(a):
    head = a[:2]
    tail = a[::-1][:2]
    a[...] = a * 3
    head += 1
    return head + tail


def _mask_on_a_view(a):
    v = a[1:]
    v[v > 0] = 0.0
    return a.min()


def _stale_reshape(a):
    flat = a.reshape(-1)   # a view of a C-ordered argument, a copy of an F-ordered one
    a[...] = 0
    return flat + 1


VIEW_TARGETS = [_bump_tail, _scale_column, _row_plus_row, _write_through_transpose,
                _old_view_sees_later_writes, _mask_on_a_view]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fn", VIEW_TARGETS)
def test_writes_through_views_of_arguments(fn, threads):
    with _threaded() if threads == 2 else autojit.config(num_threads=1):
        jitted = assert_calls_match_numpy(fn, _layouts((3, 4)) + _layouts((2, 2)) +
                                          _layouts((9, 5)))
    fallbacks = jitted.stats()["fallbacks"]
    if fn is _scale_column:   # a float sum of a strided argument: NumPy's memory order
        assert all("in memory order" in reason for reason in fallbacks), fallbacks
        return
    assert jitted.stats()["routes"].get("python", 0) == 0, fallbacks


def test_a_copy_read_after_a_write_runs_as_python():
    jitted = assert_calls_match_numpy(_stale_reshape, _layouts((3, 4)))
    assert jitted.stats()["routes"]["python"] == len(_layouts((3, 4)))


def _two_views_of_a_computed_value(a0):
    v5 = np.min(a0, axis=1).T
    return v5[-1, ..., None], v5.reshape(9, -1)


def _reshape_of_a_transposed_sum(a):
    return (a + 1).T.reshape(-1) * 2


def test_view_of_a_computed_value_is_taken_once_it_is_computed():
    """A reshape of a transposed computed value is a copy: taken after the kernel ran."""
    assert_calls_match_numpy(_two_views_of_a_computed_value,
                             [(np.arange(72.0).reshape(3, 8, 3),)])
    assert_calls_match_numpy(_reshape_of_a_transposed_sum, _layouts((3, 4)))


def _last_through_ellipsis(a):
    return (a + 1)[..., -1], a[..., 0], a[0, ...]


def test_integer_index_with_ellipsis_is_a_zero_d_array():
    """NumPy: ``a[..., -1]`` of a 1-D array is a 0-d array, ``a[-1]`` a scalar."""
    assert_calls_match_numpy(_last_through_ellipsis, [(np.arange(3.0),), (np.arange(5.0),)])
    assert_calls_match_numpy(lambda a: (a[-1], a[1, None]), [(np.arange(3.0),)])


def _random_program(seed: int) -> tuple[tuple[int, int], list[tuple]]:
    """Return (shape, statements): each statement (target key, transposed target, operator,
    source key, transposed source, scale), target and source random views of one array of
    that shape, the source of the target's shape (or one row of it, broadcast)."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    statements = []
    for _ in range(int(rng.integers(1, 4))):
        target = tuple(_random_slice(rng, n) for n in shape)
        lengths = [len(range(*k.indices(n))) for k, n in zip(target, shape)]
        flip_target = bool(rng.random() < 0.3)
        want = lengths[::-1] if flip_target else lengths          # the shape of t
        fits = [all(m <= n for m, n in zip(w, shape)) for w in (want, want[::-1])]
        flip_source = fits[1] and (not fits[0] or rng.random() < 0.3)
        lengths = want[::-1] if flip_source else want
        source: tuple = tuple(_random_slice(rng, n, m) for n, m in zip(shape, lengths))
        if not flip_source and rng.random() < 0.2:   # one row, broadcast over t's rows
            source = (int(rng.integers(0, shape[0])), source[1])
        operator = str(rng.choice(["=", "+=", "*=", "-="]))
        statements.append((target, flip_target, operator, source, flip_source,
                           float(rng.choice([0.5, 2.0, -1.0]))))
    return shape, statements


def _run_program(a, statements):
    for target, flip_target, operator, source, flip_source, scale in statements:
        t = a[target].T if flip_target else a[target]
        s = a[source].T if flip_source else a[source]
        if operator == "=":
            t[...] = s * scale + 1
        elif operator == "+=":
            t += s
        elif operator == "*=":
            t *= s * scale
        else:
            t -= s[::-1] if s.ndim else s
    return a[::-1].T * 1


@pytest.mark.parametrize("seed", range(24))
def test_random_programs_of_overlapping_writes_match_numpy(seed):
    """Sequences of writes into random (transposed) views of one array, reading other
    overlapping views of it, as NumPy's ufuncs define them: evaluated, then written."""
    shape, statements = _random_program(seed)

    def program(a):
        return _run_program(a, statements)

    base = np.random.default_rng(2000 + seed).standard_normal(shape).round(2)
    with _threaded() if seed % 2 else autojit.config(num_threads=1):
        jitted = assert_calls_match_numpy(program, [
            lambda: (base.copy(),), lambda: (np.array(base, order="F"),),
            lambda: (np.repeat(base, 2, axis=1)[:, ::2],)])
    assert jitted.stats()["routes"].get("python", 0) == 0, jitted.stats()["fallbacks"]


def test_writing_plans_are_never_served_by_the_fast_path():
    """The native fast path does not check overlaps: a plan writing into an argument must
    keep taking the full path, so an aliased call after many distinct ones is still right."""
    jitted = assert_calls_match_numpy(
        _double_into, [lambda: (np.zeros(8), np.arange(8.0))] * 20 + [
            _aliased(lambda: np.arange(8.0), _same, _reversed)])
    assert jitted._fast is None and jitted.stats()["fast_calls"] == 0


def _scalar_kept_across_a_write(a):
    x = a[0]               # a NumPy scalar: a copy
    a[0] = 5
    return x


def _recurrence(a):
    for i in range(1, 6):
        a[i] = a[i - 1] * 2 + a[i]
    return a


def test_scalar_taken_before_a_write_keeps_the_old_value():
    assert_calls_match_numpy(_scalar_kept_across_a_write, [(np.arange(3.0),)])
    assert_calls_match_numpy(lambda a: (_scalar_kept_across_a_write(a), a[1, 2]),
                             [(np.arange(12.0).reshape(3, 4),)])


def test_element_recurrence_reads_each_written_element():
    jitted = assert_calls_match_numpy(_recurrence, [(np.arange(8.0),),
                                                    (np.arange(16.0)[::-2],)])
    assert jitted.stats()["routes"].get("python", 0) == 0


def _horner(coeffs, x):
    y = np.zeros_like(x)
    for k in range(coeffs.shape[0]):
        y = y * x + coeffs[k]
    return y


def _tenth(a):
    return a[10] * 2


def test_views_of_a_shorter_argument_after_a_size_the_code_read():
    """``coeffs[k]`` for every k < coeffs.shape[0]: a shorter ``coeffs`` is a new trace,
    not an IndexError from taking the old trace's views."""
    assert_calls_match_numpy(_horner, [(np.ones(12), np.linspace(0, 1, 8)),
                                       (np.ones(5), np.linspace(0, 1, 8)),
                                       (np.arange(3.0), np.linspace(0, 1, 3))])


def test_index_out_of_range_at_a_later_call_raises_like_numpy():
    assert_calls_match_numpy(_tenth, [(np.arange(12.0),), (np.arange(5.0),),
                                      (np.arange(11.0),)])


def test_view_of_a_value_of_a_size_the_code_fixed():
    assert_calls_match_numpy(lambda a: (np.zeros(a.shape) + 1)[1:],
                             [(np.arange(3),), (np.arange(5),), (np.arange(3),)])
    assert_calls_match_numpy(lambda a: (np.ones((2, 3)) * a)[:, ::-1].T,
                             [(np.arange(3.0),), (np.arange(3.0)[::-1],)])
