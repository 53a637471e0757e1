"""The loops section of ``compare.py``: issue 15's loop programs, their inputs and their peers.

The programs are plain NumPy with no annotations, exactly as issue 15 writes them; autojit
decorates them as they are and Numba's array-style peer is ``@njit`` of the same source.
The peers, one builder each (``None`` where a peer has no version of a program):

* ``numpy``: the program itself, run by the interpreter;
* ``numba-array``: ``@njit`` of the program's own source;
* ``numba-loops``: ``@njit`` of a hand-written explicit-loop version (scalar loops, a
  scratch buffer where NumPy's slice assignment reads the old values). ``compare.py`` counts
  the faster of the two Numba versions and shows both. Both are ``njit(fastmath=False)``
  without ``parallel``: every program here carries a dependency from one iteration to the
  next, which ``prange`` cannot take, and the stencil's rows are too short to pay for a
  thread pool 1000 times per call;
* ``jax``: ``jax.jit`` of a ``lax.fori_loop`` version with float64 enabled. JAX makes the
  user rewrite these: in-place writes become ``.at[].set()`` on a carried array, and slices
  whose length depends on the loop index (``A[i, :j] @ A[:j, j]``, ``L[i, :i] @ x[:i]``)
  become full-length rows with the tail masked to zero, because a traced index cannot
  size an array. ``steps`` stays a traced int (no ``static_argnums``): ``fori_loop`` with a
  traced bound lowers to a ``while_loop``;
* ``autojit``: ``autoroute`` of the program, compiling into this process's fresh cache. Its
  ``note`` says whether the call compiled or ran as plain Python, and why.

First calls are timed with fresh caches for every peer; each library's one-time start-up in
the process (Numba's and autojit's LLVM, JAX's XLA backend) is taken before, outside the
timing, by compiling a trivial program (``warm_up``), so the first call measures compiling
this program, whichever peer and row come first.

Programs that write into an argument (``heat``, ``lu_inplace``) get a fresh copy of it on
every call, for every peer alike (JAX's arrays are immutable and need none): the copy is
inside the timing, microseconds against the milliseconds of the loop.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


def _workloads() -> Any:
    """``workloads.py`` as ``compare.py`` loaded it (by path, under its module name), so
    both files share one ``Impl`` and one fresh compile cache."""
    name = "autojit_bench_workloads"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(
            "workloads.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_w = _workloads()
Fn, Impl, Workload, _cache_dir, _n = _w.Fn, _w.Impl, _w.Workload, _w._cache_dir, _w._n

#: the peers of the loops section, in table order
LOOP_PEERS: tuple[str, ...] = ("numpy", "numba-array", "numba-loops", "jax", "autojit")
#: a peer name that selects several (``--peers numba`` means both Numba versions)
PEER_ALIASES: dict[str, tuple[str, ...]] = {"numba": ("numba-array", "numba-loops")}


# --- the programs, exactly as issue 15 writes them (the oracle) -----------------------------

def heat(u, steps, alpha):              # steps: a plain Python int, not declared static
    for _ in range(steps):
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                  + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def lower_solve(L, b):                  # index-dependent slices, a scratch result
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def trace_tanh(a):                      # a scalar carried through a loop
    acc = 0.0
    for i in range(a.shape[0]):
        acc += np.tanh(a[i, i])
    return a + acc


def distances(n, x):                    # a size from an int argument, rows filled in a loop
    out = np.empty((n, n))
    for i in range(n):
        out[i] = np.abs(x[i] - x[:n])
    return out


def relax(u, tol):                      # while on a traced value
    err = tol + 1.0
    while err > tol:
        new = 0.5 * (u[:-2] + u[2:])
        err = np.max(np.abs(new - u[1:-1]))
        u[1:-1] = new
    return u


def step(x, n):                         # if on a scalar argument
    if n > 100:
        return np.sqrt(x)
    return x * 2.0


def lu_inplace(A):                      # triangular nested loops with dot products
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]


def scalar_update(x, steps):            # 10^5 iterations of one scalar update: ns per iteration
    acc = x[0]
    for _ in range(steps):
        acc = acc * 0.999 + 1.0
    return x + acc


#: the seven programs of issue 15, by name (the corpus script runs them all)
ISSUE_PROGRAMS: dict[str, Fn] = {
    "heat": heat, "lower_solve": lower_solve, "trace_tanh": trace_tanh, "distances": distances,
    "relax": relax, "step": step, "lu_inplace": lu_inplace,
}


# --- explicit-loop versions for Numba (hand-written scalar loops) ---------------------------

def heat_loops(u, steps, alpha):
    """The stencil as scalar loops; the Laplacian goes into a scratch buffer first, since
    NumPy's right-hand side reads the old values of ``u``. Same order of additions."""
    rows, cols = u.shape
    lap = np.empty((rows - 2, cols - 2))
    for _ in range(steps):
        for i in range(1, rows - 1):
            for j in range(1, cols - 1):
                lap[i - 1, j - 1] = (u[i + 1, j] + u[i - 1, j] + u[i, j + 1] + u[i, j - 1]
                                     - 4 * u[i, j])
        for i in range(1, rows - 1):
            for j in range(1, cols - 1):
                u[i, j] += alpha * lap[i - 1, j - 1]
    return u


