"""Side by side: the workloads in NumPy, numexpr, Numba, JAX, torch.compile and autojit.

Run:  python benchmarks/compare.py [--only NAME] [--repeat N] [--peers numpy,autojit,...]
                                   [--scale S] [--plot FILE.png] [--json FILE] [--quiet]

One process, the same inputs for every peer (``benchmarks/workloads.py`` defines them).
Each peer runs only where installed (``pip install -e ".[bench]"``) and where it can express
the workload. Its first call (compile included; autojit and torch.compile get fresh on-disk
caches) is timed alone and its result checked against NumPy; a mismatch or an error is
reported as a failure and never timed. Then one more warm-up call. The ``--repeat`` timed
samples (the 100-element add: per call, from batches of 2000 calls) are taken in turns,
one per peer per round, so a slow spell of the shared machine falls on every peer alike;
before each sample a 0.2 s pause lets the previous peer's worker threads go idle, and one
untimed call warms the peer's own caches and threads again. The table prints each median
and its speed-up over NumPy (NumPy's median ÷ the peer's: above 1 is faster), then every
peer's first-call time, the machine and the exact command. Ratios are only
comparable within one run: a shared machine is noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import platform
import shlex
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def load_workloads() -> ModuleType:
    """Import ``workloads.py`` from this folder, by path.

    Running a script puts its folder first on ``sys.path``, where ``coverage.py`` would
    shadow the ``coverage`` package that numba imports: the folder is taken off first.
    """
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or os.getcwd()).resolve() != here]
    name = "autojit_bench_workloads"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, here / "workloads.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_workloads = load_workloads()
BUILDERS, PEERS, WORKLOADS = _workloads.BUILDERS, _workloads.PEERS, _workloads.WORKLOADS
Impl, Workload = _workloads.Impl, _workloads.Workload

#: seconds to pause between peers, so one library's spinning worker threads go idle
SETTLE_S = 0.2


@dataclass
class Cell:
    """One peer on one workload: ``status`` is ``ok``, ``n/a`` (cannot express it),
    ``missing`` (not installed) or ``failed`` (error or mismatch, then ``error`` says why)."""

    status: str
    median_s: float | None = None
    samples_s: list[float] = field(default_factory=list)
    first_call_s: float | None = None
    error: str | None = None


def check(work: Workload, got: Any, want: Any) -> str | None:
    """Return None when ``got`` matches NumPy's ``want`` (kind, dtype, shape, values)."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return f"got {type(got).__name__}, NumPy gives a tuple of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            problem = check(work, g, w)
            if problem:
                return f"output {i}: {problem}"
        return None
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{list(got.shape)}, NumPy gives {want.dtype}{list(want.shape)}"
    if not np.allclose(got, want, rtol=work.rtol, atol=work.atol, equal_nan=True):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        rel = diff / np.maximum(np.abs(want.astype(np.float64)), np.finfo(np.float64).tiny)
        return (f"max abs difference {np.nanmax(diff):.3g}, max rel {np.nanmax(rel):.3g} "
                f"(rtol {work.rtol:g}, atol {work.atol:g})")
    return None


def time_samples(impl: Impl, args: tuple[Any, ...], repeat: int, batch: int) -> list[float]:
    """Return ``repeat`` samples of seconds per call, each over ``batch`` calls."""
    call = impl.call
    samples = []
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(batch):
                call(*args)
            samples.append((time.perf_counter() - start) / batch)
    finally:
        if gc_was_on:
            gc.enable()
    return samples


@dataclass
class _Ready:
    """A peer past its checked first call, waiting for its timed samples."""

    impl: Impl
    args: tuple[Any, ...]
    first_call_s: float
    samples_s: list[float] = field(default_factory=list)


