"""Loop regions on the CPU run with the native driver (``runtime/native_region.py``): the
body's kernels, its 1-d dot products (NumPy's own BLAS call) and its inner loops as one C
program for the whole trip range, no Python per iteration (issue 15 point 5). Results are
NumPy's bit for bit; a loop whose views are not affine in its indices over the whole range
(a bound that goes negative midway, ``x[:i]`` past the end) keeps the host loop, which
does what NumPy does."""

from __future__ import annotations

import numpy as np

from tests.support.loop_programs import heat, lower_solve, lu_inplace
from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

import autojit.runtime.native_region as native_region


def _rng(seed=0):
    return np.random.default_rng(seed)


def _lower(n, dtype=np.float64, seed=0):
    rng = _rng(seed)
    return ((np.tril(rng.random((n, n))) + np.eye(n) * n).astype(dtype),
            rng.random(n).astype(dtype))


def test_heat_stencil_runs_natively(driver_runs):
    u = _rng().random((12, 15))
    assert_calls_match_numpy(heat, [(u, 30, 0.1), (u[:7, :9].copy(), 5, 0.25), (u, 0, 0.1)])
    assert driver_runs() == 3   # an empty trip range too (nothing runs)


def test_forward_substitution_is_bit_exact(driver_runs):
    assert_calls_match_numpy(lower_solve, [_lower(40), _lower(3, seed=1), _lower(1)])
    assert driver_runs() >= 2


def test_forward_substitution_float32(driver_runs):
    assert_calls_match_numpy(lower_solve, [_lower(33, np.float32), _lower(5, np.float32)])
    assert driver_runs() >= 2


def test_lu_nested_triangular_loops(driver_runs):
    rng = _rng(2)
    a = rng.random((24, 24)) + np.eye(24) * 24
    assert_calls_match_numpy(lu_inplace, [(a,), (a[:5, :5].copy(),), (a[:2, :2].copy(),)])
    assert driver_runs() >= 2


def test_lu_float32_column_strides(driver_runs):
    a = (_rng(3).random((17, 17)) + np.eye(17) * 17).astype(np.float32)
    assert_matches_numpy(lu_inplace, a)
    assert driver_runs() >= 1


def prefix_sums(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sum(x[:i])
    return out


def test_slice_growing_with_the_index(driver_runs):
    x = _rng(4).random(50)
    assert_calls_match_numpy(prefix_sums, [(x, np.zeros(50)), (x[:7].copy(), np.zeros(9))])
    assert driver_runs() == 2


def row_dots(a, x, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, :j] @ x[:j]
    return out


def test_nested_loops_with_dots(driver_runs):
    rng = _rng(5)
    a, x = rng.random((6, 40)), rng.random(40)
    assert_calls_match_numpy(row_dots, [(a, x, np.zeros((6, 40))),
                                        (a[:0].copy(), x, np.zeros((0, 40)))])
    assert driver_runs() >= 1


def reversed_dots(low, x, out):
    for i in range(low.shape[0]):
        out[i] = low[i, :i] @ x[:i]
    return out


def test_dot_on_strides_numpy_keeps_off_blas_matches(driver_runs):
    rng = _rng(6)
    low, x = rng.random((30, 30)), rng.random(60)
    # a negative stride: NumPy sums in its own loop, so the driver does not take it
    assert_matches_numpy(reversed_dots, low, x[::-1][:30], np.zeros(30))
    assert driver_runs() == 0
    assert "BLAS" in native_region.DECLINED[0]
    # a stride of two elements: BLAS (incx 2), the driver
    assert_matches_numpy(reversed_dots, low, x[::2], np.zeros(30))
    assert driver_runs() == 1


def wrapping_bounds(x, y, out):
    for i in range(-3, 5):
        out[i] = x[:i] @ y[:i]
    return out


def test_slice_bound_negative_midway_keeps_the_host_loop(driver_runs):
    rng = _rng(7)
    x, y = rng.random(9), rng.random(9)
    assert_matches_numpy(wrapping_bounds, x, y, np.zeros(9))
    assert driver_runs() == 0


def past_the_end(x, out, n):
    for i in range(n):
        out[i] = np.sum(x[:i])
    return out


def test_slice_past_the_end_clamps_as_numpy_does(driver_runs):
    x = _rng(8).random(5)
    # x[:i] clamps once i > 5: not affine there, the host loop gives NumPy's answer
    assert_calls_match_numpy(past_the_end, [(x, np.zeros(9), 9), (x, np.zeros(9), 4)])
    assert driver_runs() == 1


def index_out_of_range(x, out, n):
    for i in range(n):
        out[i] = x[i] * 2.0
    return out


def test_index_out_of_range_raises_as_numpy(driver_runs):
    x = _rng(9).random(4)
    assert_calls_match_numpy(index_out_of_range, [(x, np.zeros(6), 6), (x, np.zeros(6), 3)])


def carried_scale(x, y, steps):
    acc = x[0] * 0.0
    for i in range(steps):
        y = y * 0.5 + x[i]
        acc = acc + np.sum(y)
    return y, acc


def test_carried_scalars_and_arrays_match(driver_runs):
    rng = _rng(10)
    x = rng.random(12)
    assert_calls_match_numpy(carried_scale, [(x, rng.random(12), 12), (x, rng.random(12), 0),
                                             (x, rng.random(12), 1), (x, rng.random(12), 7)])
    assert driver_runs() >= 3   # (the carried values' buffers copied once per iteration)


def accumulate_dots(x, y):
    acc = x[0, 0] * 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] @ y[i]
    return acc


