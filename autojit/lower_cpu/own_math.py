"""Own math functions written in LLVM IR, inlined into kernels and widened by the loop
vectoriser like any arithmetic — where a libmvec call is the bottleneck.

They are used where libmvec has no vector variant of a function (or libmvec is absent):
there a scalar libm call per element would cost ~5-10x. Where libmvec has one it stays:
measured here (AVX2, 200K elements in cache, min of 200 interleaved runs), libmvec's
``expf`` costs ~0.30 ns per element beyond a multiply and the function below ~0.47 ns,
though it is more accurate (float32: at most 1 ULP from the correctly rounded result,
libmvec 3, NumPy 2, over 4M samples).

exp(x), for float32 and float64 alike (Cody–Waite reduction, Taylor polynomial)::

    q = rint(x / ln 2)                  x clamped first, so q stays in range
    r = (x - q * LN2_HI) - q * LN2_LO   |r| <= ln2 / 2; LN2_HI has trailing zero bits,
                                        so q * LN2_HI is exact
    e = 1 + (r + r*r * P(r))            P: the Taylor series of (e^r - 1 - r) / r^2,
                                        1/2! .. 1/8! (float32), 1/2! .. 1/13! (float64):
                                        truncation below 0.1 ULP
    exp(x) = e * 2^(q - q//2) * 2^(q//2)  two normal powers of two, so results that
                                        overflow or are subnormal round once, correctly

NaN returns itself; +inf -> inf; -inf -> +0 (from the clamp). The measured error against
NumPy is in docs/ulp.md and asserted by tests (tests/cpu/lowering/test_own_math.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import llvmlite.ir as ir


@dataclass(frozen=True)
class _ExpConstants:
    """Per-precision constants of ``exp``."""

    lowest: float             # below: the result rounds to +0 (also keeps q >= min_q)
    highest: float            # above: the result overflows to inf
    ln2_hi: float             # ln 2 rounded to few bits: q * ln2_hi is exact
    ln2_lo: float             # ln 2 - ln2_hi
    taylor_terms: int         # P's last power: r**(n-2) / n!
    mantissa_bits: int        # where the exponent field starts
    bias: int


_EXP = {
    "float": _ExpConstants(-104.0, 89.0, 0.693145751953125, 1.428606765330187045e-06, 8,
                           23, 127),
    "double": _ExpConstants(-746.0, 710.0, 0.693147180369123816490, 1.90821492927058770002e-10,
                            13, 52, 1023),
}

_LIBM_ONLY: ContextVar[bool] = ContextVar("autojit_libm_only", default=False)


@contextlib.contextmanager
def libm_only() -> Iterator[None]:
    """Within the block, compile math as libm/libmvec calls only, never own functions (to
    compare the two; keep such code out of shared caches)."""
    token = _LIBM_ONLY.set(True)
    try:
        yield
    finally:
        _LIBM_ONLY.reset(token)


def _intrinsic(module: ir.Module, name: str, ty: ir.Type, arity: int) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)


def _power_of_two(builder: ir.IRBuilder, k: ir.Value, ty: ir.Type, c: _ExpConstants,
                  int_ty: ir.IntType) -> ir.Value:
    """Return 2**k as a float of ``ty`` for a normal exponent k (an integer value)."""
    biased = builder.add(k, ir.Constant(int_ty, c.bias))
    return builder.bitcast(builder.shl(biased, ir.Constant(int_ty, c.mantissa_bits)), ty)


def _build_exp(module: ir.Module, ty: ir.Type) -> ir.Function:
    c = _EXP[str(ty)]
    suffix = "f32" if isinstance(ty, ir.FloatType) else "f64"
    int_ty = ir.IntType(32 if suffix == "f32" else 64)
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), f"autojit.exp.{suffix}")
    fn.linkage = "internal"
    for attribute in ("alwaysinline", "nounwind", "readnone"):
        fn.attributes.add(attribute)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    (x,) = fn.args

    def k(value: float) -> ir.Constant:
        return ir.Constant(ty, value)

    rint = _intrinsic(module, f"llvm.rint.{suffix}", ty, 1)
    fma = _intrinsic(module, f"llvm.fmuladd.{suffix}", ty, 3)
    # ordered compares are false for NaN: a NaN x passes through both clamps unchanged and
    # is selected back at the end (q must not come from NaN: fptosi of NaN is poison)
    is_nan = builder.fcmp_unordered("uno", x, x)
    clamped = builder.select(builder.fcmp_ordered(">", x, k(c.highest)), k(c.highest), x)
    clamped = builder.select(builder.fcmp_ordered("<", clamped, k(c.lowest)), k(c.lowest),
                             clamped)
    clamped = builder.select(is_nan, k(0.0), clamped)
    q = builder.call(rint, [builder.fmul(clamped, k(1.0 / math.log(2.0)))])
    r = builder.call(fma, [q, k(-c.ln2_hi), clamped])
    r = builder.call(fma, [q, k(-c.ln2_lo), r])
    poly = k(1.0 / math.factorial(c.taylor_terms))
    for n in range(c.taylor_terms - 1, 1, -1):
        poly = builder.call(fma, [poly, r, k(1.0 / math.factorial(n))])
    e = builder.fadd(k(1.0), builder.call(fma, [builder.fmul(r, r), poly, r]))
    qi = builder.fptosi(q, int_ty)
    half = builder.ashr(qi, ir.Constant(int_ty, 1))
    scaled = builder.fmul(e, _power_of_two(builder, builder.sub(qi, half), ty, c, int_ty))
    scaled = builder.fmul(scaled, _power_of_two(builder, half, ty, c, int_ty))
    builder.ret(builder.select(is_nan, x, scaled))
    return fn


#: math name -> builder of its own implementation (``define internal <ty> @autojit.<name>``)
OWN_MATH: dict[str, Callable[[ir.Module, ir.Type], ir.Function]] = {"exp": _build_exp}


def own_available(math_name: str) -> bool:
    """Return whether ``own_function`` has an implementation of ``math_name`` here."""
    return math_name in OWN_MATH and not _LIBM_ONLY.get()


def own_function(module: ir.Module, math_name: str, ty: ir.Type) -> ir.Function | None:
    """Return the module's own implementation of ``math_name`` at ``ty`` (defining it once),
    or None when there is none or :func:`libm_only` is in effect."""
    build = OWN_MATH.get(math_name)
    if build is None or _LIBM_ONLY.get():
        return None
    name = f"autojit.{math_name}.{'f32' if isinstance(ty, ir.FloatType) else 'f64'}"
    return module.globals.get(name) or build(module, ty)