def lu_loops(A):
    """Doolittle LU in place with the dot products as inner loops."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            s = 0.0
            for k in range(j):
                s += A[i, k] * A[k, j]
            A[i, j] = (A[i, j] - s) / A[j, j]
        for j in range(i, n):
            s = 0.0
            for k in range(i):
                s += A[i, k] * A[k, j]
            A[i, j] -= s
    return A


def lower_solve_loops(L, b):
    """Forward substitution with the dot product as an inner loop."""
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        s = 0.0
        for k in range(i):
            s += L[i, k] * x[k]
        x[i] = (b[i] - s) / L[i, i]
    return x


def trace_tanh_loops(a):
    """The diagonal's tanh summed with ``math.tanh``, then ``a + acc`` as a loop."""
    acc = 0.0
    for i in range(a.shape[0]):
        acc += math.tanh(a[i, i])
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] + acc
    return out


# --- JAX versions (lax.fori_loop, x64) ------------------------------------------------------

def _jax_versions() -> dict[str, Fn]:
    """The ``jax.numpy`` rewrites, by workload name (imported only when JAX is asked for)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def heat_j(u: Any, steps: Any, alpha: Any) -> Any:
        def body(_: Any, u: Any) -> Any:
            return u.at[1:-1, 1:-1].add(alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                                 + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]))
        return lax.fori_loop(0, steps, body, u)

    def lu_j(A: Any) -> Any:
        n = A.shape[0]
        index = jnp.arange(n)

        def row(i: Any, A: Any) -> Any:
            def lower(j: Any, A: Any) -> Any:   # A[i, :j] @ A[:j, j] as a masked full row
                head = jnp.where(index < j, A[i], 0.0)
                return A.at[i, j].set((A[i, j] - head @ A[:, j]) / A[j, j])

            def upper(j: Any, A: Any) -> Any:   # A[i, :i] @ A[:i, j], masked likewise
                head = jnp.where(index < i, A[i], 0.0)
                return A.at[i, j].add(-(head @ A[:, j]))
            A = lax.fori_loop(0, i, lower, A)
            return lax.fori_loop(i, n, upper, A)
        return lax.fori_loop(0, n, row, A)

    def lower_solve_j(L: Any, b: Any) -> Any:
        index = jnp.arange(b.shape[0])

        def body(i: Any, x: Any) -> Any:        # L[i, :i] @ x[:i] as a masked full row
            head = jnp.where(index < i, L[i], 0.0)
            return x.at[i].set((b[i] - head @ x) / L[i, i])
        return lax.fori_loop(0, b.shape[0], body, jnp.zeros_like(b))

    def trace_tanh_j(a: Any) -> Any:
        acc = lax.fori_loop(0, a.shape[0], lambda i, acc: acc + jnp.tanh(a[i, i]), 0.0)
        return a + acc

    def scalar_update_j(x: Any, steps: Any) -> Any:
        acc = lax.fori_loop(0, steps, lambda _, acc: acc * 0.999 + 1.0, x[0])
        return x + acc

    def relax_j(u: Any, tol: Any) -> Any:       # while on a traced value: lax.while_loop
        def body(state: Any) -> Any:
            u, _ = state
            new = 0.5 * (u[:-2] + u[2:])
            return u.at[1:-1].set(new), jnp.max(jnp.abs(new - u[1:-1]))
        return lax.while_loop(lambda state: state[1] > tol, body, (u, tol + 1.0))[0]

    def distances_j(n: int, x: Any) -> Any:     # n sizes the result: it must be static
        def body(i: Any, out: Any) -> Any:
            return out.at[i].set(jnp.abs(x[i] - x[:n]))
        return lax.fori_loop(0, n, body, jnp.empty((n, n)))

    jax.config.update("jax_enable_x64", True)
    return {"heat": heat_j, "lu": lu_j, "lower_solve": lower_solve_j, "relax": relax_j,
            "distances": distances_j, "trace_tanh": trace_tanh_j, "scalar_update": scalar_update_j}


# --- workloads ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LoopWorkload(Workload):
    """A loops row: ``program`` is what autojit and Numba decorate, ``reference`` the same
    with fresh copies of the ``writes`` arguments; ``numba_loops`` the explicit-loop
    version; ``iterations`` divides the reported time (``ns/iter`` rows)."""

    program: Fn = heat  # a default only because Workload's last fields have defaults
    writes: tuple[int, ...] = ()
    returns_arg: int | None = None  # lu_inplace returns None: its result is the A it wrote
    numba_loops: Fn | None = None
    iterations: Callable[[tuple[Any, ...]], int] | None = None


def fresh(fn: Fn, writes: tuple[int, ...], returns_arg: int | None = None) -> Fn:
    """``fn`` called on copies of the arguments at ``writes`` (it writes into them); with
    ``returns_arg``, the call returns that (copied, written) argument instead."""
    if not writes:
        return fn

    def call(*args: Any) -> Any:
        args = tuple(a.copy() if i in writes else a for i, a in enumerate(args))
        result = fn(*args)
        return result if returns_arg is None else args[returns_arg]
    call.__name__ = getattr(fn, "__name__", "call")
    return call


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def heat_inputs(scale: float) -> tuple[Any, ...]:
    """A 150×150 plate, hot top edge, random interior; 1000 steps at alpha 0.1 (stable)."""
    size = max(4, _n(150, scale))
    u = _rng(20).random((size, size))
    u[0, :] = 1.0
    return u, max(2, _n(1000, scale)), 0.1


def lu_inputs(scale: float) -> tuple[Any, ...]:
    """A diagonally dominant n×n matrix (n = 400): LU without pivoting is stable on it."""
    n = max(3, _n(400, scale))
    return (_rng(21).uniform(-1.0, 1.0, (n, n)) + n * np.eye(n),)


def lower_inputs(scale: float) -> tuple[Any, ...]:
    """A well-conditioned lower-triangular L (n = 2000) and a right-hand side b."""
    n = max(3, _n(2000, scale))
    rng = _rng(22)
    return np.tril(rng.uniform(-1.0, 1.0, (n, n))) + n * np.eye(n), rng.uniform(-1.0, 1.0, n)


def tanh_inputs(scale: float) -> tuple[Any, ...]:
    n = max(3, _n(2000, scale))
    return (_rng(23).uniform(-2.0, 2.0, (n, n)),)


def scalar_inputs(scale: float) -> tuple[Any, ...]:
    return np.full(4, 0.5), max(10, _n(100_000, scale))


def _loop(name: str, label: str, program: Fn, inputs: Callable[[float], tuple[Any, ...]],
          rtol: float, atol: float, **fields: Any) -> LoopWorkload:
    reference = fresh(program, fields.get("writes", ()), fields.get("returns_arg"))
    return LoopWorkload(name, label, reference, inputs, rtol, atol,
                        program=program, **fields)


LOOP_WORKLOADS: tuple[LoopWorkload, ...] = (
    _loop("heat", "heat stencil, T=1000, 150×150 f64", heat, heat_inputs, 1e-9, 1e-12,
          writes=(0,), numba_loops=heat_loops),
    _loop("lu", "LU in place, n=400 f64", lu_inplace, lu_inputs, 1e-8, 1e-10,
          writes=(0,), returns_arg=0, numba_loops=lu_loops),
    _loop("lower_solve", "forward substitution, n=2000 f64", lower_solve, lower_inputs,
          1e-9, 1e-12, numba_loops=lower_solve_loops),
    _loop("trace_tanh", "trace_tanh, 2000×2000 f64", trace_tanh, tanh_inputs, 1e-9, 1e-12,
          numba_loops=trace_tanh_loops),
    # the body is already scalar code: Numba's explicit-loop version would be the same source
    _loop("scalar_update", "10^5 × one scalar update", scalar_update, scalar_inputs,
          1e-12, 1e-12, unit="ns/iter", iterations=lambda args: args[1]),
)

LOOPS_BY_NAME: dict[str, LoopWorkload] = {w.name: w for w in LOOP_WORKLOADS}


# --- the peers ------------------------------------------------------------------------------

_WARM: set[str] = set()


def _trivial(x):
    return x + 1.0


def warm_up(library: str) -> None:
    """Compile and run a trivial program once per process in ``library`` (its start-up is
    not this row's compile)."""
    if library in _WARM:
        return
    x = np.ones(4)
    starters: dict[str, Callable[[], Any]] = {
        "numba": lambda: __import__("numba").njit(cache=False)(_trivial)(x),
        "jax": lambda: __import__("jax").jit(_trivial)(x).block_until_ready(),
        "autojit": lambda: __import__("autojit").autoroute(_trivial, cache_dir=_cache_dir())(x),
    }
    starters[library]()
    _WARM.add(library)

def build_numpy(work: LoopWorkload) -> Impl | None:
    """The program itself, on fresh copies of what it writes."""
    return Impl(work.reference)


def build_numba_array(work: LoopWorkload) -> Impl | None:
    """``@njit`` of the program's own source."""
    from numba import njit
    warm_up("numba")
    return Impl(fresh(njit(fastmath=False, cache=False)(work.program), work.writes,
                      work.returns_arg))


def build_numba_loops(work: LoopWorkload) -> Impl | None:
    """``@njit`` of the hand-written explicit-loop version."""
    if work.numba_loops is None:
        return None
    from numba import njit
    warm_up("numba")
    return Impl(fresh(njit(fastmath=False, cache=False)(work.numba_loops), work.writes,
                      work.returns_arg))


def build_jax(work: LoopWorkload) -> Impl | None:
    """``jax.jit`` of the ``lax.fori_loop`` version; arrays become ``jnp`` arrays outside
    the timing, Python scalars stay Python scalars (traced, not static)."""
    return jax_impl(work.name)


#: arguments a JAX version must take as static (``static_argnums``): sizes of arrays
JAX_STATIC: dict[str, tuple[int, ...]] = {"distances": (0,)}


def jax_impl(name: str) -> Impl | None:
    """``jax.jit`` of the JAX version named ``name`` (None where there is none)."""
    fn = _jax_versions().get(name)
    if fn is None:
        return None
    import jax
    import jax.numpy as jnp
    warm_up("jax")
    jitted = jax.jit(fn, static_argnums=JAX_STATIC.get(name, ()))
    return Impl(lambda *a: jax.block_until_ready(jitted(*a)),
                prepare=lambda args: tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                           for a in args),
                to_numpy=np.asarray)


def build_autojit(work: LoopWorkload) -> Impl | None:
    """``autoroute`` of the program as written, in this process's fresh compile cache; the
    note says how its calls ran (compiled, or plain Python and the fallback reason)."""
    from autojit import autoroute
    warm_up("autojit")
    jitted = autoroute(work.program, cache_dir=_cache_dir())
    return Impl(fresh(jitted, work.writes, work.returns_arg), note=lambda: autojit_note(jitted))


def autojit_note(jitted: Any) -> str:
    """``"compiled (k compiles)"``, or ``"python: <the last fallback reason>"`` when any call
    ran as plain Python (the honest cell for a program autojit cannot compile yet)."""
    stats = jitted.stats()
    if stats["routes"]["python"]:
        reasons = stats["fallbacks"]
        return "python: " + (reasons[-1] if reasons else "no reason recorded")
    return f"compiled ({stats['compiles']} compile{'s' * (stats['compiles'] != 1)})"


LOOP_BUILDERS: dict[str, Callable[[LoopWorkload], Impl | None]] = {
    "numpy": build_numpy, "numba-array": build_numba_array, "numba-loops": build_numba_loops,
    "jax": build_jax, "autojit": build_autojit,
}
