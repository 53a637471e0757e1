"""Reductions against NumPy: every reduction × dtype family × axis form × keepdims × layout,
fused programs (mean of squares, softmax, layer norm, image normalisation) and their
kernel counts as shown by inspect."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

from tests.support.corpus import DTYPES, edge_values
from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy
from tests.support.programs import layer_norm, softmax

from autojit import FallbackWarning, autoroute
from autojit import config as autojit_config
from autojit.fuse.partition import memory_param
from autojit.fuse.traffic import kernel_traffic
from autojit.ir.ops import Op

REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
    "var": np.var, "std": np.std, "any": np.any, "all": np.all, "nansum": np.nansum,
    "nanmean": np.nanmean, "nanmax": np.nanmax, "nanmin": np.nanmin,
}
AXES = [None, 0, -1, (0, 2), (1,)]


def _data(dtype):
    values = edge_values(dtype, 60)
    if dtype.kind == "f":   # keep sums finite and meaningful; NaN placement matters
        values = np.where(np.isfinite(values) & (np.abs(values) < 1e3), values, 0.5)
        values[[3, 17]] = np.nan
    if dtype.kind in "iu":
        values = values % 5   # products stay small; float means of ±2**63 cancel arbitrarily
    return values.reshape(3, 4, 5).astype(dtype)


def _applicable(x, axis, keepdims):
    names = []
    for name, fn in REDUCTIONS.items():
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                result = np.asarray(fn(x, axis=axis, keepdims=keepdims))
        except (TypeError, ValueError):
            continue
        if result.dtype != np.float16:
            names.append(name)
    return names


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reductions_match_numpy(dtype, axis, keepdims):
    x = _data(dtype)
    names = _applicable(x, axis, keepdims)
    chosen = [REDUCTIONS[n] for n in names]

    def program(a):
        return tuple(fn(a, axis=axis, keepdims=keepdims) for fn in chosen)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_matches_numpy(program, x, labels=names)   # NumPy's order: bit for bit
        # float sums of a reversed view add in memory order: those run as Python
        assert_matches_numpy(program, x[:, ::-1, ::2], labels=names,
                             allowed_fallbacks=["in memory order"])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64"])
def test_argmax_argmin_first_occurrence_and_nan(dtype):
    x = _data(np.dtype(dtype))
    x[1, 2, 3] = x.max()
    assert_matches_numpy(lambda a: (np.argmax(a), np.argmin(a, axis=1), a.argmax(axis=-1),
                                    np.argmin(a, axis=0, keepdims=True)), x)


def test_dtype_argument_and_accumulator_dtypes():
    x = np.arange(-60, 60, dtype=np.int8).reshape(4, 30)
    assert_matches_numpy(lambda a: (a.sum(), a.sum(axis=1, dtype=np.int8),
                                    np.prod(a % 3, axis=1), a.mean(dtype=np.float32),
                                    (a > 0).sum(axis=0)), x, rtol=1e-6)


def test_empty_reductions():
    empty = np.ones((3, 0))
    assert_matches_numpy(lambda a: (a.sum(axis=1), a.sum(axis=0), a.prod(), a.any()), empty)
    f = autoroute(lambda a: a.max(axis=1))
    with pytest.raises(ValueError):
        f(empty)                       # NumPy raises: maximum of nothing
    np.testing.assert_array_equal(f(np.ones((3, 2))), np.ones(3))


def image_normalisation(img):
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    y = np.clip((img - mean) / std * 1.0123 - 0.02, 0, None) ** 1.8
    return np.mean((y - img) ** 2)


RNG = np.random.default_rng(3)
FUSED = [
    ("mean_of_squares", lambda x, y: np.mean((x - y) ** 2),
     (RNG.random(1000), RNG.random(1000)), 1),
    ("softmax", softmax, (RNG.random((6, 33), dtype=np.float32),), 1),
    ("layer_norm", layer_norm, (RNG.random((5, 64), dtype=np.float32),), 1),
    ("image_normalisation", image_normalisation, (RNG.random((2, 9, 7), dtype=np.float32),), 2),
    ("mean_and_std_share_a_pass", lambda x: (x.mean(axis=1), x.std(axis=1)),
     (RNG.random((4, 50)),), 1),
    ("min_and_max_share_a_pass", lambda x: (x.min(), x.max()), (RNG.random(500),), 1),
]


@pytest.mark.parametrize("name, fn, args, kernels", FUSED, ids=[f[0] for f in FUSED])
def test_fused_programs_match_numpy_with_few_kernels(name, fn, args, kernels):
    f = assert_matches_numpy(fn, *args, rtol=2e-5, atol=1e-6)
    assert len(f.inspect(*args).kernels) == kernels


def test_reduction_feeding_a_broadcast_without_keepdims():
    x = RNG.random((4, 4))
    assert_matches_numpy(lambda a: a.sum(axis=0) - a, x, rtol=1e-12)   # sums by column
    assert_matches_numpy(lambda a: a - a.sum(axis=1), x, rtol=1e-12)   # materialised


def test_value_dependent_branch_that_writes_compiles():
    """Issue 15: a branch on a reduction's value whose branch writes is a predicated write
    (it used to run as Python)."""
    def normalise(x):
        out = x.copy()
        if x.sum() > 0:          # a branch on the values that writes
            out[...] = x / x.sum()
        return out
    f = assert_calls_match_numpy(normalise, [(np.ones(4),), (-np.ones(4),)])
    assert f.stats()["routes"]["python"] == 0, f.stats()["fallbacks"]


def test_inspect_reports_each_kernels_traffic():
    x = np.ones((64, 32), dtype=np.float32)
    traffic = autoroute(softmax).inspect(x).traffic
    assert len(traffic) == 1
    # three passes over each row: max and sum read x, the last reads back exp(x - max),
    # which the second stored into the result (a spill: exp runs once per element)
    assert traffic[0].read_bytes == 3 * x.nbytes
    assert traffic[0].write_bytes == 2 * x.nbytes
    (mse,) = autoroute(lambda a, b: np.mean((a - b) ** 2)).inspect(np.ones(100),
                                                                  np.ones(100)).traffic
    assert (mse.read_bytes, mse.write_bytes) == (1600, 8)


def image_normalisation_and_error(img):
    """The issue's per-image normalisation: the normalised stack and its MSE to the input."""
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    y = np.maximum((img - mean) / std * 1.0123 - 0.02, 0) ** 1.8
    return y, np.mean((y - img) ** 2)


