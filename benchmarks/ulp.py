"""The measured ULP error of every math function autojit compiles for the CPU, against NumPy.

Run:  python benchmarks/ulp.py [--samples 1e7] [--only sin,exp] [--dtypes float32]
                               [--write docs/ulp.md] [--python]

For each function and dtype: ≥ ``--samples`` values (uniform over the natural domain, random
bit patterns over every finite float, and edge values; see :mod:`autojit.testing.ulp`), run
compiled with libmvec's vector variants and again as on a machine without libmvec (autojit's
own vectorised function where ``own_math.py`` has one, else scalar libm), each compared with
NumPy. ``--write`` regenerates the ULP document from the
run; ``--python`` prints the bounds table for ``autojit/lower_cpu/ulp_bounds.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

from autojit.lower_cpu import ulp_bounds
from autojit.lower_cpu.mathlib import scalar_math_only
from autojit.testing.ulp import BY_NAME, FUNCTIONS, UlpStats, measure

COLUMNS = ("function", "dtype", "libmvec variants called", "max ULP, libmvec",
           "without libmvec", "max ULP, without libmvec", "bound", "samples",
           "special-value mismatches",
           "±0 differences", "NumPy vs correctly rounded", "autojit vs correctly rounded",
           "worst case (libmvec)")


def _ulps(value: float) -> str:
    return f"{value:g}"


def _example(values: tuple) -> str:
    if not values:
        return "-"
    *inputs, got, want = values
    args = ", ".join(f"{v:.9g}" for v in inputs)
    return f"f({args}) = {got:.17g}, NumPy {want:.17g}"


def implementation(stats: UlpStats) -> str:
    """Return what the compiled loop ran: vector symbols, an own function, scalar libm."""
    if stats.variants:
        return ", ".join(f"`{v}`" for v in stats.variants)
    if stats.own:
        return "own: " + ", ".join(f"`{v}`" for v in stats.own) + " (vectorised)"
    if stats.scalar_calls:
        return "scalar libm: " + ", ".join(f"`{v}`" for v in stats.scalar_calls)
    return "LLVM intrinsic"


def table_row(vector: UlpStats, scalar: UlpStats | None) -> str:
    """Return one Markdown row for a function at one dtype."""
    libm = scalar.max_ulps if scalar is not None else float("nan")
    bound = max(vector.max_ulps, libm if scalar is not None else 0.0)
    specials = vector.special_mismatches + (scalar.special_mismatches if scalar else 0)
    example = vector.special_example or (scalar.special_example if scalar else ())
    special_text = str(specials) + (f" (e.g. {_example(example)})" if specials else "")
    ref = vector.reference_ulps
    cells = (f"`{vector.name}`", vector.dtype, implementation(vector), _ulps(vector.max_ulps),
             implementation(scalar) if scalar is not None else "-",
             _ulps(libm) if scalar is not None else "-", _ulps(bound), f"{vector.samples:,}",
             special_text, str(vector.zero_sign_differences),
             _ulps(ref["numpy"]) if "numpy" in ref else "-",
             _ulps(ref["autojit"]) if "autojit" in ref else "-", _example(vector.worst))
    return "| " + " | ".join(cells) + " |"


def markdown_table(results: list[tuple[UlpStats, UlpStats | None]]) -> str:
    """Return the Markdown table of all results."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += [table_row(v, s) for v, s in results]
    return "\n".join(lines)


def summary(results: list[tuple[UlpStats, UlpStats | None]]) -> str:
    """Return what the table means for users, in a few sentences computed from it."""
    bounds = [(max(v.max_ulps, s.max_ulps if s else 0.0), v, s) for v, s in results]
    top = max(b for b, _, _ in bounds)
    tops = ", ".join(f"`{v.name}` {v.dtype}" for b, v, _ in bounds if b == top)
    total = sum(v.samples + (s.samples if s else 0) for _, v, s in bounds)
    specials = sum(v.special_mismatches + (s.special_mismatches if s else 0)
                   for _, v, s in bounds)
    text = [f"Every function is within {top:g} ULP of NumPy (largest: {tops}); "
            f"{specials} special-value mismatches in {total:,} compared results "
            "(runs with and without libmvec together)."]
    over = [(b, v) for b, v, _ in bounds if b > 4]
    for b, v in over:
        ref = v.reference_ulps
        text.append(
            f"`{v.name}` {v.dtype} is {b:g} ULP from NumPy although autojit is "
            f"{ref.get('autojit', float('nan')):g} ULP and NumPy "
            f"{ref.get('numpy', float('nan')):g} ULP from the correctly rounded result: "
            "glibc's vector variant and NumPy's own SIMD loop each err by a few ULP, in "
            "opposite directions. `autojit.testing` allows this function its measured bound.")
    if not over:
        text.append("All are within the 4 ULP `autojit.testing` allows any transcendental "
                    "function.")
    return " ".join(text)


