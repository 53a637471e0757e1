"""The native driver runs a stencil's two kernels (the right-hand side into a temporary,
then the temporary into the array) as row strips (``runtime/row_strips.py``): bit for bit
NumPy's evaluate-then-write result for every size, strip height, radius and layout, and
today's one-launch-after-the-other schedule wherever a read is not a row shift of the
written view."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.loop_programs import heat
from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

import autojit.runtime.native_region as native_region
from autojit.runtime import row_strips
from autojit.runtime.row_strips import Operand, Side, plan_strips


@pytest.fixture
def strips():
    """Counts of loops run (natively, and with a strip schedule) since the test began;
    ``rows(n)`` fixes the strip height (restored afterwards)."""
    if native_region._native_run is None:
        pytest.skip("autojit._native.loops is not built (python setup.py build_ext --inplace)")
    saved = dict(row_strips.SETTINGS)
    runs, striped = native_region.RUNS[0], native_region.STRIP_RUNS[0]

    class Counts:
        @staticmethod
        def runs() -> int:
            return native_region.RUNS[0] - runs

        @staticmethod
        def striped() -> int:
            return native_region.STRIP_RUNS[0] - striped

        @staticmethod
        def rows(n: int) -> None:
            row_strips.SETTINGS["rows"] = n

    yield Counts
    row_strips.SETTINGS.clear()
    row_strips.SETTINGS.update(saved)


def _plate(shape, dtype=np.float64, seed=0, order="C"):
    u = np.random.default_rng(seed).random(shape).astype(dtype)
    u[0] = 1.0
    return np.asarray(u, order=order)


def test_heat_takes_strips_and_matches_numpy_bit_for_bit(strips):
    assert_calls_match_numpy(heat, [(_plate((150, 150)), 40, 0.1),
                                    (_plate((151, 149), seed=1), 25, 0.2)])
    assert strips.runs() == 2
    assert strips.striped() == 2


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 7, 16])
def test_heat_strip_heights_not_dividing_the_rows(strips, rows):
    strips.rows(rows)
    shapes = [(3, 3), (4, 4), (5, 7), (9, 4), (13, 13), (23, 17), (40, 33), (64, 5)]
    assert_calls_match_numpy(heat, [(_plate(s, seed=i), 7, 0.15)
                                    for i, s in enumerate(shapes)])
    # every interior of at least two strips (a row at least) ran as strips
    expected = sum(s[0] - 2 >= 2 * max(rows, 2) and s[1] > 2 for s in shapes)
    assert strips.striped() == expected
    assert strips.runs() == len(shapes)


def test_small_plates_keep_one_launch_after_the_other(strips):
    assert_calls_match_numpy(heat, [(_plate((12, 15)), 9, 0.1), (_plate((3, 3)), 4, 0.1)])
    assert strips.runs() == 2 and strips.striped() == 0


def heat_radius_two(u, steps, alpha):
    for _ in range(steps):
        u[2:-2, 2:-2] += alpha * (u[4:, 2:-2] + u[:-4, 2:-2] + u[2:-2, 4:] + u[2:-2, :-4]
                                  + u[3:-1, 2:-2] - 5 * u[2:-2, 2:-2])
    return u


@pytest.mark.parametrize("rows", [0, 3, 4])
def test_wider_stencil_lags_by_its_radius(strips, rows):
    strips.rows(rows)
    assert_calls_match_numpy(heat_radius_two, [(_plate((90, 70)), 12, 0.05),
                                               (_plate((31, 9), seed=2), 5, 0.05)])
    assert strips.striped() == (2 if rows else 1)


def shifted_up(u, steps):
    for _ in range(steps):   # reads only rows below the written ones
        u[:-3, 1:] = 0.5 * (u[3:, 1:] + u[2:-1, :-1])
    return u


def test_reads_ahead_of_the_written_rows(strips):
    strips.rows(4)
    assert_matches_numpy(shifted_up, _plate((50, 20)), 6)
    assert strips.striped() == 1


@pytest.mark.parametrize("rows", [0, 4])
def test_fortran_ordered_and_transposed_plates(strips, rows):
    strips.rows(rows)
    square = _plate((60, 60), seed=3)
    assert_calls_match_numpy(heat, [(_plate((150, 120), order="F"), 10, 0.1),
                                    (square.T, 10, 0.1),
                                    (np.asfortranarray(square)[::-1], 6, 0.1),
                                    (_plate((80, 90))[:, ::-1], 6, 0.1)])
    assert strips.runs() == 4
    assert strips.striped() == 4   # along the kernels' first loop axis, whichever it is


def test_float32_heat(strips):
    assert_calls_match_numpy(heat, [(_plate((150, 150), np.float32), 30, np.float32(0.1)),
                                    (_plate((101, 77), np.float32, seed=4), 20, 0.1)])
    assert strips.striped() == 2


def with_transposed_read(u, steps, alpha):
    for _ in range(steps):   # u.T's rows are columns of u: the second kernel's writes
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] - u.T[1:-1, 1:-1])
    return u


def with_row_broadcast(u, steps, alpha):
    for _ in range(steps):   # row 1 of u, read by every row, is the first row written
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] - u[1, 1:-1])
    return u


def with_reversed_read(u, steps, alpha):
    for _ in range(steps):   # rows of u from the bottom up
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] - u[-2:0:-1, 1:-1])
    return u


@pytest.mark.parametrize("program", [with_transposed_read, with_row_broadcast,
                                     with_reversed_read])
def test_reads_of_the_written_array_that_are_not_row_shifts_keep_the_old_schedule(
        strips, program):
    strips.rows(4)
    assert_matches_numpy(program, _plate((70, 70), seed=5), 8, 0.1)
    assert strips.runs() == 1
    assert strips.striped() == 0
    assert "row shift" in native_region.STRIPS_DECLINED[0]


def two_arrays(u, v, steps):
    for _ in range(steps):
        u[1:-1, 1:-1] += 0.1 * (v[2:, 1:-1] + u[:-2, 1:-1] - 2 * u[1:-1, 1:-1])
    return u


def test_another_array_read_beside_the_written_one(strips):
    strips.rows(4)
    u, v = _plate((60, 40)), _plate((60, 40), seed=6)
    assert_calls_match_numpy(two_arrays, [(u, v, 5),
                                          lambda: (lambda w: (w, w, 5))(_plate((60, 40)))])
    assert strips.striped() == 1   # the second call: v is u, the host loop (as NumPy)


def stencil_3d(u, steps):
    for _ in range(steps):
        u[1:-1, 1:-1, :] += 0.1 * (u[2:, 1:-1, :] + u[:-2, 1:-1, :] + u[1:-1, 2:, :]
                                   - 3 * u[1:-1, 1:-1, :])
    return u


def test_three_dimensional_stencil(strips):
    strips.rows(3)
    assert_calls_match_numpy(stencil_3d, [(_plate((30, 12, 7)), 6),
                                          (_plate((20, 8, 5), seed=7).transpose(1, 0, 2), 4)])
    assert strips.striped() == 2


def test_turned_off_builds_the_old_schedule(strips):
    row_strips.SETTINGS["enabled"] = False
    assert_matches_numpy(heat, _plate((150, 150)), 5, 0.1)
    assert strips.runs() == 1 and strips.striped() == 0


# -- the proof on hand-made operands -------------------------------------------------------
def _operand(key, shape, offset_rows, cols_offset=0, output=False, strides=None):
    """A view of a C-ordered float64 root of ``shape`` starting at (row, col)."""
    strides = strides or (8 * shape[1], 8)
    return Operand(key, shape, strides, offset_rows * strides[0] + cols_offset * strides[1],
                   strides, 8, output)


def _pair(reads, temp_read_rows=0, sizes=(40, 30), root=(42, 32)):
    u, t = ("argument", 0), ("temporary", 1)
    temp = (sizes[0] + 1, sizes[1])
    k0 = Side(sizes, (*(_operand(u, root, r, c) for r, c in reads),
                      _operand(t, temp, 0, output=True)), True)
    k1 = Side(sizes, (_operand(t, temp, temp_read_rows), _operand(u, root, 1, 1, True)), True)
    return k0, k1


def test_lag_is_the_deepest_read_behind_the_written_row():
    row_strips.SETTINGS["rows"] = 6
    try:
        plan = plan_strips(*_pair([(2, 1), (0, 1), (1, 2), (1, 0), (1, 1)]))
        assert (plan.rows, plan.lag, plan.total) == (6, 1, 40)
        assert plan_strips(*_pair([(1, 1), (2, 0)])).lag == 0
        # the temporary read a row below where it was written
        assert plan_strips(*_pair([(1, 1), (2, 1)], temp_read_rows=1)).lag == 1
        assert isinstance(plan_strips(*_pair([(1, 1)], sizes=(5, 30))), str)
    finally:
        row_strips.SETTINGS["rows"] = 0


def test_overlapping_layouts_are_not_unravelled():
    assert row_strips._unravel(8 * 33, (10, 32), (256, 8)) == (1, 1)
    assert row_strips._unravel(8 * 33, (10, 32), (8, 8)) is None   # rows share memory
    # a reversed axis: its elements lie below the first one
    assert row_strips._unravel(-16, (4, 4), (32, -8)) == (0, 2)
    assert row_strips._unravel(32 - 8, (4, 4), (32, -8)) == (1, 1)
    assert row_strips._unravel(8, (4, 4), (32, -8)) == (1, 3)
    assert row_strips._unravel(4, (4, 4), (32, -8)) is None   # between two elements
    assert row_strips._unravel(32 * 4, (4, 4), (32, -8)) is None   # past the end


def heat_nested(u, outer, inner, alpha):
    for _ in range(outer):
        for _ in range(inner):   # the strips' loop nested one deeper
            u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                      + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
        u[0] = u[1]
    return u


def test_strips_in_an_inner_loop(strips):
    strips.rows(5)
    assert_calls_match_numpy(heat_nested, [(_plate((41, 23)), 3, 4, 0.1),
                                           (_plate((12, 30), seed=8), 2, 0, 0.1)])
    assert strips.runs() == 2
    assert strips.striped() == 2
