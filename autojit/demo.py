"""A tour of autojit on generated data: ``autojit demo`` or ``run_demo()``.

Three elementwise workloads, each timed under plain NumPy and under ``@autoroute``:

* ``chain``: ``tanh(cos(exp(sin x)))`` on 10M float64 values (four passes fused into one);
* ``image normalise``: ``clip((img - mean) * inv_std * 1.0123 - 0.02, 0, None) ** 1.8`` on a
  (4, 1080, 1920) float32 stack, ``mean`` and ``inv_std`` Python floats;
* ``gbm step``: one Monte-Carlo geometric-Brownian-motion step ``S * exp(drift + scale * Z)``
  on 2M float64 paths.

Data come from a seeded generator, so nothing is downloaded and every run sees the same
numbers. ``scale`` shrinks or grows every workload (the image keeps 4 frames of 1920 columns
and scales its rows).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from autojit import autoroute

#: Warm timings are the median of this many calls.
REPEATS = 5


def chain(x: np.ndarray) -> np.ndarray:
    """Return ``tanh(cos(exp(sin x)))``: four transcendental passes in NumPy, one kernel fused."""
    return np.tanh(np.cos(np.exp(np.sin(x))))


def normalise(img: np.ndarray, mean: float, inv_std: float) -> np.ndarray:
    """Return the normalised, clipped, gamma-corrected image (same dtype as ``img``)."""
    return np.clip((img - mean) * inv_std * 1.0123 - 0.02, 0.0, None) ** 1.8


def gbm_step(S: np.ndarray, Z: np.ndarray, drift: float, scale: float) -> np.ndarray:
    """Return prices one geometric-Brownian-motion step after ``S`` given normals ``Z``."""
    return S * np.exp(drift + scale * Z)


@dataclass(frozen=True)
class Workload:
    """One demo row: a NumPy function, its arguments and how tightly results must match."""

    name: str
    func: Callable[..., np.ndarray]
    args: tuple[object, ...]
    rtol: float
    atol: float


def make_workloads(scale: float = 1.0, seed: int = 0) -> list[Workload]:
    """Return the three demo workloads with deterministic data sized by ``scale``."""
    rng = np.random.default_rng(seed)
    n_chain = max(1, round(10_000_000 * scale))
    x = rng.uniform(-3.0, 3.0, n_chain)
    rows = max(1, round(1080 * scale))
    img = (rng.random((4, rows, 1920), dtype=np.float32) * 255.0).astype(np.float32)
    mean, inv_std = float(img.mean()), float(1.0 / img.std())
    n_paths = max(1, round(2_000_000 * scale))
    prices = 100.0 * np.exp(rng.normal(0.0, 0.2, n_paths))
    normals = rng.standard_normal(n_paths)
    rate, sigma, dt = 0.03, 0.2, 1.0 / 252.0
    drift, vol = (rate - 0.5 * sigma**2) * dt, sigma * dt**0.5
    # Transcendentals carry a few ULP of error; rtol is that, times headroom, per dtype.
    return [
        Workload(f"chain tanh(cos(exp(sin x))) f64[{n_chain}]", chain, (x,), 1e-10, 1e-12),
        Workload(f"image normalise f32[4,{rows},1920]", normalise, (img, mean, inv_std),
                 1e-5, 1e-6),
        Workload(f"gbm step f64[{n_paths}]", gbm_step, (prices, normals, drift, vol),
                 1e-10, 0.0),
    ]


def _median_ms(func: Callable[[], object], repeats: int = REPEATS) -> float:
    """Return the median wall time of ``repeats`` calls of ``func``, in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _matches(got: object, want: np.ndarray, rtol: float, atol: float) -> bool:
    """Return True when ``got`` has ``want``'s dtype and shape and close values."""
    got = np.asarray(got)
    return (got.dtype == want.dtype and got.shape == want.shape
            and bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)))


def run_workload(work: Workload) -> dict[str, object]:
    """Time ``work`` under NumPy and autojit; return its row as a dict.

    Keys: workload, route, kernels, numpy_ms, first_call_ms, autojit_ms, speedup, matches,
    fallback (the reason autojit ran plain Python, or None).
    """
    routed = autoroute(work.func)
    want = work.func(*work.args)
    numpy_ms = _median_ms(lambda: work.func(*work.args))
    with warnings.catch_warnings():
        # A fallback is reported in the row; one warning per run is noise here.
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        got = routed(*work.args)
        first_ms = 1e3 * (time.perf_counter() - start)
        autojit_ms = _median_ms(lambda: routed(*work.args))
        inspection = routed.inspect(*work.args)
    return {
        "workload": work.name,
        "route": inspection.route,
        "kernels": len(inspection.kernels),
        "numpy_ms": numpy_ms,
        "first_call_ms": first_ms,
        "autojit_ms": autojit_ms,
        "speedup": numpy_ms / autojit_ms if autojit_ms > 0 else float("inf"),
        "matches": _matches(got, want, work.rtol, work.atol),
        "fallback": inspection.fallback_reason,
    }


#: (header, width, align) of each printed column; fixed widths so rows print as they finish.
_COLUMNS = (("workload", 42, "<"), ("route", 6, "<"), ("kernels", 7, ">"),
            ("NumPy ms", 10, ">"), ("autojit ms", 10, ">"), ("speed-up", 8, ">"),
            ("first call ms", 13, ">"), ("matches NumPy", 13, ">"))


def _format_line(cells: tuple[str, ...]) -> str:
    """Return ``cells`` laid out in the table's columns."""
    parts = [f"{cell:{align}{width}}" for cell, (_, width, align) in zip(cells, _COLUMNS,
                                                                         strict=True)]
    return "  ".join(parts).rstrip()


def _format_row(row: dict[str, object]) -> str:
    """Return the printed line of one result row."""
    return _format_line((
        str(row["workload"]), str(row["route"]), str(row["kernels"]),
        f"{row['numpy_ms']:.2f}", f"{row['autojit_ms']:.2f}", f"{row['speedup']:.2f}x",
        f"{row['first_call_ms']:.1f}", "yes" if row["matches"] else "no",
    ))


def run_demo(scale: float = 1.0, out: TextIO = sys.stdout) -> list[dict[str, object]]:
    """Run every workload, print one table row per workload on ``out``; return the rows.

    Each row is :func:`run_workload`'s dict. Warm times are the median of 5 calls after a
    first, compiling call whose time is its own column.
    """
    print(f"autojit demo (size scale {scale:g}): warm times are medians of {REPEATS} calls",
          file=out)
    print(_format_line(tuple(name for name, _, _ in _COLUMNS)), file=out)
    print("  ".join("-" * width for _, width, _ in _COLUMNS), file=out, flush=True)
    rows = []
    for work in make_workloads(scale):
        rows.append(run_workload(work))
        print(_format_row(rows[-1]), file=out, flush=True)
    for row in rows:
        if row["fallback"]:
            print(f"note: {row['workload']} ran as plain Python: {row['fallback']}", file=out)
    out.flush()
    return rows


if __name__ == "__main__":
    run_demo(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
