"""Float sums and products of C-ordered strided arguments (slices of C arrays, reversed
ones) compile and give NumPy's bits: the signature's layout class says their axes run in
C order, and NumPy's reduction iterator walks such arrays in C index order (it does not
flip reversed axes); only a sum over several axes may split into pairwise runs
differently (where the axes are not adjacent in memory). Transposed, Fortran-ordered and
broadcast arguments still run their float sums as Python."""

import itertools
import warnings

import numpy as np
import pytest

from tests.cpu.lowering.test_reduction_order import REDUCTIONS as SUM_REDUCTIONS
from tests.support.oracle import assert_calls_match_numpy, compare_results

from autojit import autoroute
from autojit.dispatch.signature import c_ordered_strided, describe_argument, signature_of
from autojit.fuse.plan import pairwise_block

RNG = np.random.default_rng(20261202)


def _spread(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Values over many magnitudes, so any other order rounds differently."""
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-10**15, 10**15, shape)
    values = RNG.standard_normal(shape) * 10.0 ** RNG.integers(-4, 5, shape)
    return values.astype(dtype)


def _row_order_sensitive(shape: tuple[int, int]) -> np.ndarray:
    """A float64 array whose x[:, ::2].sum() differs from that of its C copy."""
    for _ in range(50):
        x = _spread(shape, np.float64)
        if _bits(x[:, ::2].sum()) != _bits(x[:, ::2].copy().sum()):
            return x
    raise AssertionError("no order-sensitive draw")


def _bits(value) -> tuple:
    value = np.asarray(value)
    return value.dtype, value.shape, value.tobytes()


#: NumPy's float reductions as autojit traces them (each sums or multiplies its argument):
#: test_reduction_order's, and the product
REDUCTIONS = {**SUM_REDUCTIONS, "prod": lambda a, axis: np.prod(a, axis=axis)}
SLICES = [slice(None), slice(None, None, 2), slice(1, None), slice(None, None, -1),
          slice(None, -1, 3)]
SHAPES = {2: [(6, 40), (3, 20000), (20000, 3), (129, 257)],
          3: [(3, 5, 7), (2, 130, 3), (4, 1, 300), (5, 3, 2000)]}
AXES = {2: [None, 0, 1], 3: [None, 0, 1, 2, (0, 1), (1, 2), (0, 2)]}


def _single_run(shape: tuple[int, ...], axis) -> bool:
    """Whether NumPy's pairwise run of a sum over ``axis`` is at most one axis."""
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) % len(shape)
    return len(pairwise_block(shape, tuple(int(a) for a in axes))) <= 1


@pytest.mark.parametrize("ndim", [2, 3])
def test_numpy_reduces_c_ordered_strided_arrays_like_their_c_copies(ndim):
    """The experiment the layout class rests on (pure NumPy): for every slice of a C
    array (steps of any sign), a product, and a sum whose pairwise run is one axis, has
    the bits of the same reduction of its C-contiguous copy. Some sums over several
    trailing axes differ (NumPy's pairwise runs follow the memory): those must not compile."""
    merged_differ = 0
    for key in itertools.product(SLICES, repeat=ndim):
        for shape, dtype in itertools.product(SHAPES[ndim], [np.float32, np.float64, np.int64]):
            view = _spread(shape, dtype)[key]
            if view.size == 0:
                continue
            assert c_ordered_strided(view.shape, view.strides) or view.flags.c_contiguous
            copy = np.ascontiguousarray(view)
            for (name, fn), axis in itertools.product(REDUCTIONS.items(), AXES[ndim]):
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    same = _bits(fn(view, axis)) == _bits(fn(copy, axis))
                if name == "prod" or _single_run(view.shape, axis):
                    assert same, (key, shape, dtype, name, axis)
                merged_differ += not same
    assert merged_differ   # several-axis runs do differ: they must not compile


def test_numpy_reduces_broadcast_arrays_in_another_order():
    """Broadcast (stride 0) arrays are not C-ordered strided: NumPy's nansum copies them
    in memory order ('K'), which sums over one axis differently from the C copy."""
    x = _spread((40, 1, 300), np.float64)
    view = np.broadcast_to(x, (40, 8, 300))
    assert not c_ordered_strided(view.shape, view.strides)
    assert _bits(np.nansum(view, axis=1)) != _bits(np.nansum(view.copy(), axis=1)) or \
        _bits(np.nansum(view, axis=0)) != _bits(np.nansum(view.copy(), axis=0))


def test_signature_layout_classes():
    """C-contiguous, C-ordered strided and other layouts are three signatures, so a plan
    compiled for one never runs for another (the disk cache keys the signature's repr)."""
    x = np.zeros((4, 6))
    layouts = {"C": x, "C-strided": x[:, ::2], "strided": x.T}
    keys = {name: signature_of((a,)) for name, a in layouts.items()}
    assert {describe_argument(k[0]) for k in keys.values()} == {
        f"float64[2d,{name}]" for name in layouts}
    assert len({repr(k) for k in keys.values()}) == 3
    for view in (x[1:, :-1], x[::-1], x[::-2, ::3], x[2], x[:, 1], x[:1, ::2]):
        assert c_ordered_strided(view.shape, view.strides)
    for view in (x.T, np.asfortranarray(x), np.broadcast_to(x[:1], x.shape),
                 np.broadcast_to(x[:, :1], x.shape), x[:, None, :].swapaxes(0, 2)):
        assert not view.flags.c_contiguous and not c_ordered_strided(view.shape, view.strides)


