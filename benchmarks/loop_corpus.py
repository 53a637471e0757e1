"""A corpus of loop programs in the style of public NumPy benchmark suites, under autojit.

Run:  python benchmarks/loop_corpus.py [--quick] [--only NAME,...] [--repeat N]
                                       [--peers numpy,numba,jax,autojit] [--json FILE]

The programs are our own, written as npbench and PolyBench write theirs (time-stepping
stencils, factorisations, solvers, simulations, scans, branchy scalar loops), plus issue
15's seven programs and its 10^5-iteration scalar loop (``benchmarks/loops.py``): plain
NumPy with no annotations. Each has an input builder and two sizes, small and medium
(``--quick``: half the small size and the small size, one timed sample).

Per program, in one process and on the same inputs for every peer: ``autoroute`` of the
program is called on the medium inputs (the first call, timed: trace and compile included,
fresh on-disk cache), then on the small ones; both results are checked against NumPy's
(``allclose``, rtol 1e-8, atol 1e-10), and the row says whether it compiled
(``routes["python"] == 0``), its kernels, how many compiles the two sizes took, and where it
ran as plain Python the fallback reason autojit gave. Numba is ``@njit`` of the same source
(the row says so where it does not compile it); JAX runs where ``loops.py`` has a
``lax.fori_loop`` version. The medium size's steady time is the median of ``--repeat``
samples taken in turns across the peers. Ratios are only comparable within one run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def _compare() -> ModuleType:
    """``compare.py`` of this folder, by path (it loads ``workloads.py`` and ``loops.py``)."""
    name = "autojit_bench_compare"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parent / "compare.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


compare = _compare()
loops = compare.load_loops()
Fn = Callable[..., Any]
RTOL, ATOL = 1e-8, 1e-10
PEERS: tuple[str, ...] = ("numpy", "numba", "jax", "autojit")


# --- the programs ---------------------------------------------------------------------------

def jacobi_1d(A, B, tsteps):
    for _ in range(tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def jacobi_2d(A, B, tsteps):
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])
    return A, B


def seidel_2d(A, tsteps):
    n = A.shape[0]
    for _ in range(tsteps):
        for i in range(1, n - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:]
                           + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, n - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0
    return A


def heat_3d(A, B, tsteps):
    for _ in range(tsteps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])
    return A, B


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :])
    return path


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = np.sqrt(A[i, i])
    return A


def trisolv(L, b):
    x = b.copy()
    for i in range(x.shape[0]):
        x[i] = (x[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def gramschmidt(A):
    n = A.shape[1]
    Q = np.zeros_like(A)
    R = np.zeros((n, n))
    for k in range(n):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def ludcmp(A, b):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


def gemm(alpha, beta, C, A, B):
    for i in range(C.shape[0]):
        C[i, :] *= beta
        for k in range(A.shape[1]):
            C[i, :] += alpha * A[i, k] * B[k, :]
    return C


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    n = A.shape[0]
    for i in range(n):
        A[i, :] += u1[i] * v1 + u2[i] * v2
    for i in range(n):
        x[i] += beta * (A[:, i] @ y)
    x += z
    for i in range(n):
        w[i] += alpha * (A[i, :] @ x)
    return A, x, w


def gesummv(alpha, beta, A, B, x):
    y = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        y[i] = alpha * (A[i, :] @ x) + beta * (B[i, :] @ x)
    return y


def nbody(pos, vel, mass, steps, dt):
    for _ in range(steps):
        d = pos[np.newaxis, :, :] - pos[:, np.newaxis, :]
        inv = ((d ** 2).sum(axis=2) + 0.01) ** -1.5
        acc = (d * (inv * mass[np.newaxis, :])[:, :, np.newaxis]).sum(axis=1)
        vel += dt * acc
        pos += dt * vel
    return pos, vel


def mandelbrot(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros_like(cr)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (np.where(inside, zr * zr - zi * zi + cr, zr),
                  np.where(inside, 2.0 * zr * zi + ci, zi))
        count += inside
    return count


def running_max(x):
    out = np.empty_like(x)
    top = x[0]
    for i in range(x.shape[0]):
        top = max(top, x[i])
        out[i] = top
    return out


def prefix_sum(x):
    out = np.empty_like(x)
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
        out[i] = total
    return out


def monte_carlo_pi(u, v):
    hits = 0.0
    for i in range(u.shape[0]):
        if u[i] * u[i] + v[i] * v[i] <= 1.0:
            hits += 1.0
    return 4.0 * hits / u.shape[0]


def branchy(x):
    acc = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v > 0.5:
            acc += v
        elif v < -0.5:
            acc -= 2.0 * v
        else:
            acc *= 0.5
    return acc


def converge(u, tol):
    diff = tol + 1.0
    sweeps = 0
    while diff > tol and sweeps < 100_000:
        new = u.copy()
        new[1:-1] = 0.5 * (u[:-2] + u[2:])
        diff = np.max(np.abs(new - u))
        u = new
        sweeps += 1
    return u, sweeps


def damped_oscillator(x, v, steps, dt):
    for _ in range(steps):
        a = -x - 0.1 * v
        x = x + dt * v
        v = v + dt * a
    return x, v


# --- inputs ---------------------------------------------------------------------------------

def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _uniform(shape: Any, seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return _rng(seed).uniform(low, high, shape)


def _dominant(n: int, seed: int) -> np.ndarray:
    """A diagonally dominant n×n matrix: LU without pivoting is stable on it."""
    return _uniform((n, n), seed) + n * np.eye(n)


def _spd(n: int, seed: int) -> np.ndarray:
    """A symmetric positive definite n×n matrix (Cholesky's input)."""
    m = _uniform((n, n), seed)
    return m @ m.T + n * np.eye(n)


def _plate(n: int, seed: int) -> np.ndarray:
    u = _rng(seed).random((n, n))
    u[0, :] = 1.0
    return u


def _mandel_grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, n), np.linspace(-1.2, 1.2, n))
    return np.ascontiguousarray(cr), np.ascontiguousarray(ci)


