"""Regressions the differential fuzzer (tests/fuzz) found, each named for the behaviour:
NumPy's answer, exceptions and argument writes, through the oracle helpers."""

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy


def _ravel_then_write(a):
    a *= 2
    v = a.ravel()
    a[...] = 7
    return v


def _reshape_then_update(a):
    a *= 2
    v = a.reshape(-1)
    a += 1
    return v + 0


def _ravel_of_written_view_then_write(a):
    v = a[::2]
    v *= 2
    w = v.ravel()
    a[...] = 7
    return w


def test_reshape_after_a_write_shows_later_writes():
    """A reshape of an argument after a write is a copy the trace makes where NumPy takes a
    view: a later write to the argument must show through it (NumPy) or run as Python."""
    for fn in (_ravel_then_write, _reshape_then_update, _ravel_of_written_view_then_write):
        assert_calls_match_numpy(fn, [(np.ones(()),), (np.ones(1),), (np.ones((2, 2)),),
                                      (np.ones((3, 2)),)])


def _ravel_after_write_read_only(a):
    a *= 2
    return a.ravel() + 1


def test_reshape_after_a_write_without_later_writes_compiles():
    assert_matches_numpy(_ravel_after_write_read_only, np.arange(6.0).reshape(2, 3))


def _self_assign_then_read(a):
    a[...] = a
    return a + 1


def _slice_self_assign_then_read(a, b):
    a[1:] = a[1:]
    return b


def _read_only(shape):
    return lambda: (np.broadcast_to(np.ones(1), shape),)


def _read_only_plain(shape):
    def make():
        a = np.ones(shape)
        a.flags.writeable = False
        return (a,)
    return make


def test_self_assignment_into_a_read_only_argument_raises():
    """``a[...] = a`` changes no value but is a write: NumPy raises ValueError for a
    read-only ``a`` (a broadcast view), 0-d or empty too."""
    calls = [_read_only((0, 0, 0)), _read_only((3,)), _read_only_plain(()),
             _read_only_plain((2, 3))]
    assert_calls_match_numpy(_self_assign_then_read, calls)
    assert_calls_match_numpy(_slice_self_assign_then_read,
                             [lambda: (np.broadcast_to(np.ones(1), (4,)), np.int64(-2))])


def test_self_assignment_into_a_writeable_argument_compiles():
    assert_matches_numpy(_self_assign_then_read, np.arange(6.0).reshape(2, 3)[:, ::-1])


_UINT32_UNDEFINED = [np.nan, -np.inf, np.inf, -2.0**31 - 1, 2.0**32 + 5, -1e10, 1e10, -3.5]


def _to_uint32(a):
    return a.astype(np.uint32), a[()].astype(np.uint32) + np.uint32(0)


def _integer_std(a):
    return np.std(a, dtype=np.uint32), np.var(a, dtype=np.uint32)


def test_one_element_float_to_uint32_cast_is_numpys_scalar_loop():
    """NumPy casts one element in its scalar loop (the low 32 bits of an int64
    ``cvttsd2si``: NaN -> 0, -2**31 - 1 -> 2**31 - 1), not its vector loop (NaN ->
    2**31): a 0-d cast, and std/var with an integer dtype (a NaN variance of no terms)."""
    for dtype in (np.float64, np.float32):
        for value in _UINT32_UNDEFINED:
            assert_matches_numpy(_to_uint32, np.array(value, dtype))
    assert_matches_numpy(_integer_std, np.array([], np.int64))
    assert_calls_match_numpy(_integer_std, [(np.array([], np.int64),),
                                            (np.array([1, 2, 5], np.int64),)])


def _write_paths(a):
    """Each write path into ``a`` (through views too), then a read so the trace compiles."""
    a.T[...] = a.T
    a[None] += 0
    np.add(a, 0, out=a)
    return a * 2


def test_every_write_path_into_a_read_only_argument_raises():
    assert_calls_match_numpy(_write_paths, [_read_only((3,)), _read_only_plain(()),
                                            _read_only_plain((2, 3)), (np.ones((2, 3)),)])


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.bool_])
def test_a_view_of_a_value_read_through_a_recomputed_node_waits_for_that_value(dtype):
    """``(a * 2)[1:2] * 1 - a``: the one-element product of the view is recomputed inside
    the subtraction's kernel, so that kernel reads the view: it must run after the kernel
    that stores ``a * 2`` (it ran in it, reading elements not yet written). Found by the
    fuzzer (seeds s50k:13561, s50k:14703)."""
    def shifted(a):
        return (a * 2)[1:2] * 1 - a

    def positive(a):
        return +(~a)[1:0:-1] - a if a.dtype != np.float64 else +(-a)[1:0:-1] - a

    def bools(a):
        v = np.isfinite(np.where(a, a, a)[..., None])
        return v[::-1] // v

    fns = (bools,) if dtype is np.bool_ else (shifted, positive)
    for fn in fns:
        calls = [(np.array([0, 5], dtype),), (np.array([0, 983907946]).astype(dtype).reshape(
            2, 1, 1),), (np.arange(7).astype(dtype),)]
        assert_calls_match_numpy(fn, calls)