def test_carried_scalar_result_type_is_numpys(driver_runs):
    rng = _rng(16)
    assert_calls_match_numpy(accumulate_dots, [(rng.random((9, 33)), rng.random((9, 33))),
                                               (rng.random((4, 2)), rng.random((4, 2)))])
    assert driver_runs() == 2


def swap_sum(a, b, n):
    for _ in range(n):
        a, b = b, a + b
    return a, b


def test_carried_values_exchanged(driver_runs):
    rng = _rng(17)
    assert_calls_match_numpy(swap_sum, [(rng.random(3), rng.random(3), 6),
                                        (rng.random(3), rng.random(3), 0),
                                        (rng.random(3), rng.random(3), 1)])
    assert driver_runs() >= 2


def relax(u, tol):
    err = tol + 1.0
    while err > tol:
        new = 0.5 * (u[:-2] + u[2:])
        err = np.max(np.abs(new - u[1:-1]))
        u[1:-1] = new
    return u


def test_while_loop_runs_natively(driver_runs):
    rng = _rng(18)
    assert_calls_match_numpy(relax, [(rng.random(20), 1e-3), (rng.random(30), 10.0),
                                     (rng.random(8), 0.0)])
    assert driver_runs() == 3


def empty_ranges(a, out, k):
    for i in range(k, a.shape[0]):
        for j in range(i, k):
            out[i, j] = a[i, :j] @ a[j, :j]
    return out


def test_empty_trip_ranges(driver_runs):
    a = _rng(11).random((6, 6))
    assert_calls_match_numpy(empty_ranges, [(a, np.zeros((6, 6)), 2), (a, np.zeros((6, 6)), 9)])


def neighbour_dots(x, out):
    for i in range(1, x.shape[0]):
        out[i] = x[i - 1] @ x[i]
    return out


def previous_row_prefix(x, out):
    for i in range(1, x.shape[0]):
        out[i] = np.sum(x[i - 1, :i] * x[i, :i])
    return out


def test_index_arithmetic_of_the_loop_index(driver_runs):
    rng = _rng(12)
    assert_calls_match_numpy(neighbour_dots, [(rng.random((7, 5)), np.zeros(7)),
                                              (rng.random((1, 3)), np.zeros(1))])
    assert_calls_match_numpy(previous_row_prefix, [(rng.random((6, 6)), np.zeros(6)),
                                                   (rng.random((6, 3)), np.zeros(6))])
    # (a (1, 3) argument is a size-1 signature of its own; x[i - 1, :i] clamps past
    # column 3 in the last call: the host loop)
    assert driver_runs() == 2