def python_table(results: list[tuple[UlpStats, UlpStats | None]]) -> str:
    """Return the ``ULP_BOUNDS`` literal for :mod:`autojit.lower_cpu.ulp_bounds`."""
    lines = ["ULP_BOUNDS: dict[tuple[str, str], UlpBound] = {"]
    for vector, scalar in results:
        libm = scalar.max_ulps if scalar is not None else vector.max_ulps
        lines.append(f"    ({vector.name!r}, {vector.dtype!r}): "
                     f"UlpBound({vector.max_ulps:g}, {libm:g}),")
    return "\n".join(lines + ["}"])


def machine_description() -> str:
    """Return CPU model, vector features, glibc, NumPy and llvmlite versions, in one line."""
    import llvmlite
    import llvmlite.binding as llvm
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    features = llvm.get_host_cpu_features()
    isa = "+".join(f for f in ("sse4.1", "avx2", "fma", "avx512f") if features.get(f))
    libc = " ".join(platform.libc_ver())
    return (f"{model} ({isa}), {os.cpu_count()} cores; {libc}; NumPy {np.__version__}; "
            f"llvmlite {llvmlite.__version__} (LLVM {llvm.llvm_version_info[0]}); "
            f"Python {platform.python_version()}")


def run(names: list[str], dtypes: list[str], samples: int, chunk: int,
        scalar: bool) -> list[tuple[UlpStats, UlpStats | None]]:
    """Measure every function and dtype; print one line each as it finishes."""
    results = []
    for name in names:
        fn = BY_NAME[name]
        for dtype in dtypes:
            start = time.perf_counter()
            vector = measure(fn, np.dtype(dtype), samples, chunk, reference=True)
            libm = None
            if scalar:
                with scalar_math_only():
                    libm = measure(fn, np.dtype(dtype), samples, chunk)
            results.append((vector, libm))
            print(f"{name:8} {dtype:8} libmvec {vector.max_ulps:g} ULP, without "
                  f"{libm.max_ulps if libm else float('nan'):g} ULP, specials "
                  f"{vector.special_mismatches}/{libm.special_mismatches if libm else '-'}, "
                  f"{vector.samples:,} samples, {time.perf_counter() - start:.1f} s",
                  file=sys.stderr, flush=True)
    return results