def _bytes_read_from(ins, param: int) -> int:
    """Bytes all kernels of a plan load from argument ``param``'s memory (views included)."""
    total = 0
    for kernel in ins.plan.kernels:
        own = {b for b, buf in enumerate(kernel.buffers)
               if not buf.is_output and memory_param(ins.plan.graph, buf.value) == param}
        body = tuple(i for i in kernel.body if i.op is not Op.LOAD or i.attr in own)
        total += kernel_traffic(replace(kernel, body=body), ins.sizes).read_bytes
    return total


def test_per_image_normalisation_reads_its_input_three_times():
    """NumPy's two-pass variance (mean, then squared deviations) in one kernel of three
    phases, then the normalise pass: the input is read three times, never more."""
    x = RNG.random((3, 40, 24), dtype=np.float32) * 255
    f = assert_matches_numpy(image_normalisation_and_error, x, rtol=2e-5, atol=1e-4)
    ins = f.inspect(x)
    assert _bytes_read_from(ins, 0) <= 3 * x.nbytes
    assert [k.phases for k in ins.plan.kernels] == [3, 1]     # mean, var, normalise


def test_layer_norm_is_one_kernel_of_numpy_s_three_passes_over_each_row():
    """mean, NumPy's two-pass variance (squared deviations from that mean), normalise."""
    x = RNG.random((16, 64), dtype=np.float32)
    (traffic,) = autoroute(layer_norm).inspect(x).traffic
    assert traffic.passes == 3
    assert traffic.read_bytes <= 3 * x.nbytes


@pytest.mark.parametrize("empty_first", [False, True])
def test_variance_of_empty_rows_is_numpy_s_nan(empty_first):
    shapes = [(3, 0), (0, 4), (2, 5)]
    for shape in shapes[::-1] if not empty_first else shapes:
        x = np.full(shape, 7.25, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error", FallbackWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_matches_numpy(lambda a: a.var(axis=1), x)   # constant rows: exactly 0


def test_a_wide_sum_after_a_row_reduction_rides_along_its_pass():
    """sum over (B,H,W) of a value computed from per-image statistics: per-image partial
    sums in the statistics kernel, then a B-element kernel (no (B,H,W) temporary). Integer
    sums only: a float sum keeps NumPy's one pairwise run over (B,H,W)."""
    x = RNG.integers(-50, 50, (4, 6, 5))
    fn = lambda a: np.sum((a - a.max(axis=(1, 2), keepdims=True)) ** 2)   # noqa: E731
    f = assert_matches_numpy(fn, x)
    ins = f.inspect(x)
    assert len(ins.kernels) == 2
    assert ins.traffic[0].write_bytes == 4 * 8               # the four per-image partials,
    assert ins.traffic[1].read_bytes == 4 * 8                # not a (4, 6, 5) temporary


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 3])
def test_vectorised_max_min_keep_numpy_s_last_zero_and_nan(dtype, threads):
    """float max/min reduce through llvm.maximum/minimum (vectorised) plus a last-zero code:
    a zero result still has the sign of the row's last zero, as NumPy's has, also when
    the row is cut into thread chunks."""
    rng = np.random.default_rng(11)
    rows = np.zeros((9, 301), dtype)
    rows[0] = -rng.random(301)                      # negative: max is a zero only if present
    rows[0, [5, 200]] = [0.0, -0.0]                 # last zero is -0
    rows[1] = -rows[0]
    rows[1, [7, 250]] = [-0.0, 0.0]                 # last zero is +0
    rows[2] = np.where(rng.random(301) < 0.5, 0.0, -0.0)
    rows[3] = rng.random(301)
    rows[3, 99] = np.nan                            # NaN wins
    rows[4] = -np.inf
    rows[5] = rng.standard_normal(301)
    rows[6, :] = -0.0
    rows[7] = np.where(rng.random(301) < 0.5, 0.0, -0.0)
    rows[7, -1] = -0.0
    rows[8] = np.where(rng.random(301) < 0.5, 0.0, -0.0)
    rows[8, -1] = 0.0
    with autojit_config(num_threads=threads, thread_min_work=0):
        assert_matches_numpy(lambda a: (a.max(axis=1), a.min(axis=1), a.max(), a.min(),
                                        a[2].max(), a[1:3].min()), rows)