@pytest.mark.parametrize(("fill", "dtype"), [(-5, np.uint64), (-1, np.uint8), (300, np.int8),
                                             (2**64, np.uint64), (3.7, np.int32),
                                             (float("nan"), np.int32), (-1.5, np.uint8),
                                             (True, np.float32)])
def test_full_converts_its_fill_value_as_numpy_does(fill, dtype):
    """np.full / np.full_like convert the fill value with copyto(casting="unsafe"): a Python
    int out of the dtype's range raises OverflowError, floats are cast (found by the fuzzer,
    seeds s50k:23357 and s50k:26011, where the array was not even used)."""
    def made(x):
        v = np.full((3, 2), fill, dtype=dtype)
        w = np.full_like(x, fill, dtype=dtype)
        return x + 1, v, w

    assert_calls_match_numpy(made, [(np.zeros(2),), (np.zeros((2, 3)),)])


@pytest.mark.parametrize("value", [1e-7, 0.1, 3.0, -2.5e30])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_of_a_python_float_converts_it_as_an_array_first(value, ddof):
    """``_var`` calls ``asanyarray`` first: a Python float is strong float64 there, so its
    deviation from a float32 mean is float64 (1e-7 - float32(1e-7) is not 0, and with
    ddof=1 NumPy divides it by 0: inf, not NaN). Seed pre1:2175."""
    assert_calls_match_numpy(lambda s: np.std(s, dtype=np.float32, ddof=ddof), [(value,)])
    assert_calls_match_numpy(lambda s: np.var(s, dtype=np.float32, ddof=ddof), [(value,)])


@pytest.mark.parametrize("view", [
    lambda a: np.expand_dims(np.squeeze(a), 1),          # 0-d: axis 1 is out of bounds
    lambda a: np.expand_dims(a, (0, 0)),
    lambda a: np.expand_dims(a, -4),
    lambda a: np.squeeze(a, axis=2),
    lambda a: np.squeeze(np.squeeze(a), axis=-1),        # 0-d: NumPy allows 0 and -1
    lambda a: np.moveaxis(a, 0, 5),
    lambda a: np.moveaxis(a, (0, 0), (1, 0)),
    lambda a: np.swapaxes(a, 0, 2),
    lambda a: np.swapaxes(a, 0, -3),
    lambda a: a.swapaxes(-1, -2) + 1,
])
def test_axis_arguments_of_views_are_checked_as_numpy_checks_them(view):
    """Out-of-bounds and repeated axes raise NumPy's AxisError / ValueError (they wrapped
    around: ``expand_dims`` of a 0-d value at axis 1 gave a (1,) view; seed final13:47391)."""
    assert_matches_numpy(view, np.zeros((1, 1)), compiled=False)


@pytest.mark.parametrize("make", [
    lambda: np.arange(14).reshape(7, 2)[..., ::2],       # (7, 1): a view would be possible
    lambda: np.arange(24).reshape(3, 8)[:, ::2],         # (3, 4): reshape views, ravel copies
    lambda: np.arange(24.0).reshape(4, 6).T,
    lambda: np.arange(12).reshape(3, 4),                 # C-contiguous: ravel is a view
])
def test_ravel_copies_every_array_that_is_not_c_contiguous(make):
    """np.ravel views only a C-contiguous array, reshape(-1) whenever the strides allow:
    a write after the ravel shows in it only for a C-contiguous argument (the ravel of a
    strided column saw the write; seed final13c:15399)."""
    def ravel_then_write(a):
        v = a.ravel()
        w = np.ravel(a)
        a[-1:] = 7
        return v, w

    def reshape_then_write(a):
        v = a.reshape(-1)
        a[-1:] = 7
        return v

    assert_calls_match_numpy(ravel_then_write, [(make(),), (make(),)])
    assert_calls_match_numpy(reshape_then_write, [(make(),)])
