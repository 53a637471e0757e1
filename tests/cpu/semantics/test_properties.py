"""Property tests: random elementwise programs over random dtypes, shapes, strides and
broadcasts, compiled with LLVM, must equal NumPy exactly (the ops are IEEE-exact ones)."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.oracle import assert_matches_numpy

from autojit import FallbackWarning

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64",
          "float32", "float64"]

#: exact ops only (results are correctly rounded or integer), so comparisons can be exact.
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "max": np.maximum, "min": np.minimum,
    "fmax": np.fmax, "lt": np.less, "eq": np.equal, "and": np.logical_and,
    "where": lambda a, b: np.where(a > b, a, b), "hypot_free_mix": lambda a, b: a * 2 - b,
}
UNARY = {
    "neg": np.negative, "abs": np.absolute, "sqrt": np.sqrt, "square": np.square,
    "floor": np.floor, "sign": np.sign, "not": np.logical_not, "isnan": np.isnan,
    "to_f32": lambda a: a.astype(np.float32), "to_i32": lambda a: a.astype(np.int32),
    "plus_scalar": lambda a: a + 3, "times_half": lambda a: a * 0.5,
    "clip": lambda a: np.clip(a, 0, 10),
}


@st.composite
def arrays_for(draw, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """An array of ``shape``: contiguous, reversed, strided or a broadcast view."""
    layout = draw(st.sampled_from(["c", "reversed", "strided", "fortran"]))
    big = tuple(s * 2 for s in shape) if layout == "strided" else shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if np.dtype(dtype).kind == "f":
        data = rng.normal(0, 20, big)
        data[rng.random(big) < 0.1] = np.nan
        data[rng.random(big) < 0.05] = np.inf
    elif dtype == "bool":
        data = rng.random(big) < 0.5
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, big, endpoint=True, dtype=dtype)
    array = np.asarray(data).astype(dtype)
    if layout == "reversed" and array.ndim:
        array = array[::-1]
    elif layout == "strided":
        array = array[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "fortran":
        array = np.asfortranarray(array)
    return array


@st.composite
def programs(draw):
    rank = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        dtype = draw(st.sampled_from(DTYPES))
        keep = draw(st.integers(0, rank))          # broadcast: drop leading dims …
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else s
                      for s in base[rank - keep:])  # … and set some to 1
        inputs.append(draw(arrays_for(dtype, shape)))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        available = len(inputs) + len(steps)
        if draw(st.booleans()):
            steps.append(("u", draw(st.sampled_from(sorted(UNARY))),
                          draw(st.integers(0, available - 1)), 0))
        else:
            steps.append(("b", draw(st.sampled_from(sorted(BINARY))),
                          draw(st.integers(0, available - 1)),
                          draw(st.integers(0, available - 1))))
    outputs = draw(st.lists(st.integers(len(inputs), len(inputs) + len(steps) - 1),
                            min_size=1, max_size=2, unique=True))
    return inputs, steps, outputs


def build(steps, outputs):
    def program(*xs):
        values = list(xs)
        for kind, name, a, b in steps:
            values.append(UNARY[name](values[a]) if kind == "u"
                          else BINARY[name](values[a], values[b]))
        return tuple(values[i] for i in outputs)
    return program


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_elementwise_programs_match_numpy(program):
    inputs, steps, outputs = program
    # float16 results (sqrt of int8, say) are not compiled yet: they must fall back correctly
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        assert_matches_numpy(build(steps, outputs), *inputs, allowed_fallbacks=("float16",))


REDUCERS = {
    "sum": lambda a, axis: np.sum(a, axis=axis), "max": lambda a, axis: np.max(a, axis=axis),
    "mean_keep": lambda a, axis: np.mean(a, axis=axis, keepdims=True),
    "any": lambda a, axis: np.any(a > 0, axis=axis), "argmin": lambda a, axis: np.argmin(a),
    "std": lambda a, axis: np.std(a, axis=axis),
    "centre": lambda a, axis: a - np.mean(a, axis=axis, keepdims=True),
}


@st.composite
def reduction_programs(draw):
    inputs, steps, outputs = draw(programs())
    shapes = [np.shape(x) for x in inputs]
    reducer = draw(st.sampled_from(sorted(REDUCERS)))
    rank = max(len(s) for s in shapes)
    axis = draw(st.sampled_from([None] + list(range(-rank, rank)))) if rank else None
    return inputs, steps, outputs, reducer, axis


def _check_with_tail(inputs, steps, outputs, tail, axis, **tolerance):
    """Run the random elementwise program, then ``tail(first result, axis)`` (a reduction
    or a scan), against NumPy; float16 results may fall back."""
    body = build(steps, outputs)

    def with_tail(*xs):
        results = body(*xs)
        return (*results, tail(results[0], axis))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_matches_numpy(with_tail, *inputs, allowed_fallbacks=("float16", "in memory order"),
                             **tolerance)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(reduction_programs())
def test_random_programs_with_reductions_match_numpy(program):
    inputs, steps, outputs, reducer, axis = program
    _check_with_tail(inputs, steps, outputs, REDUCERS[reducer], axis, rtol=1e-5, atol=1e-6)


SLICERS = {
    "tail": lambda a: a[1:] if a.ndim else a, "reverse": lambda a: a[::-1] if a.ndim else a,
    "every_other": lambda a: a[::2] if a.ndim else a, "transpose": lambda a: a.T,
    "new_axis": lambda a: a[None],
}
WRITES = ["assign", "add_in_place", "assign_tail"]


@st.composite
def writing_programs(draw):
    inputs, steps, outputs = draw(programs())
    slicer = draw(st.sampled_from(sorted(SLICERS)))
    reducer = draw(st.sampled_from(sorted(REDUCERS) + [None]))
    return inputs, steps, outputs, slicer, reducer, draw(st.sampled_from(WRITES))


def _write(kind, target, value):
    if kind == "assign":
        target[...] = value
    elif kind == "add_in_place":
        target += value
    elif target.ndim:
        target[1:] = value


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(writing_programs())
def test_random_programs_with_views_and_writes_match_numpy(program):
    """Elementwise steps, a view, an optional reduction, then a write into the first
    argument: results and the written argument must equal NumPy's (or raise alike)."""
    inputs, steps, outputs, slicer, reducer, write = program
    body = build(steps, outputs)

    def with_writes(*xs):
        results = body(*xs)
        value = SLICERS[slicer](results[0])
        if reducer is not None:
            value = REDUCERS[reducer](value, None)
        _write(write, xs[0], value)
        return (*results, value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        # a NumPy scalar (a reduction's) stored into a narrower signed integer array runs as
        # Python: NumPy range-checks it through Python (np.int64(300) into int8 raises)
        assert_matches_numpy(with_writes, *inputs, rtol=1e-5, atol=1e-6,
                             allowed_fallbacks=("float16", "NumPy converts it through Python",
                                                "in memory order"))


SCANNERS = {
    "cumsum": lambda a, axis: np.cumsum(a, axis=axis),
    "cumprod": lambda a, axis: np.cumprod(a, axis=axis),
    "cumsum_scaled": lambda a, axis: np.cumsum(a * 3, axis=axis) / 2,
    "cumsum_bool": lambda a, axis: np.cumsum(a > 0, axis=axis),
    "cumsum_to_f32": lambda a, axis: np.cumsum(a, axis=axis, dtype=np.float32),
}


@st.composite
def scan_programs(draw):
    inputs, steps, outputs = draw(programs())
    rank = max(np.ndim(x) for x in inputs)
    axis = draw(st.sampled_from([None] + list(range(-rank, rank)))) if rank else None
    return inputs, steps, outputs, draw(st.sampled_from(sorted(SCANNERS))), axis


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scan_programs())
def test_random_programs_with_scans_match_numpy_exactly(program):
    """CPU scans are sequential like NumPy's, so even float results must be identical."""
    inputs, steps, outputs, scanner, axis = program
    _check_with_tail(inputs, steps, outputs, SCANNERS[scanner], axis)
