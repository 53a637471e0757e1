"""Float -> uint32 casts of NaN, ±inf and values outside [-2**31, 2**32): one answer.

C leaves the cast undefined; NumPy answers with the instruction of whichever loop ran. Its
scalar loop (every element of a strided or short cast, the last ``n % 4`` of a contiguous
one, a reduction's or a write's small blocks) keeps the low 32 bits of an int64
``cvttsd2si`` (NaN -> 0, -2**31 - 1 -> 2**31 - 1, 2**32 + 5 -> 5); its SIMD loop gives
2**31 or 0 there, and only there raises the FP 'invalid' flag. autojit gives the scalar
loop's answer in every position (measured on NumPy 2.4, AVX-512; every other float ->
integer cast is the same in both loops and is checked against NumPy in any layout).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy, assert_same_value

from autojit import autoroute

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
INTS = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64",
                                   "uint8", "uint16", "uint32", "uint64"))
_UNDEFINED = [np.nan, np.inf, -np.inf, -2.0**31 - 1, -2.0**31 - 2048, -3e9, -2.0**32 - 4096,
              -1e10, -2.0**63, -1e20, 2.0**32, 2.0**32 + 4096, 5e9, 1e10, 2.0**63 - 1024,
              2.0**63, 1e20, -10.75, -0.5, -2.0**31, 2.0**31, 2.0**32 - 1]


def _values(dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array(_UNDEFINED).astype(dtype)


def _strided(x: np.ndarray) -> np.ndarray:
    """``x`` as a non-contiguous view: NumPy casts it in its scalar loop, element by element."""
    return np.stack([x, x], axis=-1)[..., 0]


def scalar_loop_cast(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """NumPy's scalar-loop answer for every element of ``x``."""
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(_strided(x).astype(target))


def _astype_uint32(a):
    return a.astype(np.uint32)


def _write_uint32(out, a):
    out[...] = a
    return out + np.uint32(0)


@pytest.mark.parametrize("source", FLOATS, ids=str)
def test_float_to_uint32_is_numpys_scalar_loop_where_numpy_uses_it(source: np.dtype) -> None:
    """Strided inputs and short arrays: NumPy's scalar loop casts every element."""
    x = _values(source)
    calls = [(lambda v=v, n=n: (_strided(np.full(n, v)),)) for v in x for n in (1, 5)]
    assert_calls_match_numpy(_astype_uint32, calls)
    short = [(lambda v=v: (np.full(3, v),)) for v in x]
    assert_calls_match_numpy(_astype_uint32, short)
    writes = [(lambda v=v: (np.zeros(2, np.uint32), np.full(2, v))) for v in x]
    assert_calls_match_numpy(_write_uint32, writes)


@pytest.mark.parametrize("source", FLOATS, ids=str)
def test_float_to_uint32_gives_the_scalar_loop_answer_in_every_position(source: np.dtype) -> None:
    """Contiguous arrays of any length, where NumPy's SIMD loop answers 2**31 or 0 by
    position: autojit's answer does not depend on the position."""
    x = np.repeat(_values(source), 9)
    fn = autoroute(_astype_uint32, force="cpu")
    for n in (4, 8, 9, 64):
        cut = x[: n * (x.size // n)]
        assert_same_value(fn(cut), scalar_loop_cast(cut, np.dtype(np.uint32)), label=str(n))
    assert_same_value(fn(x.reshape(-1, 9)[:, ::2]),
                      scalar_loop_cast(x.reshape(-1, 9)[:, ::2], np.dtype(np.uint32)))


def _std_uint32(a):
    return np.std(a, dtype=np.uint32)


def _write_product(a0, a1):
    a1[0:2:1, None] = a1 * a0
    return a1 + np.uint32(0)


def test_reduction_and_write_through_uint32_match_numpy() -> None:
    """A reduction's dtype=uint32 (a negative mean wraps, its squares from 2**32 keep their
    low bits) and a float product written back into uint32: NumPy's scalar loop."""
    x = np.array([-0.3, 0.03, -10.7530629325961])
    assert_calls_match_numpy(_std_uint32, [(lambda: (x.reshape(1, 3)[::-1],)),
                                           (lambda: (x[::-1].copy(),))])
    calls = [(lambda v=v, a=a: (v, np.array([a], np.uint32)))
             for v, a in ((-1.5, [286245511, 2914894590]), (-2.6666666666666665, [2**31, 5]),
                          (1e308, [5, 0]), (-8.0, [0, 1, 0, 0]))]
    assert_calls_match_numpy(_write_product, calls)


@pytest.mark.parametrize("source", FLOATS, ids=str)
def test_other_integer_targets_match_numpy_in_every_layout(source: np.dtype) -> None:
    """Every other target answers the same in NumPy's loops: compared in every layout."""
    x = _values(source)
    for target in INTS:
        if target == np.uint32:
            continue
        fn = (lambda a, t=target: a.astype(t))
        calls = [(lambda n=n: (np.resize(x, n),)) for n in (1, 3, 4, 7, 64)]
        calls += [(lambda: (_strided(x),))]
        assert_calls_match_numpy(fn, calls)
        assert_matches_numpy(lambda o, a: _write_any(o, a), np.zeros(x.size, target), x)


def _write_any(out, a):
    out[...] = a
    return out
