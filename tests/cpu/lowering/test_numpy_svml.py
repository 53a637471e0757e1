"""Where this NumPy computes a math function with its SVML routine (AVX-512 machines), CPU
kernels call the same routine: results are NumPy's bit for bit, contiguous, strided, fused,
in place, at any length (loop tails and scalars are computed by the same routine).

Skipped, with the reason, where NumPy runs no AVX-512 loops or exports no SVML."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

from autojit.lower_cpu import mathlib, svml, svml_symbols
from autojit.lower_cpu.ulp_bounds import MATH_NAMES, numpy_extra_ulps


def _why_not() -> str:
    if not svml_symbols.exported():
        return "NumPy runs no AVX-512 loops here, or exports no SVML routines"
    if not svml.bound():
        return "no SVML routine gives NumPy's results here (probe)"
    return ""


pytestmark = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")

#: NumPy's name of each libm name
UFUNCS = {libm: getattr(np, name) for name, libm in MATH_NAMES.items()}
BOUND = sorted(svml.bound()) if not _why_not() else []
UNARY = [pytest.param(name, size, id=f"{name}-f{size}") for name, size in BOUND
         if name in svml_symbols.UNARY]
BINARY = [pytest.param(name, size, id=f"{name}-f{size}") for name, size in BOUND
          if name in svml_symbols.BINARY]


def _values(itemsize: int, n: int = 30_000, seed: int = 0) -> np.ndarray:
    """Random values of every magnitude and sign, then specials and subnormals."""
    dtype = np.dtype(f"f{itemsize}")
    info = np.finfo(dtype)
    rng = np.random.default_rng(seed)
    top = 38 if itemsize == 4 else 300
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-8, 710.0, -745.0,
               float(info.max), float(info.tiny), float(info.smallest_subnormal), 88.7, 89.5]
    with np.errstate(all="ignore"):
        return np.concatenate([
            rng.uniform(-1, 1, n // 3), rng.uniform(-20, 20, n // 3),
            10.0 ** rng.uniform(-top, top, n // 3) * rng.choice([-1.0, 1.0], n // 3),
            special]).astype(dtype)


@pytest.mark.parametrize(("name", "itemsize"), UNARY)
def test_unary_function_is_numpys_bit_for_bit(name: str, itemsize: int) -> None:
    ufunc = UFUNCS[name]
    x = _values(itemsize)
    assert_calls_match_numpy(lambda a: ufunc(a), [(x,), (x[:1],), (x[:17],), (x[5:1000],)])
    assert_calls_match_numpy(lambda a: ufunc(a), [(x[::3],), (x[1:40:2],)])     # strided
    assert_calls_match_numpy(lambda a: ufunc(a + 1), [(x,), (x[:9],)])          # fused
    assert_calls_match_numpy(lambda a: ufunc(a, out=a), [(x.copy(),), (x[:13].copy(),)])
    two_d = x[: 300 * 7].reshape(300, 7)
    assert_calls_match_numpy(lambda a: ufunc(a) * 2, [(two_d,), (two_d.T,)])


@pytest.mark.parametrize(("name", "itemsize"), UNARY)
def test_scalar_argument_is_numpys(name: str, itemsize: int) -> None:
    """A NumPy scalar (a loop of one element) gets the routine's answer too."""
    ufunc = UFUNCS[name]
    for value in _values(itemsize, n=30, seed=3):
        assert_matches_numpy(lambda a: ufunc(a), value)


@pytest.mark.parametrize(("name", "itemsize"), BINARY)
def test_binary_function_is_numpys_bit_for_bit(name: str, itemsize: int) -> None:
    ufunc = UFUNCS[name]
    x, y = _values(itemsize, seed=1), _values(itemsize, seed=2)
    assert_calls_match_numpy(lambda a, b: ufunc(a, b), [(x, y), (x[:3], y[:3]),
                                                        (x[::2], y[1::2])])
    specials = _values(itemsize, n=0)
    grid = (np.repeat(specials, len(specials)), np.tile(specials, len(specials)))
    assert_calls_match_numpy(lambda a, b: ufunc(a, b), [grid])
    assert_calls_match_numpy(lambda a, b: ufunc(a + 1, b * 2), [(x, y), (x[:9], y[:9])])
    dtype = x.dtype.type
    assert_calls_match_numpy(lambda a: ufunc(a, dtype(2.5)), [(np.abs(x),), (x,)])
    assert_calls_match_numpy(lambda a, b: ufunc(a, b, out=a), [(x.copy(), y)])
    # constant operands: the call's argument is a constant after inlining
    assert_calls_match_numpy(lambda a: ufunc(a, 1.5) + ufunc(0.75, a), [(np.abs(x),), (x,)])


