"""Loop programs in the style people write: issue 15's seven, verbatim, and more of the same
kind (time-stepping stencils, triangular solves and factorisations, Gauss-Seidel sweeps,
cumulative loops, scratch arrays filled row by row, while-until-converged, branches on int
arguments, break/continue), each with an input builder taking a size and a trip count.

``LOOP_PROGRAMS`` lists them; ``calls(program)`` gives the calls the tests make of ONE
compiled function: every size with every trip count, then the first again (so a second
compile for new sizes or trip counts shows in ``compiles``). ``rtol``/``atol`` are set only
where a value goes through a sum or product whose order NumPy does not fix (matmul, a
reduction, ``np.linalg.norm``) or a transcendental function; everything else is bit-exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


# -- issue 15's programs, verbatim -------------------------------------------------------------
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


# -- more of the same kind ----------------------------------------------------------------------
def jacobi_1d(a, b, steps):
    """PolyBench jacobi-1d: two arrays updated in turn."""
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    return a, b


def upper_solve(U, b):
    """Back substitution: a reversed range, a suffix slice."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def gauss_seidel_1d(u, f, steps):
    """Element by element, each update reading the one just made."""
    n = u.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            u[i] = 0.5 * (u[i - 1] + u[i + 1] + f[i])
    return u


def gauss_seidel_rows(u, steps):
    """2-D Gauss-Seidel by rows: each row reads the row above as just updated."""
    for _ in range(steps):
        for i in range(1, u.shape[0] - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:])
    return u


def running_total(x):
    """A carried scalar written into a scratch array each iteration."""
    out = np.empty_like(x)
    total = 0.0
    for i in range(len(x)):
        total += x[i]
        out[i] = total
    return out


def running_max(x):
    """A branch on elements, a scratch result."""
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > out[i - 1]:
            out[i] = x[i]
        else:
            out[i] = out[i - 1]
    return out


def scaled_rows(a, n):
    """np.zeros sized by an argument, filled row by row."""
    out = np.zeros((n, a.shape[1]))
    for i in range(n):
        out[i, :] = a[i] * i - a[n - 1 - i]
    return out


def newton_sqrt(x, tol):
    """While until converged, with an iteration cap, on a carried array."""
    y = x * 0.5 + 1.0
    err = tol + 1.0
    it = 0
    while err > tol and it < 100:
        new = 0.5 * (y + x / y)
        err = np.max(np.abs(new - y))
        y = new
        it += 1
    return y


def mode_switch(x, mode):
    """if/elif/else on an int argument."""
    if mode == 0:
        return x * 2.0
    elif mode == 1:
        return x + 1.0
    else:
        return -x


def power_iteration(A, steps):
    """A carried vector rebound, normalised each step."""
    v = np.ones(A.shape[0])
    for _ in range(steps):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v


def ping_pong(x, steps):
    """Two buffers indexed by ``t % 2``."""
    w = np.zeros((2, x.shape[0]))
    w[0] = x
    for t in range(steps):
        w[(t + 1) % 2, 1:-1] = 0.5 * (w[t % 2, :-2] + w[t % 2, 2:])
        w[(t + 1) % 2, 0] = w[t % 2, 0]
        w[(t + 1) % 2, -1] = w[t % 2, -1]
    return w[steps % 2]


def prefix_sums(x):
    """A growing prefix slice reduced each iteration."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sum(x[:i + 1])
    return out


def wave(u, steps, c):
    """Two carried arrays rebound together (leapfrog)."""
    prev = u.copy()
    for _ in range(steps):
        lap = np.zeros_like(u)
        lap[1:-1, 1:-1] = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
                           - 4 * u[1:-1, 1:-1])
        prev, u = u, 2 * u - prev + c * lap
    return u


def first_over(x, limit):
    """break on a carried scalar."""
    total = 0.0
    count = 0
    for i in range(x.shape[0]):
        total += x[i]
        count += 1
        if total > limit:
            break
    return x * count + total


def skip_every_third(x):
    """continue on the index."""
    for i in range(1, x.shape[0]):
        if i % 3 == 0:
            continue
        x[i] = x[i] * 0.5 + x[i - 1]
    return x


def histogram(x, bins):
    """int() of a traced scalar as an index, an int64 scratch array."""
    counts = np.zeros(bins, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * bins)
        if 0 <= b < bins:
            counts[b] += 1
    return counts


def matvec_rows(A, x):
    """One dot product per row into np.empty."""
    n = A.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = A[i] @ x
    return y


def cholesky(A):
    """Triangular nested loops with sqrt, a scratch lower factor."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j] - L[i, :j] @ L[j, :j]
            if i == j:
                L[i, j] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return L