def test_softmax_computes_exp_once_per_element():
    """The last phase reloads exp(x - max) from the result's memory instead of recomputing
    it; the result is still NumPy's (within the exp ULP bound) on odd shapes and strides."""
    f = autoroute(softmax)
    x = RNG.standard_normal((7, 33, 129)).astype(np.float32)[:, ::2, 1:]
    kernel = f.inspect(np.ascontiguousarray(x)).plan.kernels[0]
    assert sum(ins.op is Op.EXP for ins in kernel.body) == 1
    assert len(kernel.aliased_buffers) == 2          # the spill and the result: no noalias
    for args in ((x,), (x[0],), (np.float64(3.0) * x[:, :1],), (np.ascontiguousarray(x),)):
        assert_matches_numpy(softmax, *args, rtol=2e-6, atol=1e-9,
                             allowed_fallbacks=["in memory order"])   # strided: as Python
    with autojit_config(num_threads=3, thread_min_work=0):
        assert_matches_numpy(softmax, RNG.random((3, 5000)), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("axis", [0, -1])
def test_ufunc_reductions_of_a_0d_array_take_axis_0_like_numpy(axis):
    """NumPy's ufunc reductions accept axis 0 or -1 on a 0-d array (a reduction over
    nothing); mean and var do not, and raise AxisError there as NumPy does."""
    x = np.array(2.5)
    assert_matches_numpy(lambda a: (np.sum(a, axis=axis), np.max(a, axis=axis),
                                    np.any(a, axis=axis), np.argmax(a, axis=axis),
                                    np.prod(a, axis=axis, keepdims=True)), x)
    assert_matches_numpy(lambda a: np.mean(a, axis=axis), x)    # AxisError on both sides


def _max_reduces_blind(fn, *args) -> list[bool]:
    """For every float max/min REDUCE of ``fn``'s kernels: whether its zero sign is blind."""
    from autojit.ir.zero_sign import zero_sign_blind
    found = []
    for kernel in autoroute(fn).inspect(*args).plan.kernels:
        blind = zero_sign_blind(kernel)
        found += [ins.id in blind for ins in kernel.body
                  if ins.op is Op.REDUCE and ins.attr in ("max", "min")]
    return found


def _signed_zero_rows(dtype):
    rows = np.where(RNG.random((6, 67)) < 0.5, 0.0, -0.0).astype(dtype)
    rows[1, 3] = -1.0
    rows[2] = -np.abs(RNG.standard_normal(67))
    rows[2, [4, 60]] = [0.0, -0.0]
    rows[3, 10] = np.nan
    rows[4] = -np.inf
    return rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_max_only_seen_through_exp_drops_its_zero_sign_bookkeeping(dtype):
    """Softmax's row max feeds only ``exp(x - max)``, which is the same for +0 and -0, so
    the vectorised max keeps no last-zero code; where a store or a divisor can see the
    sign, the code stays. Results match NumPy on signed zeros, NaN and -inf rows either way."""
    rows = _signed_zero_rows(dtype)
    assert _max_reduces_blind(softmax, rows) == [True]
    sees_sign = {
        "stored": lambda a: a.max(axis=1),
        "plus one": lambda a: a.max(axis=1) + 0.0,
        "divisor": lambda a: 1.0 / a.min(axis=1, keepdims=True) + a,
        "sqrt": lambda a: np.sqrt(a.max(axis=1)),
    }
    blind = {
        "exp": lambda a: np.exp(a - a.max(axis=1, keepdims=True)),
        "compare": lambda a: a >= a.max(axis=1, keepdims=True),
        "cos": lambda a: np.cos(a.min(axis=1)),
        "abs": lambda a: np.abs(a.max(axis=1)),
    }
    for name, fn in {**sees_sign, **blind}.items():
        assert _max_reduces_blind(fn, rows) == [name in blind], name
        with np.errstate(all="ignore"):
            assert_matches_numpy(fn, rows, ulps=4)    # exp and cos: libmvec's bound
    assert_matches_numpy(softmax, rows, rtol=2e-6, atol=1e-12)
