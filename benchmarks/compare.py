"""Side-by-side timings: workloads (rows) x implementations (columns), one process, one run.

Run:  python benchmarks/compare.py [--scale S] [--repeats R]

Each cell is the median time of one call (unit per row) and, for implementations other than
NumPy, the speed-up over NumPy in parentheses. Every result is checked against NumPy; a
mismatch is marked ``!`` and explained under the table. ``-`` means the implementation does
not apply to (or is not installed for) that row.

To add an implementation (numexpr, Numba, JAX, torch...), append an :class:`Implementation`
whose ``build(workload)`` returns a callable taking the workload's arguments, or None.
Ratios are only meaningful side by side in one run: these machines are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# A fresh on-disk cache, so that the first-call row measures a real compile.
os.environ.setdefault("AUTOJIT_CACHE_DIR", tempfile.mkdtemp(prefix="autojit-compare-"))

from autojit import autoroute  # noqa: E402  (after choosing the cache folder)

Fn = Callable[..., object]


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def add(a, b):
    return a + b


@dataclass(frozen=True)
class Workload:
    """A row: the NumPy function (the oracle), its arguments and how to time it.

    ``mode`` is ``"warm"`` (median of warm calls) or ``"first_call"`` (one call on a freshly
    built implementation, compile included). ``extra`` holds per-implementation inputs
    such as a numexpr string, keyed by implementation name.
    """

    name: str
    func: Fn
    make_args: Callable[[], tuple[object, ...]]
    unit: str = "ms"
    mode: str = "warm"
    rtol: float = 1e-10
    atol: float = 1e-12
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Implementation:
    """A column: ``build(workload)`` returns a callable for the row, or None if n/a."""

    name: str
    build: Callable[[Workload], Fn | None]


def _numpy(work: Workload) -> Fn | None:
    """Return the plain NumPy function; it has no compile step to time."""
    return None if work.mode == "first_call" else work.func


def _autojit(work: Workload) -> Fn | None:
    """Return a freshly decorated function, so a first call compiles."""
    return autoroute(work.func)


def _random(n: int, seed: int = 0) -> np.ndarray:
    """Return ``n`` deterministic float64 values in [-3, 3)."""
    return np.random.default_rng(seed).uniform(-3.0, 3.0, n)


def workloads(scale: float = 1.0) -> list[Workload]:
    """Return the rows to measure, with array sizes multiplied by ``scale``."""
    n = max(1, round(10_000_000 * scale))
    big = f"{n // 1_000_000}M" if n % 1_000_000 == 0 else str(n)
    return [
        Workload(f"chain tanh(cos(exp(sin x))) f64[{big}]", chain, lambda: (_random(n),),
                 extra={"numexpr": "tanh(cos(exp(sin(x))))"}),
        Workload("add a + b f64[100]", add, lambda: (_random(100, 1), _random(100, 2)),
                 unit="us", extra={"numexpr": "a + b"}),
        Workload(f"first call (compile) chain f64[{big}]", chain, lambda: (_random(n),),
                 mode="first_call"),
    ]


IMPLEMENTATIONS: list[Implementation] = [
    Implementation("numpy", _numpy),
    Implementation("autojit", _autojit),
]

_UNITS = {"ms": 1e3, "us": 1e6}


def time_warm(fn: Fn, args: tuple[object, ...], repeats: int) -> float:
    """Return the median seconds per call over ``repeats`` samples of warm calls.

    Fast functions are called many times per sample so the clock's resolution and the
    loop's own cost stay small against the measured time.
    """
    fn(*args)
    start = time.perf_counter()
    fn(*args)
    once = max(time.perf_counter() - start, 1e-9)
    number = max(1, min(100_000, int(0.02 / once)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def time_first_call(fn: Fn, args: tuple[object, ...]) -> tuple[float, object]:
    """Return the seconds the first call of ``fn`` took and its result."""
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def check(work: Workload, got: object, want: object) -> str | None:
    """Return None when ``got`` matches NumPy's ``want`` (dtype, shape, values), else why."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{list(got.shape)}, NumPy gives {want.dtype}{list(want.shape)}"
    if not np.allclose(got, want, rtol=work.rtol, atol=work.atol, equal_nan=True):
        return f"max abs difference {np.nanmax(np.abs(got - want)):.3g}"
    return None


def measure(work: Workload, impl: Implementation, args: tuple[object, ...], want: object,
            repeats: int) -> tuple[float | None, str | None]:
    """Return (seconds or None if n/a, mismatch reason or None) for one table cell."""
    fn = impl.build(work)
    if fn is None:
        return None, None
    if work.mode == "first_call":
        seconds, got = time_first_call(fn, args)
    else:
        seconds, got = time_warm(fn, args, repeats), fn(*args)
    return seconds, check(work, got, want)


def run(scale: float = 1.0, repeats: int = 5) -> list[dict[str, object]]:
    """Measure every workload under every implementation; return one dict per row.

    Each row maps ``"workload"`` and ``"unit"`` to text and each implementation's name to
    ``(seconds | None, mismatch | None)``.
    """
    rows = []
    for work in workloads(scale):
        args = work.make_args()
        want = work.func(*args)
        row: dict[str, object] = {"workload": work.name, "unit": work.unit}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fallback shows up as a slow cell instead
            for impl in IMPLEMENTATIONS:
                row[impl.name] = measure(work, impl, args, want, repeats)
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, object]]) -> str:
    """Return the rows as an aligned text table, with mismatches listed below it."""
    names = [impl.name for impl in IMPLEMENTATIONS]
    lines, notes = [], []
    for row in rows:
        factor = _UNITS[str(row["unit"])]
        base = row["numpy"][0]  # type: ignore[index]
        cells = [str(row["workload"]), str(row["unit"])]
        for name in names:
            seconds, problem = row[name]  # type: ignore[misc]
            cells.append(_format_cell(seconds, base, factor, name) + ("!" if problem else ""))
            if problem:
                notes.append(f"! {row['workload']} / {name}: {problem}")
        lines.append(cells)
    header = ["workload", "unit", *names]
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    out = [_join(header, widths), "  ".join("-" * w for w in widths)]
    out += [_join(cells, widths) for cells in lines]
    return "\n".join(out + notes)


def _format_cell(seconds: float | None, base: float | None, factor: float, name: str) -> str:
    """Return ``"12.34"`` or ``"12.34 (3.1x)"`` (speed-up over NumPy), or ``"-"``."""
    if seconds is None:
        return "-"
    text = f"{seconds * factor:.2f}"
    if name != "numpy" and base:
        ratio = base / seconds
        text += f" ({ratio:.1f}x)" if ratio >= 1 else f" ({ratio:.2g}x)"
    return text


def _join(cells: list[str], widths: list[int]) -> str:
    """Return one table line: the workload left-aligned, everything else right-aligned."""
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()


def main(argv: list[str] | None = None) -> int:
    """Print the comparison table; return 1 if any implementation disagreed with NumPy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="size multiplier")
    parser.add_argument("--repeats", type=int, default=5, help="samples per median")
    opts = parser.parse_args(argv)
    rows = run(opts.scale, opts.repeats)
    print(format_table(rows))
    mismatched = any(row[i.name][1] for row in rows for i in IMPLEMENTATIONS)  # type: ignore[index]
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
