"""Side by side: the workloads in NumPy, numexpr, Numba, JAX, torch.compile and autojit.

Run:  python benchmarks/compare.py [--section arrays|loops|all] [--only NAME] [--repeat N]
                                   [--peers numpy,autojit,...] [--scale S] [--plot FILE.png]
                                   [--json FILE] [--quiet]

Two sections: ``arrays`` (the default, what earlier runs timed: ``benchmarks/workloads.py``,
straight-line array programs) and ``loops`` (``--section loops`` or ``all``, or ``--only``
one of its names: ``benchmarks/loops.py``, issue 15's loop programs, with Numba in array and
explicit-loop style, the faster counted, JAX ``lax.fori_loop`` versions, and how each
autojit call ran: compiled, or plain Python and why). ``--peers numba`` selects both Numba
versions in the loops section.

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


def load_loops() -> ModuleType:
    """Import ``loops.py`` from this folder, by path (after ``workloads.py``, which it uses)."""
    load_workloads()
    name = "autojit_bench_loops"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parent / "loops.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_workloads = load_workloads()
BUILDERS, PEERS, WORKLOADS = _workloads.BUILDERS, _workloads.PEERS, _workloads.WORKLOADS
Impl, Workload = _workloads.Impl, _workloads.Workload
_loops = load_loops()


@dataclass(frozen=True)
class Section:
    """A table of its own: workloads, a builder per peer, peer names standing for several
    (``numba`` = both Numba versions), and peers counted as one, the fastest (``best``:
    column label -> the peers it is the fastest of)."""

    name: str
    workloads: tuple[Any, ...]
    builders: dict[str, Any]
    peers: tuple[str, ...]
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    best: dict[str, tuple[str, ...]] = field(default_factory=dict)
    show_tolerances: bool = False   # print each row's allclose tolerances under the table


SECTIONS: dict[str, Section] = {
    "arrays": Section("arrays", WORKLOADS, BUILDERS, PEERS),
    "loops": Section("loops", _loops.LOOP_WORKLOADS, _loops.LOOP_BUILDERS, _loops.LOOP_PEERS,
                     _loops.PEER_ALIASES, {"numba": _loops.PEER_ALIASES["numba"]},
                     show_tolerances=True),
}
#: the reported unit -> its multiple of a second (``ns/iter`` is also divided by iterations)
UNIT_SCALE: dict[str, float] = {"ms": 1e3, "µs": 1e6, "ns/iter": 1e9}

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
    note: str | None = None      # how the calls ran, where the peer says (autojit: route)
    iterations: int = 1          # loop iterations per call (``ns/iter`` rows divide by it)


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


def start(work: Workload, peer: str, args: tuple[Any, ...], want: Any,
          builders: dict[str, Any] | None = None) -> Cell | _Ready:
    """Build one peer, time its first call alone, check it against NumPy and warm it up;
    return the peer ready for timing, or the Cell that says why it is not."""
    try:
        impl = (builders or BUILDERS)[peer](work)
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
        with contextlib.suppress(Exception):  # a note is a remark, never a failure
            cells[peer].note = state.impl.note()
    return cells


def measure(work: Workload, peer: str, args: tuple[Any, ...], want: Any,
            repeat: int) -> Cell:
    """Build, first-call, check, warm up and time one peer on one workload alone."""
    state = start(work, peer, args, want)
    if isinstance(state, Cell):
        return state
    return time_round_robin(work, {peer: state}, repeat, 0.0)[peer]


def section_peers(section: Section, peers: list[str] | None) -> list[str]:
    """The section's peers among ``peers`` (all of them, in the section's order, by default),
    in the order given, aliases expanded: a peer the section has no builder for is left out."""
    if not peers:
        return list(section.peers)
    expanded = [q for p in peers for q in section.aliases.get(p, (p,))]
    return [p for p in dict.fromkeys(expanded) if p in section.peers]


def run(names: list[str] | None = None, peers: list[str] | None = None, repeat: int = 5,
        scale: float = 1.0, log: Any = None, settle_s: float = SETTLE_S,
        section: str = "arrays") -> dict[str, dict[str, Cell]]:
    """Measure each workload of ``section`` (all, or those named) under each peer; return
    cells by workload name, then peer. ``log`` (a file) gets one progress line per cell."""
    part = SECTIONS[section]
    peers = section_peers(part, peers)
    table: dict[str, dict[str, Cell]] = {}
    for work in part.workloads:
        if names and work.name not in names:
            continue
        args = work.make_inputs(scale)
        want = work.reference(*args)
        iterations = getattr(work, "iterations", None)
        row: dict[str, Cell | _Ready] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fallback shows up as a slow cell
            for peer in peers:
                row[peer] = start(work, peer, args, want, part.builders)
                gc.collect()
                time.sleep(settle_s)
            ready = {peer: state for peer, state in row.items() if isinstance(state, _Ready)}
            row.update(time_round_robin(work, ready, repeat, settle_s))
        table[work.name] = cells = {peer: row[peer] for peer in peers}
        for cell in cells.values():
            cell.iterations = iterations(args) if iterations else 1
        del ready, row
        gc.collect()
        if log is not None:
            for peer, cell in cells.items():
                shown = _cell_text(cell, work, None) if cell.status == "ok" else cell.status
                print(f"  {work.name:10s} {peer:8s} {shown}", file=log, flush=True)
    return table


# --- reporting ------------------------------------------------------------------------------

def _scale_of(work: Workload, cell: Cell | None = None) -> float:
    """Seconds -> the row's unit (per loop iteration for ``ns/iter`` rows)."""
    return UNIT_SCALE[work.unit] / (cell.iterations if cell else 1)