def floyd_warshall(D):
    """Shortest paths: a broadcast minimum per k (exact)."""
    n = D.shape[0]
    for k in range(n):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


def euler_f32(x, v, steps, dt):
    """float32 state, a Python float step (NEP 50: stays float32)."""
    for _ in range(steps):
        v = v - dt * x
        x = x + dt * v
    return x, v


def triangle_count(x, n):
    """An int accumulated over a triangular nest, mixed into a float result."""
    acc = 0
    for i in range(n):
        for j in range(i):
            acc += i * j
    return x + acc


def damped(x, y, steps):
    """A carried float scalar and array: acc = acc * 0.5 + ..., x = 0.5 * x + y."""
    acc = 0.0
    for t in range(steps):
        x = 0.5 * x + y
        acc = acc * 0.5 + x[t % x.shape[0]]
    return x * acc


def strided_sweep(x, n):
    """range with a step of 2 and a reversed one, over an int argument."""
    for i in range(0, n, 2):
        x[i] = -x[i]
    for i in range(n - 1, 0, -1):
        x[i] += x[i - 1]
    return x


# -- inputs --------------------------------------------------------------------------------------
def _rng(size: int, trips: int) -> np.random.Generator:
    return np.random.default_rng(1000 * size + trips)


def _grid(size: int, trips: int) -> np.ndarray:
    g = np.zeros((size, size))
    g[0, :] = 1.0
    g[:, 0] = 0.5
    g[size // 2, size // 2] = 2.0
    return g


def _lower(size: int, trips: int) -> np.ndarray:
    r = _rng(size, trips)
    return np.tril(r.uniform(-1, 1, (size, size))) + size * np.eye(size)


def _dominant(size: int, trips: int) -> np.ndarray:
    r = _rng(size, trips)
    return r.uniform(-1, 1, (size, size)) + size * np.eye(size)


def _spd(size: int, trips: int) -> np.ndarray:
    r = _rng(size, trips)
    m = r.uniform(-1, 1, (size, size))
    return m @ m.T + size * np.eye(size)


def _vec(size: int, trips: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return _rng(size, trips).uniform(lo, hi, size)


@dataclass(frozen=True)
class LoopCase:
    """One program, its inputs for (size, trips), the sizes and trip counts to call it with,
    and the tolerance of values whose summation order NumPy does not fix (0: bit-exact)."""

    name: str
    fn: Callable
    make: Callable[[int, int], tuple]
    sizes: tuple[int, ...] = (10, 60)
    trips: tuple[int, ...] = (3, 50)
    rtol: float = 0.0
    atol: float = 0.0


#: rtol/atol of a program summing in an order NumPy does not fix
SUMS = {"rtol": 1e-10, "atol": 1e-12}

LOOP_PROGRAMS: tuple[LoopCase, ...] = (
    LoopCase("heat", heat, lambda s, t: (_grid(s, t), t, 0.2)),
    LoopCase("lower_solve", lower_solve, lambda s, t: (_lower(s, t), _vec(s, t)),
             trips=(0,), **SUMS),
    LoopCase("trace_tanh", trace_tanh, lambda s, t: (_dominant(s, t) / s,), trips=(0,),
             **SUMS),
    LoopCase("distances", distances, lambda s, t: (s - 2, _vec(s, t)), trips=(0,)),
    LoopCase("relax", relax, lambda s, t: (_vec(s, t), 10.0 ** -t if t < 10 else 1e-3),
             trips=(3, 6)),
    LoopCase("step", step, lambda s, t: (_vec(s, t, 0, 4), t), trips=(3, 500)),
    LoopCase("lu_inplace", lu_inplace, lambda s, t: (_dominant(s, t),), trips=(0,), **SUMS),
    LoopCase("jacobi_1d", jacobi_1d, lambda s, t: (_vec(s, t), _vec(s, t + 1), t)),
    LoopCase("upper_solve", upper_solve, lambda s, t: (_lower(s, t).T.copy(), _vec(s, t)),
             trips=(0,), **SUMS),
    LoopCase("gauss_seidel_1d", gauss_seidel_1d,
             lambda s, t: (_vec(s, t), _vec(s, t + 1), t)),
    LoopCase("gauss_seidel_rows", gauss_seidel_rows, lambda s, t: (_grid(s, t), t),
             trips=(3, 20)),
    LoopCase("running_total", running_total, lambda s, t: (_vec(s, t),), trips=(0,)),
    LoopCase("running_max", running_max, lambda s, t: (_vec(s, t),), trips=(0,)),
    LoopCase("scaled_rows", scaled_rows,
             lambda s, t: (_rng(s, t).uniform(-1, 1, (s, 5)), s - 1), trips=(0,)),
    LoopCase("newton_sqrt", newton_sqrt, lambda s, t: (_vec(s, t, 0.5, 50.0), 1e-12),
             trips=(0,)),
    LoopCase("mode_switch", mode_switch, lambda s, t: (_vec(s, t), t), trips=(0, 1, 2)),
    LoopCase("power_iteration", power_iteration, lambda s, t: (_spd(s, t), t), **SUMS),
    LoopCase("ping_pong", ping_pong, lambda s, t: (_vec(s, t), t)),
    LoopCase("prefix_sums", prefix_sums, lambda s, t: (_vec(s, t),), trips=(0,), **SUMS),
    LoopCase("wave", wave, lambda s, t: (_grid(s, t), t, 0.1), trips=(3, 20)),
    LoopCase("first_over", first_over, lambda s, t: (_vec(s, t, 0, 1), t / 4), trips=(2, 8)),
    LoopCase("skip_every_third", skip_every_third, lambda s, t: (_vec(s, t),), trips=(0,)),
    LoopCase("histogram", histogram, lambda s, t: (_vec(s, t, -0.1, 1.1), t), trips=(4, 16)),
    LoopCase("matvec_rows", matvec_rows, lambda s, t: (_dominant(s, t), _vec(s, t)),
             trips=(0,), **SUMS),
    LoopCase("cholesky", cholesky, lambda s, t: (_spd(s, t),), trips=(0,), **SUMS),
    LoopCase("floyd_warshall", floyd_warshall,
             lambda s, t: (np.abs(_dominant(s, t)) * 4,), trips=(0,)),
    LoopCase("euler_f32", euler_f32,
             lambda s, t: (_vec(s, t).astype(np.float32), np.zeros(s, np.float32), t, 0.01)),
    LoopCase("triangle_count", triangle_count, lambda s, t: (_vec(s, t), min(s, t)),
             trips=(0, 3, 50)),
    LoopCase("damped", damped, lambda s, t: (_vec(s, t), _vec(s, t + 1), t)),
    LoopCase("strided_sweep", strided_sweep, lambda s, t: (_vec(s, t), s - t % 3),
             trips=(0, 1, 2)),
)


#: programs that compile today (``routes["python"] == 0``) with ``compiles == 1`` across the
#: sizes and trip counts of ``calls``: add a name when its loops compile, never remove one
EXPECTED_TO_COMPILE: frozenset[str] = frozenset({
    "heat", "lower_solve", "trace_tanh", "distances", "relax", "lu_inplace", "jacobi_1d",
    "upper_solve", "gauss_seidel_1d", "running_total", "scaled_rows", "ping_pong",
    "prefix_sums", "wave", "matvec_rows", "floyd_warshall", "euler_f32", "strided_sweep"})

#: issue 15's Done-when sizes and trip counts: one compile for all of them
DONE_WHEN_SIZES, DONE_WHEN_TRIPS = (10, 500), (3, 50, 1000)


def calls(case: LoopCase) -> list[Callable[[], tuple]]:
    """Every size with every trip count, then the first again: fresh inputs per call."""
    pairs = [(s, t) for s in case.sizes for t in case.trips]
    pairs.append(pairs[0])
    return [lambda s=s, t=t: case.make(s, t) for s, t in pairs]
