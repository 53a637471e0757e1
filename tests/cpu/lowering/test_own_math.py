"""Own math functions (autojit/lower_cpu/own_math.py): used where libmvec has no vector
variant, they keep the loop vectorised and stay within 1 ULP of the correctly rounded
result (float32 against float64's exp rounded once; float64 against long double's)."""

import re

import numpy as np
import pytest

import autojit
from autojit import autoroute
from autojit.lower_cpu import mathlib
from autojit.lower_cpu.own_math import libm_only


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """ULP distance of same-dtype floats; NaN against NaN is 0, NaN against a number huge."""
    ints = np.int32 if got.dtype == np.float32 else np.int64
    low = np.iinfo(ints).min

    def ordered(a: np.ndarray) -> np.ndarray:   # Python ints: int64 differences overflow
        bits = a.view(ints).astype(object)
        return np.where(bits < 0, low - bits, bits)

    distance = np.abs(ordered(got) - ordered(want)).astype(np.float64)
    return np.where(np.isnan(got) & np.isnan(want), 0, distance)


def _correctly_rounded_exp(x: np.ndarray) -> np.ndarray:
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return np.exp(x.astype(wide)).astype(x.dtype)


EDGES = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 0.34657359,
         -0.34657359, 0.5 * np.log(2) + 1e-7]
RANGES = {np.float32: (-104.5, 89.0, [88.72283, 88.72284, -87.33655, -103.97208, -103.97209]),
          np.float64: (-746.0, 710.0, [709.782712893384, 709.7827128933841,
                                       -708.3964185322641, -745.1332191019411,
                                       -745.1332191019412])}


@pytest.fixture
def without_libmvec():
    with mathlib.scalar_math_only(), autojit.config(cache_max_mb=0):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_without_libmvec_is_vectorised_and_within_one_ulp(dtype, without_libmvec):
    lo, hi, boundaries = RANGES[dtype]
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(lo, hi, 300_000), rng.uniform(-1, 1, 100_000),
                        EDGES, boundaries]).astype(dtype)
    f = autoroute(np.exp)
    with np.errstate(all="ignore"):
        got = f(x)
    distance = _ulps(got, _correctly_rounded_exp(x))
    worst = int(np.argmax(distance))
    assert distance.max() <= 1, f"exp({x[worst]!r}) = {got[worst]!r}"
    with np.errstate(all="ignore"):
        special = np.isinf(x) | np.isnan(x) | (x == 0)
        np.testing.assert_array_equal(got[special], np.exp(x[special]))   # exactly NumPy's
    optimised = f.inspect(x)._programs[0].llvm_ir_optimized
    lanes = "8 x float" if dtype == np.float32 else "4 x double"
    assert f"<{lanes}>" in optimised
    assert not re.search(r"call [^@]*@(autojit_libm_)?expf?\(", optimised)   # no libm call left


def test_with_libmvec_the_vector_library_is_kept():
    if not mathlib.vector_variants("exp", 8, 1):
        pytest.skip("libmvec is not available on this machine")
    with autojit.config(cache_max_mb=0):
        f = autoroute(np.exp)
        optimised = f.inspect(np.ones(64))._programs[0].llvm_ir_optimized
    assert "_ZGV" in optimised and "autojit.exp" not in optimised


def test_libm_only_turns_own_functions_off(without_libmvec):
    with libm_only():
        f = autoroute(np.exp)
        optimised = f.inspect(np.ones(64, np.float32))._programs[0].llvm_ir_optimized
    assert re.search(r"call [^@]*@autojit_libm_expf\(", optimised)