def _cell_text(cell: Cell, work: Workload, base: float | None) -> str:
    """``"12.3 (4.2x)"``: the median in the row's unit and the speed-up over NumPy."""
    if cell.status != "ok" or cell.median_s is None:
        return {"n/a": "–", "missing": "not installed", "failed": "FAILED"}.get(
            cell.status, cell.status)
    text = _number(cell.median_s * _scale_of(work, cell))
    if base:
        text += f" ({_ratio(base / cell.median_s)})"
    if cell.note and cell.note.startswith("python"):
        text += " [python]"  # it ran as plain Python: the reason is printed under the table
    return text


def _ratio(ratio: float) -> str:
    """``"0.042x"``, ``"0.98x"``, ``"26.6x"``: two decimals, or two digits below 0.1."""
    return f"{ratio:.2g}x" if ratio < 0.1 else f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"


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


def _fastest(row: dict[str, Cell], among: tuple[str, ...]) -> tuple[str, float] | None:
    """The fastest timed peer among ``among`` and its median (None when none was timed)."""
    timed = [(row[p].median_s, p) for p in among
             if p in row and row[p].status == "ok" and row[p].median_s]
    return (min(timed)[1], min(timed)[0]) if timed else None


def _best_cells(section: Section, row: dict[str, Cell], work: Workload) -> list[str]:
    """Per ``best`` group: the fastest member (``"12.3 loops"``), then autojit's speed-up
    over it (``"1.05x"``, above 1: autojit is faster)."""
    out = []
    for among in section.best.values():
        fastest = _fastest(row, among)
        mine = row.get("autojit")
        out.append("–" if fastest is None else
                   f"{_number(fastest[1] * _scale_of(work, row[fastest[0]]))} "
                   f"{fastest[0].rsplit('-', 1)[-1]}")
        out.append("–" if fastest is None or mine is None or mine.status != "ok"
                   or not mine.median_s else _ratio(fastest[1] / mine.median_s))
    return out


def format_table(table: dict[str, dict[str, Cell]], repeat: int, scale: float = 1.0,
                 section: str = "arrays") -> str:
    """The medians with speed-ups over NumPy, then first calls, failures, how the peers
    that say so ran (autojit: compiled or plain Python, and why), machine, command."""
    part = SECTIONS[section]
    works = [w for w in part.workloads if w.name in table]
    peers = list(next(iter(table.values()))) if table else []
    best = [c for label in part.best for c in (f"{label} best", f"autojit vs {label}")]
    header = ["workload", "unit", *peers, *best]
    lines = [header]
    for work in works:
        row = table[work.name]
        numpy_cell = row.get("numpy")
        base = numpy_cell.median_s if numpy_cell and numpy_cell.status == "ok" else None
        lines.append([work.label, work.unit, *(
            _cell_text(row[p], work, None if p == "numpy" else base) for p in peers),
            *(_best_cells(part, row, work) if best else ())])
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    batched = [w for w in works if w.batch > 1]
    intro = f"median of {repeat} sample{'s' * (repeat > 1)}, taken in turns across peers" + "".join(
        f" ({w.name}: µs per call, each sample a batch of {w.batch} calls)" for w in batched)
    intro += "; (Nx) = speed-up over NumPy (NumPy's median ÷ this one): above 1 is faster"
    if any(c.note and c.note.startswith("python") for row in table.values() for c in row.values()):
        intro += ("; [python]: autojit ran the program as plain Python (the reason is under the "
                  "table): the same code as the numpy column, so that ratio is the machine's "
                  "noise plus the dispatcher's overhead")
    for label, among in part.best.items():
        intro += (f"; {label} best = the faster of {', '.join(among)}, autojit vs {label} ="
                  f" its median ÷ autojit's: 1 or above is at or under {label}'s time")
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
    widths = [max(len(r[i]) for r in first) for i in range(len(first[0]))]
    out += ["", *(_join(r, widths) for r in first)]
    failures = [f"FAILED {work.name} / {p}: {row[p].error}" for work in works
                for row in [table[work.name]] for p in peers if row[p].status == "failed"]
    missing = sorted({p for row in table.values() for p in peers if row[p].status == "missing"})
    if part.show_tolerances:
        out.append("every peer checked against NumPy before timing, allclose with " + ", ".join(
            f"{w.name} rtol {w.rtol:g} atol {w.atol:g}" for w in works))
    out += failures
    out += [f"{p} ran {work.name}: {row[p].note}" for work in works
            for row in [table[work.name]] for p in peers if row[p].note]
    if missing:
        out.append("not installed: " + ", ".join(missing))
    out += [machine_line(), f"command: {command_line()}"]
    return "\n".join(out)


