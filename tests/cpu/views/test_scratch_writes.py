"""Writes into arrays computed inside the function (scratch arrays): NumPy is the oracle.

``np.empty/zeros/ones/full`` (and ``_like``), copies and results of operations can be
written into (slices, integer indices, ``+=`` on a region, ufunc ``out=``, masked scalar
stores), read back, written again and returned. Each write is the array's next version;
views taken before a write show it, as NumPy's do; the buffer plan writes in place.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.fuse.buffers import plan_buffers


def _sizes(*lengths: int) -> list[tuple[np.ndarray]]:
    return [(np.arange(float(n)) * 1.5 - 2.0,) for n in lengths]


def _compiled_once(jitted, calls: int) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["routes"]["cpu"] == calls
    assert stats["compiles"] == 1


# -- the programs of the brief ----------------------------------------------------------
def fill(a):
    out = np.empty_like(a)
    out[0] = a[0]
    out[1:] = a[1:] - a[:-1]
    return out


def boundary(a):
    u = np.zeros((a.shape[0] + 2,))
    u[1:-1] = a
    u[0] = u[1]
    u[-1] = u[-2]
    return u * 2


def twice(a):
    y = a * 2
    y[::2] += 1
    z = y.copy()
    y[0] = -1
    return y, z


def viewed(a):
    y = a + 1
    v = y[1:]
    y[2] = 0
    return v.sum()


@pytest.mark.parametrize("fn", [fill, twice, viewed])
def test_scratch_array_written_slice_by_slice_compiles_once(fn):
    jitted = assert_calls_match_numpy(fn, _sizes(8, 20, 5, 3))
    _compiled_once(jitted, 4)


def test_scratch_array_sized_from_a_shape_compiles():
    # np.zeros((n + 2,)) reads the size: one compile per size until sizes become
    # runtime values (issue 15, scope point 3); every call compiles, none runs as Python
    jitted = assert_calls_match_numpy(boundary, _sizes(8, 20, 5))
    assert jitted.stats()["routes"]["python"] == 0


# -- what can be written ------------------------------------------------------------------
def _columns(a):
    x = np.ones_like(a[:, None] * np.ones(3))
    x[:, 0] = a
    x[2, 1] = 7.0
    x[1:-1] += a[1:-1, None]
    x[-1] *= -1
    return x


def _ufunc_out(a, b):
    x = np.empty_like(a)
    np.add(a, b, out=x)
    np.multiply(x[:-1], 2, out=x[1:])
    np.negative(x[::3], out=x[::3])
    return x


def _self_overlap(a):
    x = a + 0
    x[1:] = x[:-1]
    x[::-1] = x
    x[:-1] += x[1:]
    return x


def _masked(a):
    x = a * 3
    x[x > 2] = 0
    x[a < 0] = -1.0
    return x


def _filled_and_scalar(a):
    x = np.full_like(a, 2.5)
    x[1] = a[0]
    z = np.zeros_like(a[0])
    z[...] = a[1]
    return x, z


def _chain(a):
    x = np.zeros_like(a)
    x[1:] = a[:-1]
    x[2:] += x[:-2]
    y = x[::2]
    x[0] = 9
    return y + 0, x, y


def _int_scratch(a):
    x = (a * 4).astype(np.int32)
    x[1:] //= 3
    x[0] = 100
    x[-1] = 7
    return x


def _copy_then_write(a):
    x = np.copy(a)
    x[0] = 5
    return x, a.sum()


def _two_dims(a):
    g = np.zeros_like(a[:, None] * a)
    g[1:-1, 1:-1] = a[1:-1, None] * a[1:-1]
    g[0, :] = 1
    g[:, -1] = g[:, 0]
    return g.T, g


@pytest.mark.parametrize("fn", [_columns, _self_overlap, _masked, _filled_and_scalar, _chain,
                                _int_scratch, _copy_then_write, _two_dims])
def test_writes_into_scratch_arrays_match_numpy(fn):
    jitted = assert_calls_match_numpy(fn, _sizes(8, 20, 5))
    _compiled_once(jitted, 3)


def test_ufunc_out_into_a_scratch_array_and_its_slices():
    jitted = assert_calls_match_numpy(_ufunc_out, [
        (np.arange(8.0), np.linspace(0, 1, 8)), (np.arange(20.0) - 3, np.ones(20)),
        (np.arange(5.0), np.full(5, -0.0))])
    _compiled_once(jitted, 3)


# -- values that are one node: copies, equal computations ---------------------------------
def _equal_copies(a):
    x = a.copy()
    y = a.copy()
    x[0] = 5
    return x, y


def _equal_sums(a):
    x = a + 1
    y = a + 1
    x[0] = 5
    w = a + 1
    return x + y, w


def _equal_after_view(a):
    x = a + 1
    v = x[1:]
    y = a + 1
    x[1] = 5
    return v, y


def _copies_viewed(a):
    x = a.copy()
    y = np.copy(a)
    v = x[1:]
    x[1] = 5
    y[0] = -5
    return v, y, a.copy()


@pytest.mark.parametrize("fn", [_equal_copies, _equal_sums, _copies_viewed])
def test_a_write_never_changes_an_equal_computation(fn):
    jitted = assert_calls_match_numpy(fn, _sizes(8, 20, 5))
    _compiled_once(jitted, 3)


def test_equal_computation_viewed_before_a_write_runs_as_python():
    jitted = assert_calls_match_numpy(_equal_after_view, _sizes(8, 5))
    assert jitted.stats()["routes"]["python"] == 2


# -- what NumPy's views show ----------------------------------------------------------------
def _view_sees_writes(a):
    y = a + 1
    v = y[1:]
    t = y.T
    y[2] = 0
    y[:2] += 10
    return v, t, y[::2]


def _view_written(a):
    y = a * 2
    v = y[1:]
    v[0] = 7
    v += 1
    return y


def _element_kept(a):
    y = a * 2
    s = y[0]
    y += 1
    return s, y


def _element_read_after_write(a):
    y = a * 2
    s = y[0]
    y[0] = 3
    return s


@pytest.mark.parametrize("fn", [_view_sees_writes, _view_written, _element_kept])
def test_views_of_a_scratch_array_follow_numpy(fn):
    jitted = assert_calls_match_numpy(fn, _sizes(8, 20, 5))
    _compiled_once(jitted, 3)


def test_an_element_copied_before_a_write_is_kept_or_declined():
    jitted = assert_calls_match_numpy(_element_read_after_write, _sizes(8, 5))
    assert jitted.stats()["routes"]["python"] == 2   # declined, never a wrong answer


def _reshape_then_write(a):
    y = a + 1
    r = y.reshape(2, -1)
    y[0] = 100
    return r


def _write_into_reshape(a):
    y = a + 1
    r = y.reshape(2, -1)
    r[0, 0] = 100
    return y


@pytest.mark.parametrize("fn", [_reshape_then_write, _write_into_reshape])
def test_reshapes_of_scratch_arrays_are_never_wrong(fn):
    assert_calls_match_numpy(fn, _sizes(8, 12, 4))


# -- the escape report ------------------------------------------------------------------------
def test_the_buffer_plan_writes_scratch_arrays_in_place():
    ins = autoroute(fill).inspect(np.arange(10.0))
    writes = [f for f in plan_buffers(ins.plan).fates
              if f.escape and "written in place into scratch array" in f.escape]
    assert len(writes) == 2
    report = ins.report(verbosity=1, toolchain=False)
    assert report.count("written in place into scratch array") == 2, report


def test_the_report_says_why_a_scratch_array_was_copied():
    ins = autoroute(_equal_sums).inspect(np.arange(10.0))
    report = ins.report(verbosity=1, toolchain=False)
    assert "copied: that node is also another value" in report, report


# -- layouts: a ``_like`` array takes its prototype's axis order ----------------------------
def _like_then_column_sums(a):
    y = np.zeros_like(a)
    y[...] = a
    y[0] += 1
    return y.sum(axis=0), y.sum()


def test_a_like_array_of_a_fortran_prototype_sums_in_numpys_order():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 70))
    jitted = assert_calls_match_numpy(_like_then_column_sums, [
        (np.asfortranarray(a),), (a,), (np.asfortranarray(a[:40, :9]),), (a[:50, :7],)])
    assert jitted.stats()["routes"]["cpu"] >= 2   # C-ordered calls compile


# -- programs in the style of the corpus ------------------------------------------------------
def _jacobi_step(a):
    b = np.empty_like(a)
    b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                           + a[:-2, 1:-1])
    b[0, :] = a[0, :]
    b[-1, :] = a[-1, :]
    b[:, 0] = a[:, 0]
    b[:, -1] = a[:, -1]
    return b


def _row_softmax(x):
    out = np.empty_like(x)
    out[:] = x - x.max(axis=-1, keepdims=True)
    out /= np.abs(out).sum(axis=-1, keepdims=True) + 1.0
    return out


def _cumsum_fixed(a):
    c = np.cumsum(a, axis=0)
    c[0] = 0
    c[1:] -= a[:-1]
    return c


def _gram_shifted(a):
    c = a @ a.T
    c[0] = 1
    c += a.sum()
    return c


def _read_before_and_after(a):
    y = a[0] + 1
    s = y * 2
    y[0] = 5
    return s + y, s


@pytest.mark.parametrize("fn", [_jacobi_step, _row_softmax, _cumsum_fixed, _gram_shifted,
                                _read_before_and_after])
def test_corpus_style_scratch_programs_compile_once(fn):
    jitted = assert_calls_match_numpy(fn, [
        (np.arange(30.0).reshape(5, 6) % 7,), (np.linspace(-2, 3, 12 * 9).reshape(12, 9),),
        (np.arange(9.0).reshape(3, 3) - 4,)])
    _compiled_once(jitted, 3)
