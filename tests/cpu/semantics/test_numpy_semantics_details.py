"""Per-op NumPy details that only special values show: zero signs and NaN signs of
maximum/minimum/fmax/fmin/clip (on the CPU and through the CUDA C emulation), dtype=
arguments of var/std/mean, astype's casting= and copy=, FP error state, product order and
the libm functions the JIT binds.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy, assert_same_value

from autojit import autoroute
from autojit.fuse.builder import KernelBuilder
from autojit.ir.ops import Op

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
INTS = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64",
                                   "uint8", "uint16", "uint32", "uint64"))


def special_values(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """NaN of both signs, ±inf, ±0, subnormals, extremes, and a few seeded ordinary values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind == "f":
        fi = np.finfo(dtype)
        values = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, fi.smallest_subnormal,
                  -fi.smallest_subnormal, fi.tiny, fi.max, -fi.max, 1.0, -1.0]
        values += list(rng.standard_normal(3))
        return np.array(values).astype(dtype)
    ii = np.iinfo(dtype)
    values = [ii.min, ii.max, 0, 1, ii.max - 1] + ([-1] if dtype.kind == "i" else [])
    values += list(rng.integers(ii.min, ii.max, 3, dtype=dtype, endpoint=True))
    return np.array([int(v) for v in values], dtype=dtype)


def vector_loop_answer(ufunc: np.ufunc, *operands: np.ndarray) -> np.ndarray:
    """NumPy's answer where its vector loop computes every element: on operands broadcast
    and padded to a multiple of 64 elements. fmax/fmin ties (0.0 vs -0.0) are answered by
    position in NumPy (its scalar remainder loop differs from its vector loop)."""
    columns = [np.ascontiguousarray(c) for c in np.broadcast_arrays(*operands)]
    size = columns[0].size
    padded = [np.concatenate([c, np.resize(c, -size % 64 or 64)]) for c in columns]
    return ufunc(*padded)[:size]


def _pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(values, values.size), np.tile(values, values.size)


# -- maximum / minimum / fmax / fmin ----------------------------------------------------
@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS, np.dtype(bool)), ids=str)
def test_maximum_minimum_match_numpy_on_special_values(ufunc: np.ufunc,
                                                        dtype: np.dtype) -> None:
    rng = np.random.default_rng(15)
    a, b = _pairs(special_values(dtype, rng))
    assert_matches_numpy(lambda x, y: ufunc(x, y), a, b)
    assert_matches_numpy(lambda x, y: ufunc(x, y), a[::-1].copy(), b)   # other length
    for scalar in special_values(dtype, rng)[:6]:
        assert_matches_numpy(lambda x, s: (ufunc(x, s), ufunc(s, x)), a, scalar)


@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS, np.dtype(bool)), ids=str)
def test_fmax_fmin_follow_numpys_vector_loop_in_every_position(ufunc: np.ufunc,
                                                               dtype: np.dtype) -> None:
    rng = np.random.default_rng(16)
    a, b = _pairs(special_values(dtype, rng))
    fn = autoroute(lambda x, y: ufunc(x, y), force="cpu")
    assert_same_value(fn(a, b), vector_loop_answer(ufunc, a, b))
    assert_same_value(fn(b, a), vector_loop_answer(ufunc, b, a), label="swapped")
    for scalar in special_values(dtype, rng)[:6]:
        first, second = autoroute(lambda x, s: (ufunc(x, s), ufunc(s, x)), force="cpu")(a, scalar)
        assert_same_value(first, vector_loop_answer(ufunc, a, scalar), label="array, scalar")
        assert_same_value(second, vector_loop_answer(ufunc, scalar, a), label="scalar, array")


# -- clip -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS), ids=str)
def test_clip_with_scalar_bounds_matches_numpy_for_every_bound_pair(dtype: np.dtype) -> None:
    rng = np.random.default_rng(17)
    values = special_values(dtype, rng)
    x = np.concatenate([values, values[::-1]])
    bounds = list(itertools.product(values[:9], repeat=2))
    assert_calls_match_numpy(lambda a, lo, hi: np.clip(a, lo, hi),
                             [(x, lo, hi) for lo, hi in bounds])
    assert_calls_match_numpy(lambda a, lo, hi: np.clip(a, lo, hi),
                             [(x[::2], np.array(lo), hi) for lo, hi in bounds[:12]])