def _join(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()


def to_json(table: dict[str, dict[str, Cell]], repeat: int, scale: float,
            section: str = "arrays") -> dict[str, Any]:
    """Everything measured, plus where and how."""
    works = SECTIONS[section].workloads
    return {"machine": machine_line(), "command": command_line(), "repeat": repeat,
            "scale": scale, "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "section": section,
            "workloads": {name: {"label": next(w.label for w in works if w.name == name),
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
    every_work = [w for part in SECTIONS.values() for w in part.workloads]
    every_peer = list(dict.fromkeys(
        [p for part in SECTIONS.values() for p in (*part.peers, *part.aliases)]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=(*SECTIONS, "all"),
                        help="which table: arrays (the default, what earlier runs timed), "
                             "loops, or all; with --only, the sections of those workloads")
    parser.add_argument("--only", action="append", default=[],
                        help="workload name(s), comma-separated or repeated: "
                             + ", ".join(w.name for w in every_work))
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per median")
    parser.add_argument("--peers", default="",
                        help=f"comma-separated, from {','.join(every_peer)} (default: all of "
                             "each section's)")
    parser.add_argument("--scale", type=float, default=1.0, help="input size multiplier")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the speed-ups as a bar chart "
                        "(the arrays section)")
    parser.add_argument("--json", metavar="FILE", help="write every measurement as JSON (one "
                        "section: as before; all: {'sections': {name: ...}})")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    opts = parser.parse_args(argv)

    names = [n for item in opts.only for n in item.split(",") if n]
    peers = [p for p in opts.peers.split(",") if p]
    unknown = [n for n in names if n not in {w.name for w in every_work}]
    unknown += [p for p in peers if p not in every_peer]
    if unknown or opts.repeat < 1:
        parser.error(f"unknown workload or peer {unknown}" if unknown else "--repeat < 1")
    chosen = {"all": list(SECTIONS), None: [
        name for name, part in SECTIONS.items()
        if any(w.name in names for w in part.workloads)] or ["arrays"]}.get(
        opts.section, [opts.section])

    tables: dict[str, dict[str, dict[str, Cell]]] = {}
    for section in chosen:
        tables[section] = run(names, peers, opts.repeat, opts.scale,
                              None if opts.quiet else sys.stderr, section=section)
        if len(chosen) > 1:
            print(f"== {section} ==")
        print(format_table(tables[section], opts.repeat, opts.scale, section))
    if opts.json:
        dumps = {s: to_json(t, opts.repeat, opts.scale, s) for s, t in tables.items()}
        Path(opts.json).write_text(json.dumps(
            dumps[chosen[0]] if len(chosen) == 1 else {"sections": dumps}, indent=1))
    if opts.plot and "arrays" in tables:
        table = tables["arrays"]
        scaled = f", inputs scaled by {opts.scale:g}" if opts.scale != 1.0 else ""
        plot(table, opts.plot, f"median of {opts.repeat}, one process, {os.cpu_count()} cores "
             f"({cpu_model()}), shared and noisy (load average {_LOAD_AT_START} at start)"
             f"{scaled}; "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}")
    failed = any(c.status == "failed" for table in tables.values() for row in table.values()
                 for c in row.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