def _layouts(shape: tuple[int, ...], dtype) -> dict[str, np.ndarray]:
    big = _spread((shape[0] * 2 + 1, shape[1] * 3 + 2), dtype)
    return {"C": _spread(shape, dtype), "step": big[1::2, ::3][:shape[0], :shape[1]],
            "sliced": big[1:shape[0] + 1, 2:shape[1] + 2], "reversed": big[::-1, ::-1][:shape[0]],
            "F": np.asfortranarray(_spread(shape, dtype)), "T": _spread(shape[::-1], dtype).T,
            "broadcast": np.broadcast_to(_spread((1, shape[1]), dtype), shape)}


#: not C-ordered: their float sums run as Python (and must still be NumPy's)
OTHER = {"F", "T", "broadcast"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_axis_reductions_of_strided_arguments_compile_bit_exact(dtype):
    """sum/mean/var/prod over one axis (and a prod over all) with the layout changing
    between calls: C-ordered ones compile, the others fall back, all NumPy's bits."""
    def fn(a):
        return (a.sum(axis=-1), a.mean(axis=0), a.var(axis=1), np.std(a, axis=0, ddof=1),
                np.prod(1 + a / 1e4))

    order = ["C", "step", "F", "sliced", "reversed", "T", "C", "broadcast", "step"]
    calls = []
    for shape in [(7, 300), (130, 9), (3, 20001)]:
        layouts = _layouts(shape, dtype)
        calls += [(layouts[name],) for name in order]
    jitted = assert_calls_match_numpy(fn, calls)
    routes = jitted.stats()["routes"]
    assert routes["python"] == 3 * sum(name in OTHER for name in order)
    assert routes["cpu"] == 3 * sum(name not in OTHER for name in order)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_buffered_sums_of_strided_arguments_compile_bit_exact(dtype):
    """Sums with a cast (float32 sums of float64, float means of ints) add in NumPy's
    8192-element buffer chunks along the row, strided or not."""
    order = ["C", "step", "sliced", "reversed", "F"]
    calls = [(_layouts(shape, dtype)[name],) for shape in [(3, 20001), (300, 9)]
             for name in order]
    jitted = assert_calls_match_numpy(lambda a: a.sum(axis=1, dtype=np.float32), calls)
    assert jitted.stats()["routes"]["python"] == 2
    jitted = assert_calls_match_numpy(lambda a: a.mean(axis=-1), calls)
    assert jitted.stats()["routes"]["python"] == 2


def test_one_dimensional_strided_sums_compile_bit_exact():
    x = _spread((50001,), np.float64)
    calls = [(x,), (x[::2],), (x[::-1],), (x[3:-7:5],), (x[::-3],), (x[:9000],)]
    jitted = assert_calls_match_numpy(lambda a: (a.sum(), a.mean(), a.var(), a.prod()), calls)
    assert not jitted.stats()["fallbacks"]


def test_sums_of_several_axes_of_strided_arguments_fall_back_to_numpy_s_answer():
    """x[:, ::2].sum(): how NumPy splits a sum over several axes of a strided array into
    pairwise runs depends on its strides and sizes (axes adjacent in memory merge), not
    only on the layout class, and may differ from the C copy's one run: Python runs it."""
    x = _row_order_sensitive((129, 257))
    calls = [(x,), (x[:, ::2],), (x[::-1],), (x[:, 1:],), (x,)]
    jitted = assert_calls_match_numpy(lambda a: (a.sum(), a.mean(), a.var(axis=None)), calls)
    assert jitted.stats()["routes"] == {"cpu": 2, "gpu": 0, "python": 3}
    assert "several axes of a strided array" in jitted.stats()["fallbacks"][0]


def test_strided_views_inside_the_function_compile():
    """Slices taken inside the function are C-ordered strided too."""
    x = _spread((60, 301), np.float64)
    jitted = assert_calls_match_numpy(
        lambda a: (a[:, ::2].sum(axis=-1), a[::-1, 1:].mean(axis=0), a[1:, ::3].prod(),
                   (a[:, ::2] * 2.0).sum()),
        [(x,), (x[::2],), (_spread((9, 40), np.float64),)])
    assert not jitted.stats()["fallbacks"]


def test_the_fast_path_tells_the_layout_classes_apart():
    """Calls alternating between layouts, many times (the native fast path answers most):
    a plan for C arrays must never read a strided one, nor one for C-ordered strided
    arrays a transposed one (NumPy adds its rows one element after another)."""
    x = _spread((40, 40), np.float64)
    views = [x, x[:, ::2], x.T, x[::-1, ::-1], x[:, 1:], x[::2]]
    assert _bits(x.T.sum(axis=-1)) != _bits(x.T.copy().sum(axis=-1))
    rows = autoroute(lambda a: (a.sum(axis=-1), a.mean(axis=0)), force="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(30):
            for view in views:
                compare_results(rows(view), (view.sum(axis=-1), view.mean(axis=0)))
    assert rows.stats()["routes"]["python"] == 30          # only x.T
    assert rows.stats()["fast_calls"] > 100


def _row_sums(a):
    return a.sum(axis=-1)


def test_the_disk_cache_keeps_one_version_per_layout_class(tmp_path):
    """A version stored for C-ordered strided arguments is found again for them only: a
    C array and a transposed one miss (other signatures), and every answer is NumPy's."""
    import autojit

    x = _spread((30, 41), np.float64)
    counts = []
    with autojit.config(cache_dir=str(tmp_path / "cache")), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for view in (x[:, ::2], x, x.T, x[::-1, 1:], x):
            fresh = autoroute(_row_sums, force="cpu")
            compare_results(fresh(view), view.sum(axis=-1))
            stats = fresh.stats()
            counts.append((stats["disk_hits"], stats["routes"]["python"]))
    assert counts == [(0, 0), (0, 0), (0, 1), (1, 0), (1, 0)]