_DOC = """# ULP bounds of autojit's math functions (CPU)

DESIGN.md contract 1: NumPy is the oracle; transcendental functions agree with it *within a
documented, measured ULP bound*. This is that bound, measured on the machine below.

Generated by

    {command}

(about 3 minutes on 2 cores). Do not edit the table by hand: rerun the command, and paste
the `ULP_BOUNDS` table it prints (`--python`) into `autojit/lower_cpu/ulp_bounds.py`.
`tests/cpu/lowering/test_ulp_bounds.py` checks that the measured columns here equal that
table, and
that a CI-sized subset of the same samples (every edge value, every 50th random value of the
first chunk of 2^20) stays within it, with libmvec and without.
In code: `autojit.lower_cpu.ulp_bounds.ulp_bound("log", "float32")` (or an `Op`).

**CPUs with AVX-512.** The table is against NumPy's AVX2 (X86_V3) loops. On an AVX-512
(X86_V4) CPU NumPy dispatches its own AVX-512 loops for most math functions instead. Where
such a loop is an Intel SVML routine NumPy exports (`__svml_sinh8_ha`, `__svml_sinhf16`, ...)
autojit's kernels call that same routine, for vectors, scalars and loop tails alike, and
agree with NumPy **bit for bit** (`autojit/lower_cpu/svml.py` binds a function only after a
probe at startup finds NumPy's results equal the routine's;
`tests/cpu/lowering/test_numpy_svml.py`).
With NumPy 2.4 on a Xeon: float64 and float32 `tan`, `arcsin`, `arccos`, `arctan`, `sinh`,
`cosh`, `arcsinh`, `arccosh`, `arctanh`, `exp2`, `expm1`, `log2`, `log10`, `log1p`, `cbrt`,
`power`, `arctan2`, and float64 `exp` and `log`. One exception: NumPy computes an operand
with a negative stride (`np.sinh(x[::-1])`) with its scalar `npy_*` (glibc) loop, autojit
still with SVML. The rest (`sin`, `cos`, `tanh`; float32 `exp`, `log`) are NumPy's own
AVX-512 code, documented within 4 ULP of the exact result: against that NumPy add up to 4
ULP (`ulp_bounds.numpy_extra_ulps(function, dtype)`, which `autojit.testing` tolerances
include; 0 for the functions above). The test checks the table there against NumPy with
those loops off (`NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_SKX ..."`, in a child process,
where autojit keeps glibc too).

Machine: {machine}.

## What the numbers mean

* **ULP** (unit in the last place): the distance between autojit's float result and NumPy's,
  counted in representable floats of the result's dtype (`+0` and `-0` count as the same
  point). A bound of 2 means autojit's result is NumPy's or at most the second float next to
  it, either side.
* A bound is the largest error *measured* over the samples below, not a proof: glibc
  documents its own maxima against the exact result (`libm-test-ulps`), NumPy's SIMD loops
  theirs; the distance between the two is what autojit users see.
* **bound** = the larger of the two measured columns: what a user can rely on, whether the
  loop ran through libmvec's vector variants, its scalar remainder, or what a machine
  without libmvec compiles: autojit's own vectorised function where it has one
  (`autojit/lower_cpu/own_math.py`), else a scalar libm call. `autojit.testing` uses it (at least 4)
  as the per-function allowance of `assert_backends_agree`.
* NumPy itself is not correctly rounded: the *correctly rounded* columns give both sides'
  largest distance to the exact result, rounded once (float32: NumPy in float64 rounded to
  float32, over all samples; float64: mpmath at 200 bits, over 2048 finite samples). Where
  autojit is further from NumPy than from the truth, the two libraries err in opposite
  directions.
* **special-value mismatches**: results where one side is finite and the other not, NaN
  against a number, or infinities of different sign; they are counted apart from the ULP
  figure (which is over positions where both are finite). NaN equals NaN whatever its sign.
* **±0 differences**: both sides zero, with different signs (not an error in ULPs).

Samples per function and dtype: half uniform over the natural domain (the boxes in
`autojit/testing/ulp.py`), a third random bit patterns over every finite float (log-uniform
magnitudes of both signs, subnormals included), the rest mixed (binary functions: one argument
of each kind; `power`: integer exponents of negative bases); first chunk: every edge value
(±0, ±inf, NaN, subnormal limits, ±max, ±1, the function's domain boundaries and overflow
thresholds, huge trigonometric arguments, each with 3 neighbours either way), and for binary
functions every pair of them.

The bound holds for the library versions above. glibc's AVX-512 variants (`_ZGVe...`), used
on AVX-512 machines, are different code and were not measured here; nor is the GPU (CUDA's
math library), which `autojit.testing` allows 4 ULP per function.

{missing}

## Summary

{summary}

## Table

{table}
"""


def missing_variants() -> str:
    """Return sentences on libmvec coverage here and in older glibc, and own functions."""
    from autojit.lower_cpu.mathlib import scalar_name, vector_variants
    lacking = [scalar_name(f.name, np.dtype(d)) for f in FUNCTIONS for d in ("f4", "f8")
               if f.name != "sqrt" and not vector_variants(ulp_bounds.MATH_NAMES[f.name],
                                                           np.dtype(d).itemsize, f.arity)]
    from autojit.lower_cpu.own_math import OWN_MATH
    own = ", ".join(f"`{name}`" for name in sorted(OWN_MATH)) or "none"
    older = ("glibc 2.22-2.34 vectorise only `sin`, `cos`, `exp`, `log` and `pow` (and "
             "`sincos`); there the other functions stay scalar libm calls (or autojit's own "
             "function), whose bound is the *without libmvec* column. autojit's own "
             f"vectorised implementations, used only where libmvec lacks a function: {own}.")
    if not lacking:
        return ("Libmvec variants: every function has one on this machine (glibc ≥ 2.35 has "
                "them all); `sqrt` is LLVM's `llvm.sqrt` intrinsic, correctly rounded. "
                + older)
    return ("Without a libmvec variant here (scalar libm calls): " + ", ".join(lacking)
            + ". " + older)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print (and write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=float, default=1e7)
    parser.add_argument("--chunk", type=int, default=1 << 20)
    parser.add_argument("--only", default="", help="comma-separated NumPy names")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--no-scalar", action="store_true",
                        help="skip the run without libmvec")
    parser.add_argument("--write", default="", help="write the ULP document here")
    parser.add_argument("--python", action="store_true", help="print the ULP_BOUNDS table")
    options = parser.parse_args(argv)
    names = [n for n in options.only.split(",") if n] or [f.name for f in FUNCTIONS]
    results = run(names, options.dtypes.split(","), int(options.samples), options.chunk,
                  not options.no_scalar)
    table = markdown_table(results)
    print(table)
    if options.python:
        print(python_table(results))
    if options.write:
        command = "python benchmarks/ulp.py " + " ".join(argv if argv is not None
                                                         else sys.argv[1:])
        with open(options.write, "w") as f:
            f.write(_DOC.format(command=command.strip(), machine=machine_description(),
                                missing=missing_variants(), summary=summary(results),
                                table=table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