def _normalise(img: np.ndarray) -> np.ndarray:
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    return np.maximum((img - mean) / std * 1.0123 - 0.02, 0.0) ** 1.8


def test_constant_exponent_in_a_kernel_with_reductions_compiles() -> None:
    """The scalar wrapper's signature must survive the optimiser: a constant exponent once
    got dropped from it, and the vector variants naming two arguments crashed LLVM."""
    if ("pow", 4) not in svml.bound():
        pytest.skip("float32 power is not NumPy's SVML routine here")
    img = np.random.default_rng(5).random((2, 50, 64), dtype=np.float32)
    assert_matches_numpy(_normalise, img)


def test_sinh_of_arange_is_numpys() -> None:
    """NumPy's SVML sinh(2.0) is 0x1.d03cf63b6e19fp+1, glibc's 0x1.d03cf63b6e1a0p+1."""
    assert_matches_numpy(lambda a: np.sinh(a)[..., -1], np.arange(3.0))


def test_kernels_call_the_routine_at_full_width() -> None:
    """The loop calls the 8-lane routine (not glibc, not one lane at a time)."""
    if ("sinh", 8) not in svml.bound():
        pytest.skip("sinh is not NumPy's SVML routine here")
    from autojit import autoroute
    jitted = autoroute(lambda a: np.sinh(a), force="cpu")
    x = np.linspace(-3, 3, 1000)
    jitted(x)
    optimized = jitted.inspect(x).llvm_ir_optimized
    text = optimized if isinstance(optimized, str) else "\n".join(optimized)
    assert "call <8 x double> @autojit_svml___svml_sinh8_ha(" in text
    assert "autojit_libm_sinh" not in text


def test_scalar_math_only_keeps_glibc() -> None:
    with mathlib.scalar_math_only():
        assert mathlib.svml_routine("sinh", 8) is None


def test_bound_functions_add_no_tolerance() -> None:
    for name, itemsize in BOUND:
        numpy_name = next(n for n, libm in MATH_NAMES.items() if libm == name)
        assert numpy_extra_ulps(numpy_name, f"f{itemsize}") == 0.0


_CHILD = """
import sys
import numpy as np
from autojit import autoroute
x = np.linspace(-5.0, 5.0, 1001)
got = autoroute(lambda a: np.sinh(a), force="cpu")(x)
print(got.tobytes().hex(), np.array_equal(got, np.sinh(x)), "llvmlite.binding" in sys.modules)
"""


def _child(cache: str, disable: str = "") -> tuple[str, bool, bool]:
    import os
    import pathlib
    import subprocess
    import sys
    root = str(pathlib.Path(__file__).resolve().parents[3])
    env = dict(os.environ, AUTOJIT_CACHE_DIR=cache, PYTHONPATH=root,
               NPY_DISABLE_CPU_FEATURES=disable)
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    bits, same, compiled = done.stdout.split()
    return bits, same == "True", compiled == "True"


def test_disk_cache_never_serves_svml_code_where_numpy_does_not_use_it(tmp_path) -> None:
    """Code compiled where NumPy uses SVML is loaded from disk there (no LLVM), and not in a
    process whose NumPy runs its AVX2 loops (NPY_DISABLE_CPU_FEATURES): that one compiles
    its own, glibc code, the same as with an empty cache."""
    cache = str(tmp_path / "cache")
    svml_bits, same, _ = _child(cache)
    assert same
    assert _child(cache)[0] == svml_bits and not _child(cache)[2]   # loaded, not compiled
    glibc_bits, _, compiled = _child(cache, disable="X86_V4")
    assert compiled and glibc_bits != svml_bits
    assert glibc_bits == _child(str(tmp_path / "fresh"), disable="X86_V4")[0]