def square_index(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sum(x[:i * i])
    return out


def test_index_product_keeps_the_host_loop(driver_runs):
    x = _rng(13).random(30)
    assert_matches_numpy(square_index, x, np.zeros(5))
    assert driver_runs() == 0


def test_kept_program_takes_the_new_call_arrays_and_scalars(driver_runs):
    rng = _rng(14)
    u1, u2 = rng.random((9, 11)), rng.random((9, 11))
    jitted = assert_calls_match_numpy(heat, [(u1, 20, 0.1), (u2, 20, 0.3), (u1, 20, 0.2)])
    assert driver_runs() == 3
    kept = [c.body.schedule_cache.get("native_programs") for c in
            jitted.inspect(u1, 20, 0.1).plan.regions]
    assert kept and len(kept[0]) == 1   # one layout: one program, built once


def solve_into(low, b, x):
    for i in range(b.shape[0]):
        x[i] = (b[i] - low[i, :i] @ x[:i]) / low[i, i]
    return x


def test_overlapping_arguments_in_a_later_call(driver_runs):
    low, b = _lower(12, seed=15)
    shared = b.copy()
    assert_calls_match_numpy(solve_into, [(low, b, np.zeros(12)),
                                          lambda: (low.copy(), shared.copy(), shared.copy()),
                                          lambda: (low.copy(), *(2 * [b.copy()]))])


def carried_view_of_written(a, n):
    row = a[0]
    for i in range(n):
        a[i] += 1.0
        row = row * 2.0
    return row


def test_carried_view_of_an_argument_the_body_writes(driver_runs):
    # the first carried value is a view of ``a``: the host loop reads the body's write
    # through it, so a copy made before the loop would be stale
    assert_calls_match_numpy(carried_view_of_written, [(np.ones((4, 3)), 4),
                                                       (np.ones((4, 3)), 1)])


def test_arguments_updated_in_place_are_the_carried_values(driver_runs):
    rng = _rng(19)

    def nbody_like(pos, vel, steps, dt):
        for _ in range(steps):
            vel += dt * pos
            pos += dt * vel
        return pos, vel

    assert_calls_match_numpy(nbody_like, [(rng.random(3), rng.random(3), 4, 0.1),
                                          (rng.random(3), rng.random(3), 0, 0.1)])


def test_threads_running_one_loop_at_once(driver_runs):
    import threading

    from autojit import autoroute
    jitted = autoroute(lower_solve, force="cpu")
    inputs = [_lower(30, seed=s) for s in range(4)]
    expected = [lower_solve(*args) for args in inputs]
    failures = []

    def work(k):
        for _ in range(25):
            got = jitted(*inputs[k])
            if not np.array_equal(got, expected[k]):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert driver_runs() >= 90


def test_backward_loop_and_other_layouts(driver_runs):
    from tests.support.loop_programs import upper_solve
    low, b = _lower(25, seed=20)
    assert_calls_match_numpy(upper_solve, [(low.T.copy(), b), (low.T, b[::-1])])
    assert_calls_match_numpy(lower_solve, [(np.asfortranarray(low), b), (low, b[::-1])])
    assert driver_runs() >= 3


def int_dots(a, x, out):
    for i in range(a.shape[0]):
        out[i] = a[i, :i] @ x[:i]
    return out


def test_integer_dot_products_keep_the_host_loop(driver_runs):
    rng = _rng(21)
    assert_matches_numpy(int_dots, rng.integers(-9, 9, (7, 7)), rng.integers(-9, 9, 7),
                         np.zeros(7, np.int64))
    assert driver_runs() == 0


def row_sums(a, out):
    for i in range(a.shape[0]):
        s = a[i, 0] * 0.0
        for j in range(a.shape[1]):
            s = s + a[i, j] * 2.0
        out[i] = s
    return out


def triangle_sums(a, out):
    for i in range(a.shape[0]):
        s = a[i, 0] * 0.0
        for j in range(i):
            s = s + a[i, :j] @ a[:j, j]
        out[i] = s
    return out


def inner_exchange(a, out):
    for i in range(a.shape[0]):
        p = a[i, 0] * 1.0
        q = a[i, 1] * 1.0
        for _ in range(i):
            p, q = q, p + q
        out[i] = p - q
    return out


def inner_in_place(a, v):
    for i in range(a.shape[0]):
        w = v[i]
        for j in range(3):
            w += a[i, j]
    return v


def test_inner_loops_with_carried_values(driver_runs):
    rng = _rng(22)
    assert_calls_match_numpy(row_sums, [(rng.random((5, 7)), np.zeros(5))])
    assert_calls_match_numpy(triangle_sums, [(rng.random((9, 9)), np.zeros(9)),
                                             (rng.random((3, 3)), np.zeros(3))])
    assert_calls_match_numpy(inner_exchange, [(rng.random((6, 2)), np.zeros(6))])
    assert_calls_match_numpy(inner_in_place, [(rng.random((4, 3)), rng.random((4, 2)))])
    assert driver_runs() == 5


def test_one_program_for_every_trip_range(driver_runs):
    rng = _rng(23)
    u = rng.random((9, 11))
    jitted = assert_calls_match_numpy(heat, [(u, 20, 0.1), (u, 3, 0.3), (u, 0, 0.2),
                                             (u, 20, 0.1)])
    kept = jitted.inspect(u, 20, 0.1).plan.regions[0].body.schedule_cache["native_programs"]
    assert len(kept) == 1 and driver_runs() == 4
    x = rng.random(9)
    assert_calls_match_numpy(past_the_end, [(x, np.zeros(12), 12), (x, np.zeros(12), 9),
                                            (x, np.zeros(12), 11), (x, np.zeros(12), 3)])
    assert driver_runs() == 6   # (12 and 11 clamp: the host loop)


def test_kernels_the_target_splits_keep_the_host_loop(driver_runs):
    u = _rng(24).random((300, 300))
    options = {"num_threads": 2, "thread_min_work": 1000}
    assert_calls_match_numpy(heat, [(u, 3, 0.1)], options=options)
    assert driver_runs() == 0
    assert "splits over threads" in native_region.DECLINED[0]
    assert_calls_match_numpy(heat, [(u[:6, :6].copy(), 3, 0.1)], options=options)
    assert driver_runs() == 1