def _error_cell(exc: Exception) -> Cell:
    return Cell("failed", error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")


def start(work: Workload, peer: str, args: tuple[Any, ...], want: Any) -> Cell | _Ready:
    """Build one peer, time its first call alone, check it against NumPy and warm it up;
    return the peer ready for timing, or the Cell that says why it is not."""
    try:
        impl = BUILDERS[peer](work)
    except ImportError as exc:
        return Cell("missing", error=str(exc))
    if impl is None:
        return Cell("n/a")
    try:
        peer_args = impl.prepare(args)
        begin = time.perf_counter()
        result = impl.call(*peer_args)
        first = time.perf_counter() - begin
        problem = check(work, impl.to_numpy(result), want)
        del result
        if problem:
            return Cell("failed", first_call_s=first, error=f"differs from NumPy: {problem}")
        impl.call(*peer_args)  # one more warm-up call
    except Exception as exc:  # a peer's failure is a result, reported in the table
        return _error_cell(exc)
    return _Ready(impl, peer_args, first)


def time_round_robin(work: Workload, ready: dict[str, _Ready], repeat: int,
                     settle_s: float) -> dict[str, Cell]:
    """Take ``repeat`` samples of every ready peer in turns (A B C, A B C, ...), so a slow
    spell of a shared machine falls on all of them alike. Before each sample: a pause (the
    previous peer's worker threads go idle) and one untimed call (its own caches, pools
    and threads warm again)."""
    cells: dict[str, Cell] = {}
    for _ in range(repeat):
        for peer, state in ready.items():
            if peer in cells:
                continue
            time.sleep(settle_s)
            try:
                state.impl.call(*state.args)
                state.samples_s += time_samples(state.impl, state.args, 1, work.batch)
            except Exception as exc:
                cells[peer] = _error_cell(exc)
    for peer, state in ready.items():
        cells.setdefault(peer, Cell("ok", statistics.median(state.samples_s), state.samples_s,
                                    state.first_call_s))
    return cells


def measure(work: Workload, peer: str, args: tuple[Any, ...], want: Any,
            repeat: int) -> Cell:
    """Build, first-call, check, warm up and time one peer on one workload alone."""
    state = start(work, peer, args, want)
    if isinstance(state, Cell):
        return state
    return time_round_robin(work, {peer: state}, repeat, 0.0)[peer]


def run(names: list[str] | None = None, peers: list[str] | None = None, repeat: int = 5,
        scale: float = 1.0, log: Any = None, settle_s: float = SETTLE_S,
        ) -> dict[str, dict[str, Cell]]:
    """Measure each workload (all, or those named) under each peer; return cells by
    workload name, then peer. ``log`` (a file) gets one progress line per cell."""
    peers = list(peers or PEERS)
    table: dict[str, dict[str, Cell]] = {}
    for work in WORKLOADS:
        if names and work.name not in names:
            continue
        args = work.make_inputs(scale)
        want = work.reference(*args)
        row: dict[str, Cell | _Ready] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fallback shows up as a slow cell
            for peer in peers:
                row[peer] = start(work, peer, args, want)
                gc.collect()
                time.sleep(settle_s)
            ready = {peer: state for peer, state in row.items() if isinstance(state, _Ready)}
            row.update(time_round_robin(work, ready, repeat, settle_s))
        table[work.name] = cells = {peer: row[peer] for peer in peers}
        del ready, row
        gc.collect()
        if log is not None:
            for peer, cell in cells.items():
                shown = _cell_text(cell, work, None) if cell.status == "ok" else cell.status
                print(f"  {work.name:10s} {peer:8s} {shown}", file=log, flush=True)
    return table


# --- reporting ------------------------------------------------------------------------------

def _scale_of(work: Workload) -> float:
    return 1e6 if work.unit == "µs" else 1e3


def _cell_text(cell: Cell, work: Workload, base: float | None) -> str:
    """``"12.3 (4.2x)"``: the median in the row's unit and the speed-up over NumPy."""
    if cell.status != "ok" or cell.median_s is None:
        return {"n/a": "–", "missing": "not installed", "failed": "FAILED"}.get(
            cell.status, cell.status)
    text = _number(cell.median_s * _scale_of(work))
    if base:
        ratio = base / cell.median_s
        text += f" ({ratio:.2f}x)" if ratio < 10 else f" ({ratio:.1f}x)"
    return text


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else what ``platform`` says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, ``"9.8/7.9/4.8"`` (``"?"`` where unknown)."""
    return "/".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


_LOAD_AT_START = load_average()


def _number(value: float) -> str:
    """Three significant digits, without an exponent: 0.863, 52.7, 2613."""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def machine_line() -> str:
    """Cores, CPU model, load and library versions: where the numbers come from."""
    model = cpu_model()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return (f"machine: {os.cpu_count()} cores ({usable} usable), {model}, load average "
            f"{_LOAD_AT_START} at start, {load_average()} at end; "
            f"Python {platform.python_version()}, {_versions()}")


def _versions() -> str:
    """Installed versions of NumPy and the peers (without importing the peers)."""
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for name in ("numpy", "numexpr", "numba", "jax", "torch", "autojit"):
        with contextlib.suppress(PackageNotFoundError):
            out.append(f"{name} {version(name)}")
    return ", ".join(out)


def command_line() -> str:
    """The exact command this process was started with."""
    return shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))


def format_table(table: dict[str, dict[str, Cell]], repeat: int, scale: float = 1.0) -> str:
    """The medians with speed-ups over NumPy, then first calls, failures, machine, command."""
    works = [w for w in WORKLOADS if w.name in table]
    peers = list(next(iter(table.values()))) if table else []
    header = ["workload", "unit", *peers]
    lines = [header]
    for work in works:
        row = table[work.name]
        numpy_cell = row.get("numpy")
        base = numpy_cell.median_s if numpy_cell and numpy_cell.status == "ok" else None
        lines.append([work.label, work.unit, *(
            _cell_text(row[p], work, None if p == "numpy" else base) for p in peers)])
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    batched = [w for w in works if w.batch > 1]
    intro = f"median of {repeat} sample{'s' * (repeat > 1)}, taken in turns across peers" + "".join(
        f" ({w.name}: µs per call, each sample a batch of {w.batch} calls)" for w in batched)
    intro += "; (Nx) = speed-up over NumPy (NumPy's median ÷ this one): above 1 is faster"
    if scale != 1.0:
        intro += f"; input sizes scaled by {scale:g} (the labels give full sizes)"
    out = [intro, _join(lines[0], widths),
           "  ".join("-" * w for w in widths), *(_join(r, widths) for r in lines[1:])]
    first = [["first call, compile included (fresh caches)", "", *peers]]
    for work in works:
        row = table[work.name]
        first.append([work.label, "ms", *(
            "–" if row[p].first_call_s is None else f"{row[p].first_call_s * 1e3:.0f}"
            for p in peers)])
    widths = [max(len(r[i]) for r in first) for i in range(len(header))]
    out += ["", *(_join(r, widths) for r in first)]
    failures = [f"FAILED {work.name} / {p}: {row[p].error}" for work in works
                for row in [table[work.name]] for p in peers if row[p].status == "failed"]
    missing = sorted({p for row in table.values() for p in peers if row[p].status == "missing"})
    out += failures
    if missing:
        out.append("not installed: " + ", ".join(missing))
    out += [machine_line(), f"command: {command_line()}"]
    return "\n".join(out)


def _join(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()


def to_json(table: dict[str, dict[str, Cell]], repeat: int, scale: float) -> dict[str, Any]:
    """Everything measured, plus where and how."""
    return {"machine": machine_line(), "command": command_line(), "repeat": repeat,
            "scale": scale, "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "workloads": {name: {"label": next(w.label for w in WORKLOADS if w.name == name),
                                 "cells": {p: asdict(c) for p, c in row.items()}}
                          for name, row in table.items()}}


def plot(table: dict[str, dict[str, Cell]], path: str, title: str = "") -> None:
    """Grouped bars of the speed-up over NumPy (log scale), one group per workload."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    works = [w for w in WORKLOADS if w.name in table]
    peers = [p for p in next(iter(table.values())) if p != "numpy"] if table else []
    colors = {"numexpr": "#8c8c8c", "numba": "#1f77b4", "jax": "#2ca02c", "torch": "#ff7f0e",
              "autojit": "#d62728"}
    width = 0.8 / max(1, len(peers))
    fig, ax = plt.subplots(figsize=(13, 5.8))
    labels = []
    for gi, work in enumerate(works):
        row = table[work.name]
        base = row["numpy"].median_s if "numpy" in row and row["numpy"].status == "ok" else None
        unit = "µs" if work.unit == "µs" else "ms"
        labels.append(work.label.replace(", ", "\n", 1) + (
            f"\nNumPy {_number(base * _scale_of(work))} {unit}" if base else ""))
        for pi, peer in enumerate(peers):
            x = gi + (pi - (len(peers) - 1) / 2) * width
            cell = row[peer]
            if base and cell.status == "ok" and cell.median_s:
                ratio = base / cell.median_s
                ax.bar(x, ratio, width, color=colors.get(peer), label=peer if gi == 0 else None)
                ax.text(x, ratio * 1.06, f"{ratio:.2g}", ha="center", va="bottom", fontsize=6.5,
                        rotation=90)
            else:
                mark = {"n/a": "n/a", "missing": "", "failed": "✗ failed"}.get(cell.status, "")
                ax.text(x, 1.05, mark, ha="center", va="bottom", fontsize=7, rotation=90,
                        color="#b00" if cell.status == "failed" else "#555")
                if gi == 0:
                    ax.bar(x, 0, width, color=colors.get(peer), label=peer)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(works)), labels, fontsize=7.5)
    ax.set_ylabel("speed-up over NumPy (NumPy time ÷ time), log scale: higher is faster")
    ax.set_title(title or "median times relative to NumPy, one process", fontsize=9)
    ax.legend(ncol=len(peers), fontsize=8, loc="upper left")
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, 0.05), high * 2.0)
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.text(0.01, 0.005, "n/a: the peer cannot express the workload;  ✗ failed: differs from "
             "NumPy or raised (see the printed table);  no bar, no mark: not installed.  "
             "Labels: the workload and NumPy's median time.", fontsize=7, color="#444")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; return 1 if any peer failed or disagreed with NumPy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[],
                        help="workload name(s), comma-separated or repeated: "
                             + ", ".join(w.name for w in WORKLOADS))
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per median")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated, from {','.join(PEERS)} (default: all)")
    parser.add_argument("--scale", type=float, default=1.0, help="input size multiplier")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the speed-ups as a bar chart")
    parser.add_argument("--json", metavar="FILE", help="write every measurement as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    opts = parser.parse_args(argv)

    names = [n for item in opts.only for n in item.split(",") if n]
    peers = [p for p in opts.peers.split(",") if p]
    unknown = [n for n in names if n not in {w.name for w in WORKLOADS}]
    unknown += [p for p in peers if p not in PEERS]
    if unknown or opts.repeat < 1:
        parser.error(f"unknown workload or peer {unknown}" if unknown else "--repeat < 1")

    table = run(names, peers, opts.repeat, opts.scale, None if opts.quiet else sys.stderr)
    print(format_table(table, opts.repeat, opts.scale))
    if opts.json:
        Path(opts.json).write_text(json.dumps(to_json(table, opts.repeat, opts.scale), indent=1))
    if opts.plot:
        scaled = f", inputs scaled by {opts.scale:g}" if opts.scale != 1.0 else ""
        plot(table, opts.plot, f"median of {opts.repeat}, one process, {os.cpu_count()} cores "
             f"({cpu_model()}), shared and noisy (load average {_LOAD_AT_START} at start)"
             f"{scaled}; "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}")
    failed = any(c.status == "failed" for row in table.values() for c in row.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