@pytest.mark.parametrize("dtype", (*FLOATS, *INTS), ids=str)
def test_clip_with_array_bounds_matches_numpy_in_every_position(dtype: np.dtype) -> None:
    rng = np.random.default_rng(18)
    values = special_values(dtype, rng)
    x, lo, hi = (np.array(c) for c in zip(*itertools.product(values, repeat=3)))
    assert_matches_numpy(lambda a, low, high: np.clip(a, low, high), x, lo, hi)
    assert_matches_numpy(lambda a, low, high: np.clip(a, low, high), x[0], lo, hi)
    rows = x[: x.size // 4 * 4].reshape(-1, 4)
    assert_matches_numpy(lambda a, low: np.clip(a, low, values[3]), rows, rows[:, ::-1].copy())


def test_clip_keeps_the_zero_of_x_when_it_ties_a_scalar_bound() -> None:
    assert_matches_numpy(lambda a, lo, hi: np.clip(a, lo, hi), np.array([-0.0, 0.0]), 0.0, 4.5)
    assert_matches_numpy(lambda a: np.clip(a, -0.0, 0.0), np.array([-0.0, 0.0, np.nan]))


@pytest.mark.parametrize("low_shape, high_shape, x_shape", [
    ((1,), (1, 1), (3, 4)), ((3, 1), (3, 1), (1, 4)), ((3, 1), (3, 1), (4,))])
def test_clip_with_bound_shapes_numpy_decides_by_its_iterator_runs_as_python(
        low_shape: tuple, high_shape: tuple, x_shape: tuple) -> None:
    """NumPy picks its loop there by its buffering setup: compiled, it falls back."""
    fn = autoroute(lambda a, lo, hi: np.clip(a, lo, hi), force="cpu")
    x = np.full(x_shape, -0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(x, np.zeros(low_shape), np.ones(high_shape))
    assert_same_value(got, np.clip(x, np.zeros(low_shape), np.ones(high_shape)))
    assert fn.stats()["fallbacks"]


# -- the same rules in the CUDA C renderer (g++ emulation) --------------------------------
_EXTREMA = {Op.MAXIMUM: np.maximum, Op.MINIMUM: np.minimum, Op.FMAX: np.fmax,
            Op.FMIN: np.fmin}


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ runs the CUDA C emulation")
@pytest.mark.parametrize("dtype", (*FLOATS, np.dtype(np.int16), np.dtype(np.uint64)), ids=str)
def test_cuda_renderer_matches_numpy_on_extrema_and_clip(dtype: np.dtype) -> None:
    from autojit.lower_gpu import render_cuda, run_emulated

    rng = np.random.default_rng(19)
    values = special_values(dtype, rng)
    x, lo, hi = (np.array(c) for c in zip(*itertools.product(values, repeat=3)))
    kb = KernelBuilder(f"extrema_{dtype.name}", (("n",),))
    a, b, c = (kb.load(kb.add_buffer(name, dtype, (1,))) for name in ("a", "b", "c"))
    s, t = (kb.load_scalar(kb.add_scalar(name, dtype)) for name in ("s", "t"))
    expected: list[np.ndarray] = []

    def output(name: str, value: int, want: np.ndarray) -> None:
        kb.store(kb.add_buffer(name, dtype, (1,), is_output=True), value)
        expected.append(want)

    for op, ufunc in _EXTREMA.items():
        output(f"{op.value}_ab", kb.graph_op(op, (a, b), dtype), vector_loop_answer(ufunc, x, lo))
        output(f"{op.value}_ba", kb.graph_op(op, (b, a), dtype), vector_loop_answer(ufunc, lo, x))
    output("clip", kb.graph_op(Op.CLIP, (a, b, c), dtype), np.clip(x, lo, hi))
    output("clip_k", kb.graph_op(Op.CLIP, (a, s, t), dtype, {"constant_bounds": True}),
           np.clip(x, values[4], values[5]))
    kernel = kb.finish()
    outputs = [np.zeros_like(x) for _ in expected]
    run_emulated(kernel, render_cuda(kernel), [x, lo, hi, *outputs], (values[4], values[5]),
                 {"n": x.size})
    for name, got, want in zip([buf.name for buf in kernel.buffers[3:]], outputs, expected):
        assert_same_value(got, want, label=name)


# -- dtype= of reductions ---------------------------------------------------------------
_REDUCTION_DTYPES = (np.bool_, np.int16, np.uint64, np.float32, np.float64)
_REDUCTIONS = {"mean": np.mean, "var": np.var, "std": np.std, "nanmean": np.nanmean,
               "nansum": np.nansum, "sum": np.sum, "prod": np.prod}


@pytest.mark.parametrize("name", _REDUCTIONS)
@pytest.mark.parametrize("source", _REDUCTION_DTYPES, ids=lambda d: np.dtype(d).name)
def test_reduction_dtype_argument_matches_numpy_for_every_kind(name: str, source: type) -> None:
    """NumPy's answer or exception (std of an integer variance array: sqrt's same_kind
    UFuncTypeError; nanmean of floats into a non-float dtype: TypeError), for every dtype=.
    float32 var/std are excluded: their one-pass form is documented as not bit-exact."""
    x = (np.arange(6).reshape(3, 2) % 4).astype(source)
    reduction = _REDUCTIONS[name]
    for dtype, axis in itertools.product((*_REDUCTION_DTYPES, None), (None, 0)):
        if name in ("var", "std") and np.dtype(dtype or source) == np.float32 and \
                np.dtype(source) == np.float32:
            continue
        assert_matches_numpy(lambda a, d=dtype, ax=axis: reduction(a, axis=ax, dtype=d), x,
                             compiled=False)


def test_std_into_an_integer_dtype_raises_like_numpy_for_arrays_and_converts_scalars() -> None:
    x = np.arange(6.0).reshape(3, 2)
    assert_matches_numpy(lambda a: np.std(a, axis=0, dtype=np.int16), x)
    assert_matches_numpy(lambda a: a.std(axis=0, dtype=np.uint64), x.astype(np.int64))
    assert_matches_numpy(lambda a: a.std(dtype=np.int64, keepdims=True), x)
    assert_matches_numpy(lambda a: a.std(dtype=np.int16), x)


def test_sum_into_bool_is_a_logical_or() -> None:
    x = np.array([[0, 1], [2, 3], [0, 0]], np.int64)
    assert_matches_numpy(lambda a: (a.sum(axis=1, dtype=bool), a.prod(axis=0, dtype=bool),
                                    np.sum(a, dtype=bool), np.mean(a, axis=1, dtype=bool)), x)


# -- astype(casting=, copy=) -----------------------------------------------------------
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


@pytest.mark.parametrize("source", _REDUCTION_DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype_casting_follows_can_cast(source: type) -> None:
    """A cast NumPy refuses under the rule raises its TypeError; an allowed one casts."""
    x = special_values(np.dtype(source), np.random.default_rng(20))
    for target, casting in itertools.product(_REDUCTION_DTYPES, _CASTINGS):
        assert_matches_numpy(lambda a, t=target, c=casting: a.astype(t, casting=c), x,
                             compiled=np.can_cast(x.dtype, target, casting))


def test_astype_without_copy_returns_the_array_itself_when_nothing_changes() -> None:
    def convert(a):
        return a.astype(a.dtype, copy=False), a.astype(np.float32, copy=False), a.astype(a.dtype)

    x = np.arange(4.0)
    same_dtype, other, copied = autoroute(convert, force="cpu")(x)
    assert same_dtype is x
    assert not np.shares_memory(other, x) and not np.shares_memory(copied, x)
    assert_matches_numpy(convert, x)


# -- float -> integer casts outside the range (x86's answers, which NumPy returns) ------
_OUT_OF_RANGE = [np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 1e20, -1e20, 70000.0,
                 -70000.0, 300.0, -300.0, -1.0, -0.7, 2.0**63, 2.0**64, -(2.0**63), 2.0**31,
                 2.0**32 - 1, -(2.0**31) - 0.5, 4e9]


def _out_of_range(dtype: np.dtype) -> np.ndarray:
    """The values, 64 copies each: NumPy's vector loop converts every element."""
    return np.repeat(np.array(_OUT_OF_RANGE).astype(dtype), 64)


@pytest.mark.parametrize("source", FLOATS, ids=str)
def test_float_to_integer_casts_out_of_range_match_numpy(source: np.dtype) -> None:
    """uint32 is NumPy's scalar loop (its SIMD loop's answer depends on the position; see
    test_cast_out_of_range.py): checked there and against that loop below."""
    x = _out_of_range(source)
    for target in INTS:
        if target == np.uint32:
            got = autoroute(lambda a: a.astype(np.uint32), force="cpu")(x)
            assert_same_value(got, _scalar_loop_cast(x, target))
            continue
        assert_matches_numpy(lambda a, t=target: a.astype(t), x)
        assert_matches_numpy(lambda a, t=target: (a * 1).astype(t)[::64], x)


def _scalar_loop_cast(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """NumPy's scalar-loop answer for every element (a strided view is cast element-wise)."""
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(np.stack([x, x], axis=-1)[..., 0].astype(target))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ runs the CUDA C emulation")
@pytest.mark.parametrize("source", FLOATS, ids=str)
def test_cuda_renderer_casts_out_of_range_floats_like_numpy(source: np.dtype) -> None:
    from autojit.lower_gpu import render_cuda, run_emulated

    x = _out_of_range(source)
    kb = KernelBuilder(f"casts_{source.name}", (("n",),))
    a = kb.load(kb.add_buffer("a", source, (1,)))
    for target in INTS:
        kb.store(kb.add_buffer(f"to_{target.name}", target, (1,), is_output=True),
                 kb.cast(a, target))
    kernel = kb.finish()
    outputs = [np.zeros(x.size, target) for target in INTS]
    run_emulated(kernel, render_cuda(kernel), [x, *outputs], (), {"n": x.size})
    for target, got in zip(INTS, outputs):
        assert_same_value(got, _scalar_loop_cast(x, target), label=target.name)


# -- libm binding -----------------------------------------------------------------------
_FOREIGN_LIBM = textwrap.dedent("""
    import ctypes, sys
    import numpy as np
    import llvmlite.binding as llvm
    from autojit import autoroute

    # What Numba does once it has compiled anything: its own libm names in LLVM's table.
    # Here they answer 42, so a kernel bound to them is seen at once.
    foreign = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lambda v: 42.0)
    foreignf = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(lambda v: 42.0)
    for name in ("log", "log1p", "expm1", "acosh", "log10", "sin", "exp"):
        llvm.add_symbol(name, ctypes.cast(foreign, ctypes.c_void_p).value)
        llvm.add_symbol(name + "f", ctypes.cast(foreignf, ctypes.c_void_p).value)

    def fn(a):
        return (np.log(a), np.log1p(a), np.expm1(a), np.arccosh(a), np.log10(a), np.sin(a),
                np.exp(a))

    compiled = autoroute(fn, force="cpu")
    for dtype in (np.float64, np.float32):
        for size in (3, 1001):
            x = np.linspace(1.5, 9.0, size).astype(dtype)
            for got, want in zip(compiled(x), fn(x)):
                assert not np.any(got == 42.0), "bound to the foreign libm"
                np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)
    print(compiled.stats()["disk_hits"], "ok")
""")


@pytest.mark.parametrize("numba_first", [False, True])
def test_kernels_call_glibc_libm_whatever_llvm_symbol_table_holds(tmp_path, numba_first):
    """Compiled fresh, then loaded from the disk cache in a new process (the ELF loader),
    with other definitions of log & co in LLVM's symbol table (and, optionally, after a
    Numba compile, which installs its own)."""
    prelude = ""
    if numba_first:
        pytest.importorskip("numba")
        prelude = ("import numba, numpy\n"
                   "numba.njit(lambda v: numpy.log(v) + numpy.log1p(v))(1.0)\n")
    env = {**os.environ, "AUTOJIT_CACHE_DIR": str(tmp_path)}
    for run in ("compile", "load"):
        done = subprocess.run([sys.executable, "-c", prelude + _FOREIGN_LIBM], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{run}: {done.stderr[-3000:]}"
        disk_hits, answer = done.stdout.split()[-2:]
        assert answer == "ok" and (int(disk_hits) > 0) == (run == "load"), done.stdout


# -- products in NumPy's order ------------------------------------------------------------
def test_float_product_overflowing_after_a_zero_stays_zero() -> None:
    values = np.array([[1, 10, 4, 4294967294, 7, 4294967294, 0, 4294967295, 0, 8, 5,
                        2147483648, 0, 1, 4294967295, 2147483648, 2147483648]], np.uint32)
    assert_matches_numpy(lambda a: np.prod(a, axis=(1, 0), dtype=np.float32), values)
    big = np.concatenate([np.zeros(1), np.full(4000, 3e9)]).astype(np.float32)
    assert_matches_numpy(lambda a: (np.prod(a), a.prod(dtype=np.float64)), big)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_products_multiply_in_numpys_row_order(dtype: np.dtype) -> None:
    """Bit-exact with NumPy's sequential loop, on one thread or many, whole rows or
    columns (a reordered product rounds differently)."""
    rng = np.random.default_rng(21)
    for size in (7, 1000, 300_000):
        x = rng.uniform(0.999, 1.001, size).astype(dtype)
        assert_matches_numpy(lambda a: (np.prod(a), np.prod(a * 1.5 - 0.5)), x)
    rows = rng.uniform(0.9, 1.1, (2000, 6)).astype(dtype)
    assert_matches_numpy(lambda a: (a.prod(axis=0), a.prod(axis=1), a.prod()), rows)


# -- FP error policy (np.errstate / np.seterr) ----------------------------------------------
def test_errstate_raise_inside_the_function_raises_like_numpy() -> None:
    def reciprocal(x):
        with np.errstate(divide="raise"):
            return 1.0 / x

    assert_matches_numpy(reciprocal, np.zeros(2), compiled=False)
    assert_matches_numpy(reciprocal, np.ones(2), compiled=False)


def test_errstate_ignore_inside_the_function_still_compiles() -> None:
    def logs(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    assert_matches_numpy(logs, np.array([0.0, -1.0, 2.0]))


_FP_ERRORS = {
    "divide": (lambda x: 1.0 / x, np.zeros(3)),
    "invalid": (lambda x: x / x, np.zeros(3)),
    "over": (lambda x: np.exp(x), np.full(3, 1000.0)),
    "under": (lambda x: x * 1e-300, np.full(3, 1e-300)),
}


@pytest.mark.parametrize("error", _FP_ERRORS)
def test_callers_error_policy_is_honoured(error: str) -> None:
    """The caller's np.errstate raises, calls its handler, or is ignored exactly as NumPy."""
    fn, x = _FP_ERRORS[error]
    compiled = autoroute(fn, force="cpu")
    with np.errstate(all="ignore"):
        assert_same_value(compiled(x), fn(x))          # compiled, no report
    with np.errstate(**{error: "raise"}):
        with pytest.raises(FloatingPointError) as numpy_error:
            fn(x)
        with pytest.raises(FloatingPointError) as our_error:
            compiled(x)
    assert str(our_error.value) == str(numpy_error.value)
    seen: list[tuple[str, int]] = []
    with np.errstate(call=lambda kind, flag: seen.append((kind, flag)), **{error: "call"}):
        compiled(x)
        fn(x)
    assert len(seen) == 2 and seen[0] == seen[1]
    old = np.seterr(**{error: "raise"})
    try:
        with pytest.raises(FloatingPointError):
            compiled(x)
    finally:
        np.seterr(**old)
    with np.errstate(all="ignore"):
        assert_same_value(compiled(x), fn(x))
    assert compiled.stats()["compiles"] + compiled.stats()["disk_hits"] == 1


def test_clip_of_a_python_scalar_is_clip_of_an_array() -> None:
    """np.clip makes its first operand an array (int64/float64), not a weak scalar."""
    assert_matches_numpy(lambda s: np.clip(s, None, np.uint64(7751921672582079718)), 5)
    assert_matches_numpy(lambda s, x: (np.clip(s, np.int16(-53), None), x + 1), 5, np.zeros(2))
    assert_matches_numpy(lambda s: (np.clip(s, np.float32(1), 3), np.clip(2.5, np.int8(1), s)),
                         7.25)
    assert_matches_numpy(lambda x: np.clip(3, x, np.int8(9)) + x, np.arange(4, dtype=np.int8))
