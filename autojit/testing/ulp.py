"""Measure how far autojit's compiled math functions are from NumPy's, in ULPs.

DESIGN.md contract 1 promises transcendental functions "within a documented, measured ULP
bound". This module is the measurement: deterministic samples per function and dtype
(uniform over the natural domain, every finite float by random bit pattern — log-uniform
magnitudes of both signs, subnormals included — and edge values with their neighbours), run
through ``autoroute(..., force="cpu")`` and through NumPy, compared chunk by chunk.

Chunk ``i`` of a function is the same wherever it is drawn, so a short run (the CI test) sees
a subset of what the long run (``benchmarks/ulp.py``, ≥1e7 samples) measured.

Comparison rules (NumPy is the oracle): NaN equals NaN whatever its sign; an infinity must
match exactly; finite against non-finite is a *special-value mismatch*, counted apart from the
ULP figure; ``+0``/``-0`` differences are reported but do not count (the ULP line puts both
at 0, as :func:`autojit.testing.tolerance.ulp_distance` does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from autojit.testing.tolerance import ulp_distance

Interval = tuple[float, float]
#: per-argument intervals of one uniform draw: ((lo0, hi0),) or ((lo0, hi0), (lo1, hi1))
Box = tuple[Interval, ...]
PI = math.pi
#: samples per chunk: the unit of determinism (chunk i is the same in every run of this size)
CHUNK = 1 << 20


@dataclass(frozen=True)
class MathFunction:
    """One measured function: its NumPy ufunc, uniform boxes (per dtype name, or ``"*"``),
    critical points (each taken with both signs and 3 neighbours each way) and, for binary
    functions, whether the exponent should also be drawn as integers (``pow``)."""

    name: str
    boxes: dict[str, tuple[Box, ...]]
    critical: tuple[float, ...] = ()
    integer_exponents: bool = False

    @property
    def ufunc(self) -> np.ufunc:
        return getattr(np, self.name)

    @property
    def arity(self) -> int:
        return self.ufunc.nin

    def boxes_for(self, dtype: np.dtype) -> tuple[Box, ...]:
        return self.boxes.get(np.dtype(dtype).name, self.boxes.get("*", ()))


def _u(*intervals: Interval) -> dict[str, tuple[Box, ...]]:
    return {"*": tuple((i,) for i in intervals)}


def _per_dtype(f64: tuple[Interval, ...], f32: tuple[Interval, ...]) -> dict:
    return {"float64": tuple((i,) for i in f64), "float32": tuple((i,) for i in f32)}


_TRIG_POINTS = tuple(k * PI / 4 for k in range(1, 17)) + (1e5, 1e10, 1e22, 1e300, 3.4e38)
_EXP_POINTS = (709.782712893384, 708.3964185322641, 745.1332191019411, 88.72283935546875,
               87.33654475, 103.97208, 1e-8)

#: every function autojit compiles through libm/libmvec (and sqrt, an LLVM intrinsic)
FUNCTIONS: tuple[MathFunction, ...] = (
    MathFunction("sin", _u((-PI, PI), (-1e4, 1e4)), _TRIG_POINTS),
    MathFunction("cos", _u((-PI, PI), (-1e4, 1e4)), _TRIG_POINTS),
    MathFunction("tan", _u((-PI / 2, PI / 2), (-1e4, 1e4)), _TRIG_POINTS),
    MathFunction("arcsin", _u((-1, 1)), (1.0, 0.5, 1e-8)),
    MathFunction("arccos", _u((-1, 1)), (1.0, 0.5, 1e-8)),
    MathFunction("arctan", _u((-10, 10), (-1, 1)), (1.0, 1e8, 1e300)),
    MathFunction("sinh", _per_dtype(((-711, 711), (-1, 1)), ((-90, 90), (-1, 1))),
                 (710.4758600739439, 89.41598629223294, 1.0, 1e-8)),
    MathFunction("cosh", _per_dtype(((-711, 711), (-1, 1)), ((-90, 90), (-1, 1))),
                 (710.4758600739439, 89.41598629223294, 1.0, 1e-8)),
    MathFunction("tanh", _u((-20, 20), (-1, 1)), (19.06154746539849, 9.010913, 0.55, 1e-8)),
    MathFunction("arcsinh", _u((-10, 10), (-1, 1)), (1.0, 1e8, 1e300, 1e-8)),
    MathFunction("arccosh", _u((1, 10), (1, 1.01)), (1.0, 2.0, 1e8, 1e300)),
    MathFunction("arctanh", _u((-1, 1), (-0.01, 0.01)), (1.0, 0.5, 1e-8)),
    MathFunction("exp", _per_dtype(((-746, 710), (-1, 1)), ((-104, 89), (-1, 1))),
                 _EXP_POINTS),
    MathFunction("exp2", _per_dtype(((-1076, 1025), (-1, 1)), ((-151, 129), (-1, 1))),
                 (1024.0, 1022.0, 1074.0, 1075.0, 128.0, 126.0, 149.0, 150.0, 0.5)),
    MathFunction("expm1", _per_dtype(((-40, 710), (-1, 1)), ((-20, 89), (-1, 1))),
                 _EXP_POINTS),
    MathFunction("log", _u((0, 10), (0.5, 2)), (1.0, 2.0, 10.0)),
    MathFunction("log2", _u((0, 10), (0.5, 2)), (1.0, 2.0, 10.0)),
    MathFunction("log10", _u((0, 10), (0.5, 2)), (1.0, 2.0, 10.0)),
    MathFunction("log1p", _u((-1, 10), (-0.01, 0.01)), (1.0, 1e-8, 2.0)),
    MathFunction("cbrt", _u((-10, 10)), (1.0, 8.0, 27.0, 1e-300)),
    MathFunction("sqrt", _u((0, 100)), (1.0, 4.0, 2.0)),
    MathFunction("arctan2", {"*": (((-10, 10), (-10, 10)),)}, (1.0, 2.0, 0.5)),
    MathFunction("hypot", {"*": (((-10, 10), (-10, 10)),)}, (1.0, 3.0, 4.0)),
    MathFunction("power", {"*": (((0, 10), (-30, 30)), ((0.5, 2), (-1000, 1000)))},
                 (1.0, 2.0, 0.5, 3.0), integer_exponents=True),
)
BY_NAME = {f.name: f for f in FUNCTIONS}


# -- samples -----------------------------------------------------------------------------------
def edge_values(fn: MathFunction, dtype: np.dtype) -> np.ndarray:
    """Return ±0, ±inf, NaN, subnormal/normal/huge limits, ±1, and ``fn``'s critical points,
    each with both signs and its three neighbours either way, in ``dtype``."""
    info = np.finfo(dtype)
    tiny_sub = info.smallest_subnormal
    base = [0.0, np.inf, np.nan, tiny_sub, info.smallest_normal - tiny_sub, info.smallest_normal,
            info.max, info.eps, 1.0, 2.0, 0.5]
    with np.errstate(over="ignore"):
        points = np.array(base + list(fn.critical), dtype=np.float64).astype(dtype)
    points = np.concatenate([points, -points])
    steps = [points]
    up, down = points.copy(), points.copy()
    with np.errstate(over="ignore"):
        for _ in range(3):
            up = np.nextafter(up, dtype.type(np.inf))
            down = np.nextafter(down, dtype.type(-np.inf))
            steps += [up, down]
    return np.unique(np.concatenate(steps))


def _random_bits(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """Return ``n`` finite floats with uniformly random bit patterns: log-uniform magnitudes
    over the whole range, both signs, subnormals included."""
    ints = np.dtype(f"u{dtype.itemsize}")
    values = rng.integers(0, np.iinfo(ints).max, n, dtype=ints, endpoint=True).view(dtype)
    finite = values[np.isfinite(values)]
    return np.resize(finite, n) if finite.size else np.zeros(n, dtype)


def _uniform(rng: np.random.Generator, box: Box, n: int, dtype: np.dtype) -> list[np.ndarray]:
    return [rng.uniform(lo, hi, n).astype(dtype) for lo, hi in box]


def _random_part(fn: MathFunction, rng: np.random.Generator, n: int,
                 dtype: np.dtype) -> list[np.ndarray]:
    """Return ``n`` random argument tuples: half uniform over the boxes, a third random bit
    patterns, the rest uniform over the first box (unary functions), one argument of each
    kind (binary), or negative and positive bases with integer exponents (``power``)."""
    boxes = fn.boxes_for(dtype)
    parts: list[list[np.ndarray]] = []
    n_uniform = n // 2 // len(boxes)
    parts += [_uniform(rng, box, n_uniform, dtype) for box in boxes]
    n_bits = n // 3
    parts.append([_random_bits(rng, n_bits, dtype) for _ in range(fn.arity)])
    rest = n - n_uniform * len(boxes) - n_bits
    if fn.arity == 1:
        parts.append(_uniform(rng, boxes[0], rest, dtype))
    elif fn.integer_exponents:
        parts.append([rng.uniform(-10, 10, rest).astype(dtype),
                      rng.integers(-40, 41, rest).astype(dtype)])
    else:
        half = rest // 2
        mixed0 = _uniform(rng, boxes[0], rest, dtype)
        bits = _random_bits(rng, rest, dtype)
        parts.append([np.concatenate([mixed0[0][:half], bits[half:]]),
                      np.concatenate([bits[:half], mixed0[1][half:]])])
    return [np.concatenate([p[i] for p in parts]) for i in range(fn.arity)]


def sample_chunk(fn: MathFunction, dtype: np.dtype, index: int, size: int,
                 stride: int = 1, seed: int = 20261129) -> list[np.ndarray]:
    """Return chunk ``index`` of ``fn``'s samples (one array per argument, ``size`` long, or
    longer for chunk 0, which starts with every edge value, or every pair of them).

    ``stride`` keeps every stride-th random sample (edge values all): a CI-sized subset of
    exactly the values a long run with the same ``size`` measured."""
    dtype = np.dtype(dtype)
    key = [seed, FUNCTIONS.index(fn), dtype.itemsize, index]
    args = [a[::stride] for a in _random_part(fn, np.random.default_rng(key), size, dtype)]
    if index == 0:
        edges = edge_values(fn, dtype)
        if fn.arity == 1:
            args = [np.concatenate([edges, args[0]])]
        else:
            x, y = np.meshgrid(edges, edges, indexing="ij")
            args = [np.concatenate([x.ravel(), args[0]]), np.concatenate([y.ravel(), args[1]])]
    return args


# -- comparing -------------------------------------------------------------------------------
@dataclass
class UlpStats:
    """What one function at one dtype did against NumPy over ``samples`` values."""

    name: str
    dtype: str
    samples: int = 0
    max_ulps: float = 0.0
    worst: tuple = ()                        # (inputs..., autojit, numpy) at max_ulps
    special_mismatches: int = 0
    special_example: tuple = ()              # (inputs..., autojit, numpy)
    zero_sign_differences: int = 0
    variants: tuple[str, ...] = ()           # vector symbols the optimised IR calls
    scalar_calls: tuple[str, ...] = ()       # scalar libm symbols the optimised IR still calls
    own: tuple[str, ...] = ()                # autojit's own functions inlined (own_math.py)
    reference_ulps: dict[str, float] = field(default_factory=dict)  # vs correctly rounded

    def add(self, args: list[np.ndarray], got: np.ndarray, want: np.ndarray) -> None:
        """Fold one chunk's comparison into the totals."""
        self.samples += got.size
        nan_got, nan_want = np.isnan(got), np.isnan(want)
        fin_got, fin_want = np.isfinite(got), np.isfinite(want)
        special = (nan_got != nan_want) | (fin_got != fin_want)
        special |= np.isinf(got) & np.isinf(want) & (got != want)
        count = int(np.count_nonzero(special))
        if count and not self.special_mismatches:
            i = int(np.argmax(special))
            self.special_example = (*(float(a[i]) for a in args), float(got[i]), float(want[i]))
        self.special_mismatches += count
        zero = (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
        self.zero_sign_differences += int(np.count_nonzero(zero))
        both = fin_got & fin_want
        distance = np.where(both, ulp_distance(got, want), 0.0)
        i = int(np.argmax(distance))
        if distance[i] > self.max_ulps:
            self.max_ulps = float(distance[i])
            self.worst = (*(float(a[i]) for a in args), float(got[i]), float(want[i]))


def compiled_function(name: str, arity: int) -> Callable:
    """Return a fresh ``autoroute`` dispatcher of ``np.<name>`` (one per call: no shared
    cache, so a changed math setting is compiled anew)."""
    from autojit import autoroute
    ufunc = getattr(np, name)
    if arity == 1:
        return autoroute(lambda x: ufunc(x), force="cpu", cache_max_mb=0)
    return autoroute(lambda x, y: ufunc(x, y), force="cpu", cache_max_mb=0)


def called_symbols(llvm_ir: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return (vector symbols, scalar math symbols) the optimised IR calls."""
    # libmvec's variants, or NumPy's SVML routines under private names (lower_cpu/svml.py)
    vector = sorted(set(re.findall(r"call <\d+ x \w+> @\"?(_ZGV\w+|autojit_svml_\w+)", llvm_ir)))
    # kernels call libm through private names (lower_cpu/libm_symbols.py): report libm's
    scalar = sorted(set(re.findall(
        r"call (?:fast )?(?:double|float) @\"?(?:autojit_libm_)?([a-z][a-z0-9]*)\"?\(", llvm_ir)))
    return tuple(vector), tuple(scalar)


def own_functions(llvm_ir: str) -> tuple[str, ...]:
    """Return autojit's own math functions (``@"autojit.exp.f64"``) the IR defines."""
    return tuple(sorted(set(re.findall(r"define [^@]*@\"?(autojit\.\w+\.f(?:32|64))", llvm_ir))))


def measure(fn: MathFunction, dtype: np.dtype, samples: int, chunk: int = CHUNK,
            reference: bool = False, stride: int = 1) -> UlpStats:
    """Return ``fn``'s UlpStats at ``dtype`` over the chunks that hold ``samples`` values
    (every ``stride``-th of them, edge values all; see :func:`sample_chunk`).

    ``reference=True`` also records both sides' distance to a correctly rounded result:
    float32 against float64 NumPy rounded to float32, float64 against mpmath on 2048 points.
    """
    dtype = np.dtype(dtype)
    stats = UlpStats(fn.name, dtype.name)
    jitted = compiled_function(fn.name, fn.arity)
    refs: dict[str, float] = {}
    for index in range(max(1, math.ceil(samples / chunk))):
        args = sample_chunk(fn, dtype, index, chunk, stride)
        with np.errstate(all="ignore"):
            got, want = jitted(*args), fn.ufunc(*args)
        if index == 0:
            inspection = jitted.inspect(*args)
            stats.variants, stats.scalar_calls = called_symbols(inspection.llvm_ir_optimized)
            stats.own = own_functions(inspection.llvm_ir)
            if jitted.stats()["fallbacks"]:
                raise RuntimeError(f"{fn.name} fell back to Python: {jitted.stats()['fallbacks']}")
        stats.add(args, got, want)
        if reference and dtype.itemsize == 4:
            with np.errstate(all="ignore"):
                exact = fn.ufunc(*(a.astype(np.float64) for a in args)).astype(dtype)
            for side, value in (("autojit", got), ("numpy", want)):
                both = np.isfinite(value) & np.isfinite(exact)
                worst = float(np.where(both, ulp_distance(value, exact), 0.0).max())
                refs[side] = max(refs.get(side, 0.0), worst)
        if reference and dtype.itemsize == 8 and index == 0:
            refs = _mpmath_reference(fn, args, got, want)
    stats.reference_ulps = refs
    return stats


_MPMATH = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "power": "power",
           }


def _mpmath_reference(fn: MathFunction, args: list[np.ndarray], got: np.ndarray,
                      want: np.ndarray, points: int = 2048) -> dict[str, float]:
    """Return both sides' max ULP against mpmath (200 bits, rounded to float64) on ``points``
    random samples with finite inputs and results; {} without mpmath."""
    try:
        import mpmath
    except ImportError:
        return {}
    mp = mpmath.mp
    name = _MPMATH.get(fn.name, fn.name)
    special = {"exp2": lambda x: mp.power(2, x), "log2": lambda x: mp.log(x, 2),
               "cbrt": lambda x: mp.sign(x) * mp.cbrt(abs(x))}   # mp.cbrt(-8) is complex
    f = special.get(fn.name) or getattr(mp, name)
    ok = np.isfinite(got) & np.isfinite(want)
    for a in args:
        ok &= np.isfinite(a)
    chosen = np.random.default_rng(len(got)).permutation(np.flatnonzero(ok))[:points]
    exact = np.empty(len(chosen))
    with mpmath.workprec(200):
        for k, i in enumerate(chosen):
            value = f(*(mp.mpf(float(a[i])) for a in args))
            exact[k] = float(value) if isinstance(value, mpmath.mpf) else np.nan
    keep = np.isfinite(exact)
    return {side: float(ulp_distance(v[chosen][keep], exact[keep]).max(initial=0.0))
            for side, v in (("autojit", got), ("numpy", want))}