@dataclass(frozen=True)
class Program:
    """A corpus row: the program, its inputs for a size, the small and medium sizes, the
    arguments it writes into (copied afresh for every call and peer), and the argument it
    leaves its result in where it returns None (issue 15's ``lu_inplace``)."""

    name: str
    fn: Fn
    inputs: Callable[[int], tuple[Any, ...]]
    sizes: tuple[int, int]
    writes: tuple[int, ...] = ()
    returns_arg: int | None = None
    jax: str | None = None       # the name of loops.py's ``lax.fori_loop`` version


PROGRAMS: tuple[Program, ...] = (
    Program("jacobi_1d", jacobi_1d, lambda n: (_uniform(n, 1), _uniform(n, 2), max(2, n // 10)),
            (50, 1000), writes=(0, 1)),
    Program("jacobi_2d", jacobi_2d,
            lambda n: (_uniform((n, n), 3), _uniform((n, n), 4), max(2, n // 2)), (10, 100),
            writes=(0, 1)),
    Program("seidel_2d", seidel_2d, lambda n: (_uniform((n, n), 5), 2), (8, 60), writes=(0,)),
    Program("heat_3d", heat_3d,
            lambda n: (_uniform((n, n, n), 6), _uniform((n, n, n), 7), max(2, n // 2)),
            (6, 30), writes=(0, 1)),
    Program("floyd_warshall", floyd_warshall, lambda n: (_uniform((n, n), 8, 0.0, 10.0),),
            (8, 200), writes=(0,)),
    Program("cholesky", cholesky, lambda n: (_spd(n, 9),), (6, 100), writes=(0,)),
    Program("trisolv", trisolv, lambda n: (np.tril(_dominant(n, 10)), _uniform(n, 11)),
            (8, 1000)),
    Program("durbin", durbin, lambda n: (0.5 ** np.arange(1.0, n + 1.0),), (8, 500)),
    Program("gramschmidt", gramschmidt, lambda n: (_uniform((n + 4, n), 12),), (6, 80),
            writes=(0,)),
    Program("ludcmp", ludcmp, lambda n: (_dominant(n, 13), _uniform(n, 14)), (6, 100),
            writes=(0,)),
    Program("gemm", gemm,
            lambda n: (1.5, 1.2, _uniform((n, n), 15), _uniform((n, n), 16),
                       _uniform((n, n), 17)), (8, 80), writes=(2,)),
    Program("gemver", gemver,
            lambda n: (1.5, 1.2, _uniform((n, n), 18), *(_uniform(n, s) for s in range(19, 27))),
            (8, 300), writes=(2, 7, 8)),
    Program("gesummv", gesummv,
            lambda n: (1.5, 1.2, _uniform((n, n), 27), _uniform((n, n), 28), _uniform(n, 29)),
            (8, 500)),
    Program("nbody", nbody,
            lambda n: (_uniform((n, 3), 30), _uniform((n, 3), 31, -0.1, 0.1),
                       _uniform(n, 32, 0.5, 1.5), max(2, n // 5), 0.01), (8, 100),
            writes=(0, 1)),
    Program("mandelbrot", mandelbrot, lambda n: (*_mandel_grid(n), max(4, n // 4)), (8, 200)),
    Program("running_max", running_max, lambda n: (_uniform(n, 33),), (10, 10_000)),
    Program("prefix_sum", prefix_sum, lambda n: (_uniform(n, 34),), (10, 10_000)),
    Program("monte_carlo_pi", monte_carlo_pi, lambda n: (_uniform(n, 35), _uniform(n, 36)),
            (10, 10_000)),
    Program("branchy", branchy, lambda n: (_uniform(n, 37),), (10, 10_000)),
    Program("converge", converge, lambda n: (_uniform(n, 38), 1e-6), (8, 40)),
    Program("damped_oscillator", damped_oscillator,
            lambda n: (_uniform(n, 39), _uniform(n, 40), max(2, n // 2), 0.01), (4, 1000)),
    # issue 15's programs (loops.py), as the issue writes them
    Program("heat", loops.heat, lambda n: (_plate(n, 41), 2 * n, 0.1), (10, 100), writes=(0,),
            jax="heat"),
    Program("lower_solve", loops.lower_solve,
            lambda n: (np.tril(_dominant(n, 42)), _uniform(n, 43)), (8, 1000), jax="lower_solve"),
    Program("trace_tanh", loops.trace_tanh, lambda n: (_uniform((n, n), 44, -2.0, 2.0),),
            (8, 1000), jax="trace_tanh"),
    Program("distances", loops.distances, lambda n: (n, _uniform(n + 3, 45)), (8, 500),
            jax="distances"),
    Program("relax", loops.relax, lambda n: (_uniform(n, 46), 1e-4), (8, 30), writes=(0,),
            jax="relax"),
    Program("step", loops.step, lambda n: (_uniform(n, 47, 0.0, 1.0), n), (10, 100_000)),
    Program("lu_inplace", loops.lu_inplace, lambda n: (_dominant(n, 48),), (6, 100),
            writes=(0,), returns_arg=0, jax="lu"),
    Program("scalar_update", loops.scalar_update, lambda n: (np.full(4, 0.5), n),
            (100, 100_000), jax="scalar_update"),
)


# --- running one program --------------------------------------------------------------------

@dataclass
class Row:
    """What the table shows for one program (times in ms; None where not measured)."""

    name: str
    compiled: bool = False
    kernels: int | None = None
    compiles: int = 0
    first_call_ms: float | None = None
    steady_ms: dict[str, float] = field(default_factory=dict)
    numba: str = ""              # "ok", or why it did not compile or differs
    jax: str = ""                # "ok", "–" (no version), or why it failed
    fallback: str | None = None  # autojit's reason, where it ran as plain Python
    errors: list[str] = field(default_factory=list)


def _matches(got: Any, want: Any) -> str | None:
    """None when ``got`` equals NumPy's ``want`` (same structure, dtype kind, allclose)."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return f"got {type(got).__name__}, NumPy gives a tuple of {len(want)}"
        return next((p for g, w in zip(got, want, strict=True) if (p := _matches(g, w))), None)
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype.kind != want.dtype.kind:
        return f"got {got.dtype}{list(got.shape)}, NumPy gives {want.dtype}{list(want.shape)}"
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
        return f"max abs difference {np.nanmax(np.abs(got - want)):.3g}"
    return None


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}"


def _numba_reason(exc: BaseException) -> str:
    """The line of a Numba typing error that names the problem, not its boilerplate."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File "))]
    return f"{type(exc).__name__}: {(useful or lines or [''])[0][:160]}"


def _jax_fn(program: Program) -> Fn | None:
    """``jax.jit`` of loops.py's version, arrays to ``jnp`` (outside the timing)."""
    if program.jax is None:
        return None
    impl = loops.jax_impl(program.jax)
    return None if impl is None else lambda *a: impl.call(*impl.prepare(a))


def run_program(program: Program, sizes: tuple[int, int], repeat: int, peers: tuple[str, ...],
                settle_s: float = 0.05) -> Row:
    """Check every peer against NumPy on both sizes, then time the medium size in turns."""
    row = Row(program.name)
    small, medium = (program.inputs(n) for n in sizes)
    reference = loops.fresh(program.fn, program.writes, program.returns_arg)
    want = {"small": reference(*small), "medium": reference(*medium)}
    timed: dict[str, Fn] = {"numpy": reference}

    if "autojit" in peers:
        from autojit import autoroute
        loops.warm_up("autojit")
        jitted = autoroute(program.fn, cache_dir=compare._workloads._cache_dir())
        call = loops.fresh(jitted, program.writes, program.returns_arg)
        try:
            begin = time.perf_counter()
            got = call(*medium)
            row.first_call_ms = (time.perf_counter() - begin) * 1e3
            problems = [_matches(got, want["medium"]), _matches(call(*small), want["small"])]
            stats = jitted.stats()
            row.compiled, row.compiles = stats["routes"]["python"] == 0, stats["compiles"]
            if not row.compiled:
                row.fallback = stats["fallbacks"][-1] if stats["fallbacks"] else "no reason given"
            else:
                row.kernels = len(jitted.inspect(*medium).kernels)
            if any(problems):
                row.errors.append(f"autojit differs from NumPy: {next(p for p in problems if p)}")
            else:
                timed["autojit"] = call
        except Exception as exc:  # an exception NumPy does not raise is a finding, not a crash
            row.errors.append(f"autojit raised {_first_line(exc)}")

    if "numba" in peers:
        from numba import njit
        loops.warm_up("numba")
        call = loops.fresh(njit(cache=False)(program.fn), program.writes, program.returns_arg)
        try:
            problem = _matches(call(*medium), want["medium"]) or _matches(call(*small),
                                                                         want["small"])
            row.numba = f"differs: {problem}" if problem else "ok"
            if not problem:
                timed["numba"] = call
        except Exception as exc:  # numba's typing errors: the row says it does not compile
            row.numba = f"fails: {_numba_reason(exc)}"

    jax_call = _jax_fn(program) if "jax" in peers else None
    row.jax = "–"
    if jax_call is not None:
        try:
            problem = _matches(jax_call(*medium), want["medium"])
            row.jax = f"differs: {problem}" if problem else "ok"
            if not problem:
                timed["jax"] = jax_call
        except Exception as exc:
            row.jax = f"fails: {_first_line(exc)}"

    samples: dict[str, list[float]] = {peer: [] for peer in timed}
    for _ in range(repeat):
        for peer, call in timed.items():
            time.sleep(settle_s)
            call(*medium)  # untimed: the peer's caches and threads warm again
            begin = time.perf_counter()
            call(*medium)
            samples[peer].append(time.perf_counter() - begin)
    row.steady_ms = {peer: statistics.median(s) * 1e3 for peer, s in samples.items()}
    gc.collect()
    return row


# --- the table ------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "–" if value is None else compare._number(value)


def _versus(row: Row, peer: str) -> str:
    """``"0.52 (1.9x)"``: the peer's steady ms and its speed-up over NumPy."""
    if peer not in row.steady_ms:
        return "–"
    ratio = row.steady_ms["numpy"] / row.steady_ms[peer]
    return f"{_ms(row.steady_ms[peer])} ({compare._ratio(ratio)})"


def format_rows(rows: list[Row], sizes_note: str, repeat: int) -> str:
    """The closing note's table, then the fallback reasons, Numba's failures and errors."""
    header = ["program", "compiled?", "kernels", "compiles (2 sizes)", "autojit first ms",
              "numpy ms", "autojit ms", "numba ms", "jax ms"]
    lines = [header]
    for r in rows:
        lines.append([r.name, "yes" if r.compiled else "no (python)",
                      "–" if r.kernels is None else str(r.kernels), str(r.compiles),
                      _ms(r.first_call_ms), _ms(r.steady_ms.get("numpy")),
                      _versus(r, "autojit"),
                      _versus(r, "numba") if r.numba in ("ok", "") else "fails"
                      if r.numba.startswith("fails") else "differs",
                      _versus(r, "jax") if r.jax == "ok" else r.jax.split(":")[0]])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    compiled = sum(r.compiled for r in rows)
    out = [f"{compiled} of {len(rows)} compiled (routes['python'] == 0); {sizes_note}; steady: "
           f"median of {repeat} on the medium size, in turns; (Nx) = speed-up over NumPy",
           compare._join(lines[0], widths), "  ".join("-" * w for w in widths),
           *(compare._join(line, widths) for line in lines[1:]), ""]
    out += [f"python {r.name}: {r.fallback}" for r in rows if r.fallback]
    out += [f"numba {r.name}: {r.numba}" for r in rows if r.numba not in ("ok", "")]
    out += [f"jax {r.name}: {r.jax}" for r in rows if r.jax not in ("ok", "–")]
    out += [f"ERROR {r.name}: {e}" for r in rows for e in r.errors]
    out += [compare.machine_line(), f"command: {compare.command_line()}"]
    return "\n".join(out)


def run(names: list[str] | None = None, quick: bool = False, repeat: int = 5,
        peers: tuple[str, ...] = PEERS, log: Any = None, settle_s: float = 0.05) -> list[Row]:
    """Run the corpus (all programs, or those named); ``quick``: tiny sizes, one sample;
    ``settle_s``: the pause before each sample (another peer's threads go idle)."""
    rows = []
    for program in PROGRAMS:
        if names and program.name not in names:
            continue
        small = program.sizes[0]
        sizes = (max(2, small // 2), small) if quick else program.sizes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fallbacks and Numba's performance hints
            rows.append(run_program(program, sizes, 1 if quick else repeat, peers, settle_s))
        if log is not None:
            r = rows[-1]
            print(f"  {r.name:18s} compiled={r.compiled} first={_ms(r.first_call_ms)} ms "
                  f"numba={r.numba[:40]}", file=log, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the corpus table; return 1 if any peer raised or differed from NumPy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one timed sample")
    parser.add_argument("--only", default="", help="comma-separated program names: "
                        + ", ".join(p.name for p in PROGRAMS))
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per median")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated, from {','.join(PEERS)} (numpy always runs)")
    parser.add_argument("--json", metavar="FILE", help="write every row as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    opts = parser.parse_args(argv)
    names = [n for n in opts.only.split(",") if n]
    peers = tuple(p for p in opts.peers.split(",") if p)
    unknown = [n for n in names if n not in {p.name for p in PROGRAMS}]
    unknown += [p for p in peers if p not in PEERS]
    if unknown or opts.repeat < 1:
        parser.error(f"unknown program or peer {unknown}" if unknown else "--repeat < 1")

    rows = run(names, opts.quick, opts.repeat, peers, None if opts.quiet else sys.stderr)
    sizes = "sizes: half the small and the small" if opts.quick else "sizes: small and medium"
    print(format_rows(rows, sizes, 1 if opts.quick else opts.repeat))
    if opts.json:
        Path(opts.json).write_text(json.dumps(
            {"machine": compare.machine_line(), "command": compare.command_line(),
             "quick": opts.quick, "repeat": opts.repeat,
             "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
             "programs": {r.name: asdict(r) for r in rows}}, indent=1))
    bad = any(r.errors or r.numba.startswith("differs") or r.jax.startswith("differs")
              for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
