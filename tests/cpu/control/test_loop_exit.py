# ruff: noqa: B007, SIM102 (the programs as users and the loop generator write them)
"""A ``break`` in a ``for`` over ``range`` whose condition is traced: the loop region stops
after the iteration that sets its break flag (``Region.exit``), in the host loop and the
native driver alike, so ``for it in range(max_iter): ...; if err < tol: break`` over a
Python int argument compiles (issue 15 scope 1). The values after the loop are Python's:
the carried values as of the breaking iteration."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

import autojit.runtime.native_region as native_region
from autojit import autoroute
from autojit.ir.evaluate import evaluate_graph
from autojit.tracer.convert import convert_function
from autojit.tracer.trace import trace_function


def _compiled_once(jitted) -> None:
    """Every call ran compiled, from one compile (trip counts change no trace)."""
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]
    assert stats["compiles"] == 1, stats["recompiles"]


def newton_sqrt(x, max_iter, tol):
    err = 1.0
    for it in range(max_iter):
        y = 0.5 * (x + 2.0 / x)
        err = np.max(np.abs(y - x))
        x = y
        if err < tol:
            break
    return x, err


def jacobi(a, b, max_iter, tol):
    x = np.zeros_like(b)
    d = np.diag(a)
    r = a - np.diag(d)
    for _ in range(max_iter):
        new = (b - r @ x) / d
        delta = np.max(np.abs(new - x))
        x = new
        if delta < tol:
            break
    return x


def _start(n=8, dtype=np.float64):
    return np.linspace(1.0, 9.0, n).astype(dtype)


@pytest.mark.parametrize("max_iter", [0, 1, 2, 3, 5, 100, 10**12])
def test_converge_until_tol_stops_at_the_break(max_iter):
    # (10**12: a region that ran its whole range would not return)
    assert_matches_numpy(newton_sqrt, _start(), max_iter, 1e-12)


@pytest.mark.parametrize("tol", [1e9, 0.5, 1e-3, 0.0])
def test_break_taken_first_later_or_never(tol):
    assert_matches_numpy(newton_sqrt, _start(), 40, tol)


def test_one_compiled_loop_for_many_trip_counts():
    assert_calls_match_numpy(newton_sqrt, [(_start(), 10**9, 1e-12), (_start(5), 3, 1e-12),
                                           (_start(), 0, 1e-12), (_start(3), 50, 10.0),
                                           (_start(), 7, 0.0)])


def test_float32_converge():
    assert_matches_numpy(newton_sqrt, _start(dtype=np.float32), 10**6, np.float32(1e-6))


def test_jacobi_until_tol():
    rng = np.random.default_rng(1)
    a = rng.random((6, 6)) + np.eye(6) * 6
    b = rng.random(6)
    assert_calls_match_numpy(jacobi, [(a, b, 10**6, 1e-13), (a, b, 4, 1e-13),
                                      (a, b, 10**6, 1.0)])


def test_native_driver_stops_at_the_break(driver_runs):
    jitted = assert_matches_numpy(newton_sqrt, _start(), 10**12, 1e-12)
    assert driver_runs() >= 1, native_region.DECLINED[0]
    jitted(_start(), 10**12, 1e-12)
    assert driver_runs() >= 2, native_region.DECLINED[0]


def with_continue(x, max_iter, tol):
    total = np.sum(x) * 0.0
    for k in range(max_iter):
        x = x * 0.5
        if np.sum(x) > 4.0:
            continue
        total = total + np.sum(x)
        if total > tol:
            break
    return x, total


# (tol 4.0 breaks at k = 5; tol 1e9 never does. An earlier version of this test had tol 5.0
# with 10**9 iterations: ``total`` rises to exactly 5.0 and stays there once x is 0.0, so
# plain NumPy, the oracle, never reached the break and ran 10**9 iterations: it hung)
@pytest.mark.parametrize("max_iter,tol", [(10**9, 4.0), (3, 4.0), (30, 1e9), (0, 1.0)])
def test_break_and_continue(max_iter, tol):
    assert_matches_numpy(with_continue, _start(), max_iter, tol)


def test_break_and_continue_on_array_data_compile_once():
    _compiled_once(assert_calls_match_numpy(with_continue, [
        (_start(), 10**9, 4.0), (_start(), 3, 4.0), (_start(5), 30, 1e9), (_start(), 0, 1.0),
        (_start(), 1, 4.0), (_start(), 2, 4.0)]))


def with_continue_python_total(x, max_iter, tol):
    total = 0.0
    for k in range(max_iter):
        x = x * 0.5
        if np.sum(x) > 4.0:
            continue
        total = total + np.sum(x)
        if total > tol:
            break
    return x, total


@pytest.mark.parametrize("max_iter,tol", [(10**9, 4.0), (3, 4.0), (0, 1.0)])
def test_continue_leaving_a_python_float_or_a_numpy_one(max_iter, tol):
    # ``total`` is the Python float 0.0 where every iteration continues and a NumPy
    # float64 once one adds to it: its type depends on the data, so this runs as Python
    assert_matches_numpy(with_continue_python_total, _start(), max_iter, tol,
                         compiled=False)


def inner_break(x, n, limit):
    total = np.zeros(())
    for j in range(n):
        for i in range(n):
            total = total + x[i]
            if total > limit:
                break
        total = total * 0.5
    return total


@pytest.mark.parametrize("n,limit", [(5, 3.0), (5, 1e9), (0, 1.0), (7, 0.0)])
def test_break_in_an_inner_loop_leaves_only_it(n, limit):
    assert_calls_match_numpy(inner_break, [(np.arange(8.0), n, limit)])


def outer_break(x, n, tol):
    for j in range(n):
        for i in range(3):
            x = x * 0.5 + i
        if np.max(x) < tol:
            break
    return x


@pytest.mark.parametrize("n,tol", [(10**9, 4.5), (2, 4.5), (6, -1.0)])
def test_break_in_an_outer_loop_around_an_inner_one(n, tol):
    assert_matches_numpy(outer_break, _start(), n, tol)


def while_break(x, tol):
    steps = 0
    while steps < 1000:
        x = x * 0.5
        if np.max(x) < tol:
            break
        steps += 1
    return x, steps


@pytest.mark.parametrize("tol", [1.0, 1e-6, 1e9, -1.0])
def test_break_in_a_while(tol):
    assert_matches_numpy(while_break, _start(), tol)


def index_after(x, max_iter, tol):
    it = -1
    for it in range(max_iter):
        x = x * 0.5
        if np.max(x) < tol:
            break
    return x, it


@pytest.mark.parametrize("max_iter,tol", [(50, 1.0), (3, 1.0), (0, 1.0)])
def test_index_read_after_the_loop(max_iter, tol):
    # the index read after a loop is a Python int the region does not carry yet: this
    # compiles or falls back (Python's answer either way), never a wrong one
    assert_matches_numpy(index_after, _start(), max_iter, tol, compiled=False)


def _generated(seed: int):
    """A converge loop of a random shape: an update, an error, a break on it."""
    rng = np.random.default_rng(seed)
    factor, shift = float(rng.uniform(0.2, 0.9)), float(rng.uniform(-1, 1))
    reduce = [np.max, np.sum, np.min][seed % 3]

    def f(x, max_iter, tol):
        err = np.zeros(())
        for _ in range(max_iter):
            new = x * factor + shift
            err = reduce(np.abs(new - x))
            x = new
            if err < tol:
                break
        return x, err
    return f


@pytest.mark.parametrize("seed", range(6))
def test_generated_converge_loops(seed):
    fn = _generated(seed)
    assert_calls_match_numpy(fn, [(_start(), 10**9, 1e-9), (_start(4), 2, 1e-9),
                                  (_start(), 5, 1e9), (_start(), 0, 1.0)])


def test_compiles_without_fallback():
    jitted = autoroute(newton_sqrt, force="cpu")
    jitted(_start(), 10**9, 1e-12)
    assert not jitted.stats()["fallbacks"]


# -- the executors: reference evaluator, native driver (a break at any depth) ----------------
def test_the_reference_evaluator_stops_at_the_break():
    graph = trace_function(convert_function(newton_sqrt), (_start(), 5, 1e-12))
    assert any(n.op.name == "REGION" and n.attr("region").exit >= 0 for n in graph.nodes)
    x, err = evaluate_graph(graph, (_start(), 10**12, 1e-12))   # (its whole range: hangs)
    want_x, want_err = newton_sqrt(_start(), 10**12, 1e-12)
    assert np.array_equal(x, want_x) and float(err) == float(want_err)


def relax_rows(a, n, tol):
    for sweep in range(n):
        for r in range(1, a.shape[0]):
            a[r] = 0.5 * (a[r] + a[r - 1])
        if np.max(np.abs(a[1:] - a[:-1])) < tol:
            break
    return a


def _grid():
    return np.linspace(0.0, 8.0, 24).reshape(6, 4)


def test_native_driver_stops_an_outer_loop_of_inner_loops(driver_runs):
    # the dry run of a top loop holding loops visits each of its iterations: it proves
    # the range in doubling pieces, never the 10**9 iterations past the break
    jitted = assert_calls_match_numpy(relax_rows, [(_grid(), 10**9, 1e-3), (_grid(), 3, 1e-3),
                                                   (_grid(), 0, 1e-3), (_grid(), 10**9, 1e9)])
    assert driver_runs() == 4, native_region.DECLINED[0]
    _compiled_once(jitted)


def halve_rows_until(a, n, limit):
    for sweep in range(n):
        for r in range(a.shape[0]):
            a[r] = a[r] * 0.5
            if a[r, 0] < limit:
                break
    return a


def test_native_driver_stops_an_inner_loop_at_its_break(driver_runs):
    # the inner loop's EXIT record ends only it; the outer loop goes on
    jitted = assert_calls_match_numpy(halve_rows_until, [
        (_grid(), 5, 3.0), (_grid(), 5, -1.0), (_grid(), 50, 1e9), (_grid(), 0, 1.0),
        (_grid(), 10**5, 3.0)])
    assert driver_runs() == 5, native_region.DECLINED[0]
    _compiled_once(jitted)


def wrapped_rows(a, n, tol):
    for t in range(n):
        for r in range(1, 3):
            a[r] = a[r] + a[5 - t] * 0.25   # 5 - t < 0 from t = 6: NumPy counts from the end
        if np.max(a) > tol:
            break
    return a


def test_a_piece_the_driver_cannot_prove_is_the_host_loop_s(driver_runs, monkeypatch):
    # pieces of 2, 4, 8 iterations: the third holds a[-1] (the affine form assumes no
    # wrap-around), so the host loop runs from t = 6 to the break at t = 14
    monkeypatch.setattr(native_region, "_FIRST_PIECE", 2)
    assert_calls_match_numpy(wrapped_rows, [(np.linspace(0, 1, 40).reshape(10, 4), 10**9, 3.0),
                                            (np.linspace(0, 1, 40).reshape(10, 4), 4, 3.0)])
    assert driver_runs() >= 2, native_region.DECLINED[0]


# -- programs of the random loop generator (tests/fuzz/loopgen.py) ---------------------------
def countdown_to_a_remainder(n):
    for j in range(n - 1, -1, -1):
        if j % 3 == 1:
            break
    it5 = 0
    return it5


def inner_break_on_the_index(x, y, n):
    for p in range(y.shape[0]):
        for j in range(n):
            if j % 2 == 0:
                break
    return x


def inner_break_on_an_argument(x, steps, n):
    acc1 = 0.0
    for p in range(1, n):
        for t in range(steps - 1, -1, -1):
            if n > 0:
                break
    return x + acc1


def scratch_rows_then_a_break(x, steps):
    e5 = np.empty((x.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        e5[i] = x[::-1] + i
    for i in range(steps):
        if i % 3 == 1:
            if steps > 1:
                break
    return e5


_TRIPS = (0, 1, 2, 50, 10**6)


@pytest.mark.parametrize("fn,make", [
    (countdown_to_a_remainder, lambda n: (n,)),
    (inner_break_on_the_index, lambda n: (np.arange(4.0), np.arange(3.0), n)),
    (inner_break_on_an_argument, lambda n: (np.arange(4.0), n, 5)),
    (scratch_rows_then_a_break, lambda n: (np.arange(4.0), n)),
])
def test_generated_breaks_compile_once(fn, make):
    _compiled_once(assert_calls_match_numpy(fn, [make(n) for n in _TRIPS]))


def test_an_outer_loop_around_an_inner_break_compiles_once():
    # (the outer loop has no break: it runs its whole range, each iteration an inner
    # loop that breaks at once; its host loop costs tens of microseconds per iteration)
    _compiled_once(assert_calls_match_numpy(inner_break_on_an_argument, [
        (np.arange(4.0), 7, n) for n in (0, 1, 2, 50, 300)]))


def step_until_steady(u, dt, max_steps, tol):
    for step in range(max_steps):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2.0 * u[1:-1] + u[2:]
        change = dt * lap
        u = u + change
        if np.max(np.abs(change)) < tol:
            break
    return u


def test_time_stepping_until_steady_compiles_once():
    u = np.sin(np.linspace(0.0, 3.0, 16))
    _compiled_once(assert_calls_match_numpy(step_until_steady, [
        (u, 0.2, 10**9, 1e-4), (u, 0.2, 0, 1e-4), (u, 0.2, 1, 1e-4), (u, 0.2, 2, 1e-4),
        (u, 0.2, 50, 1e-4), (u, 0.2, 10**6, 1e9), (u[:9], 0.1, 10**6, 1e-3)]))


def write_then_break(out, x, n, limit):
    total = np.sum(x) * 0.0
    for i in range(n):
        out[i % 4] = x * i   # the breaking iteration's write happens
        total = total + np.sum(x) * i
        if total > limit:
            break
        out[0] = out[0] + 1.0           # ... its later writes do not
    return out, total


def test_writes_of_the_breaking_iteration_happen_and_later_ones_not():
    calls = [(np.zeros((4, 3)), np.arange(3.0), n, limit)
             for n, limit in ((10**9, 20.0), (0, 1.0), (1, -1.0), (2, 1.0), (50, 1e9),
                              (10**6, 100.0))]
    _compiled_once(assert_calls_match_numpy(write_then_break, calls))


def write_rows_until(out, x, n, limit):
    for i in range(n):
        out[i] = out[i] + x
        if np.max(out[i]) > limit:
            break
        out[i + 1] = out[i] + 0.5
    return out


def test_the_driver_writes_rows_until_the_break(driver_runs):
    # ``out[i]`` of i past the break leaves the array: only the pieces before it are proven
    calls = [(np.zeros((16, 3)), np.arange(3.0), n, limit)
             for n, limit in ((10**9, 10.0), (0, 1.0), (1, -1.0), (3, 1e9), (10**6, 0.5))]
    jitted = assert_calls_match_numpy(write_rows_until, calls)
    assert driver_runs() == len(calls), native_region.DECLINED[0]
    _compiled_once(jitted)


# -- a loop's else: it runs where no break ended the loop ------------------------------------
def find_first_above(x, n, t):
    found = x[0] * 0.0 - 1.0
    for i in range(n):
        if x[i % 4] > t:
            found = x[i % 4] * 1.0
            break
    else:
        found = np.sum(x) * 0.0 - 2.0
    return found


def test_a_for_else_runs_where_the_loop_did_not_break():
    x = np.array([0.5, 2.0, 3.0, 1.0])
    _compiled_once(assert_calls_match_numpy(find_first_above, [
        (x, 10**6, 2.5), (x, 3000, 9.0), (x, 0, 1.0), (x, 1, 2.5), (x, 2, 0.1),
        (x, 50, 9.0)]))


def doubled_after(x, n):
    acc = x * 0.0
    for i in range(n):
        acc = acc + x
    else:
        acc = acc * 2.0
    return acc


def halved_until(x, tol):
    k = 0
    while k < 10:
        x = x * 0.5
        if np.max(x) < tol:
            break
        k += 1
    else:
        x = x - 1.0
    return x, k


def test_an_else_without_a_break_and_a_while_else():
    x = np.array([0.5, 2.0, 3.0, 1.0])
    _compiled_once(assert_calls_match_numpy(doubled_after, [(x, 3), (x, 0), (x, 1)]))
    _compiled_once(assert_calls_match_numpy(halved_until, [(x, 1.0), (x, 1e-9), (x, 1e9)]))


def search_else(n, t):
    for i in range(n):
        if i * i > t:
            break
    else:
        i = -1
    return i


def else_holding_an_outer_break(n):
    out = []
    for j in range(n):
        for i in range(3):
            if i == j:
                break
        else:
            out.append(j)
            if j > 4:
                break   # the outer loop's
    return out


def while_else_counter(n):
    k = 0
    while k < n:
        k += 1
        if k == 3:
            break
    else:
        k = -k
    return k


@pytest.mark.parametrize("fn,calls", [
    (search_else, [(0, 5), (2, 5), (10, 5), (10, 500)]),
    (else_holding_an_outer_break, [(0,), (3,), (5,), (9,)]),
    (while_else_counter, [(0,), (2,), (3,), (7,)]),
])
def test_a_loop_else_means_what_python_s_does(fn, calls):
    from tests.cpu.control.test_convert_semantics import assert_same
    assert_same(fn, *calls)


def sweep_until_still(a, tol):
    err = np.max(a) * 0.0 + 1.0
    while err > tol:
        old = a.copy()
        for r in range(1, a.shape[0]):
            a[r] = 0.5 * (a[r] + a[r - 1])
            if a[r, 0] > 100.0:
                break
        err = np.max(np.abs(a - old))
    return a, err


def add_rows_backwards(out, x, n, limit):
    for i in range(n - 1, -1, -1):
        out[i] = out[i] + x
        if np.max(out[i]) > limit:
            break
    return out


def test_the_driver_stops_a_for_in_a_while_and_a_reversed_range(driver_runs):
    # a for loop in a while body runs in the driver's run_block: its EXIT ends only it;
    # a reversed range's pieces walk down
    jitted = assert_calls_match_numpy(sweep_until_still, [(_grid(), 1e-3), (_grid() * 100, 1e-3)])
    _compiled_once(jitted)
    rows = [(np.zeros((40, 3)), np.arange(3.0), n, limit)
            for n, limit in ((40, 1e9), (40, -1.0), (3, 1.0), (0, 1.0), (25, 3.0))]
    _compiled_once(assert_calls_match_numpy(add_rows_backwards, rows))
    assert driver_runs() == 7, native_region.DECLINED[0]


# -- the native loop (one kernel of a scalar body): guarded on the flag, run in pieces --------
@pytest.fixture
def kernel_pieces(monkeypatch):
    """The trip lengths the native loop kernel ran (None: a piece it could not run)."""
    import autojit.runtime.regions as regions_module
    ran = []
    original = regions_module._run_native

    def counting(*args, **kwargs):
        result = original(*args, **kwargs)
        ran.append(None if result is None else len(args[5]))
        return result
    monkeypatch.setattr(regions_module, "_run_native", counting)
    monkeypatch.setattr(regions_module, "_FIRST_PIECE", 4)
    return ran


def weighted_until(x, t):
    acc = x[0] * 0.0
    for i in range(len(x)):
        acc = acc + x[i] * i   # (the index as a float: the driver does not take it)
        if acc > t:
            break
    return acc


def test_a_scalar_loop_with_a_break_is_one_kernel_in_pieces(kernel_pieces):
    x = np.linspace(0.0, 1.0, 40)
    jitted = assert_calls_match_numpy(weighted_until, [(x, 1e9), (x, 2.0), (x, -1.0),
                                                       (x[:3], 0.1), (x, 0.0)])
    assert jitted.inspect(x, 1.0).plan.regions[0].native is not None
    # pieces of 4, 8, 16, then the 12 left: the whole range; breaks at i = 6, 0, 2 and 1
    # (the iterations of a piece past the break are guarded: they change nothing)
    assert kernel_pieces == [4, 8, 16, 12, 4, 8, 4, 3, 4]
    _compiled_once(jitted)


def negate_until(x, y, n, t):
    for i in range(n):
        v = -x[i] * 2.0
        y[i] = v   # the breaking iteration's write happens, none after it
        if v < t:
            break
    return y


def test_writes_of_a_guarded_kernel_stop_at_the_break(kernel_pieces):
    x = np.linspace(0.0, 1.0, 30)
    calls = [(x, np.ones(30), n, t) for n, t in ((30, -1.0), (30, -9.0), (0, 1.0), (1, 1.0),
                                                  (2, -0.01), (30, 0.5))]
    jitted = assert_calls_match_numpy(negate_until, calls)
    assert jitted.inspect(*calls[0]).plan.regions[0].native is not None
    assert kernel_pieces and all(p is not None for p in kernel_pieces)
    _compiled_once(jitted)


def test_a_kernel_piece_past_the_arrays_is_the_host_loop_s(kernel_pieces):
    # range(10**9) over y[i]: the pieces in range run as the kernel, the one leaving y
    # ([28, 60)) does not run (None), the host loop goes on from there to the break at 28
    x = np.linspace(0.0, 1.0, 30)
    _compiled_once(assert_calls_match_numpy(negate_until, [(x, np.ones(30), 10**9, -1.9)]))
    assert kernel_pieces == [4, 8, 16, None]


def _index_after_break(x, tol):
    for i in range(x.shape[0]):
        if x[i] > tol:
            break
    return i


def test_the_index_read_after_a_loop_with_a_break_is_the_breaking_iteration_s() -> None:
    # pyscalar's "the index after the loop is the range's last" must not hold after a break
    # (merging it with the early exit gave 19 where Python gives 10)
    assert_calls_match_numpy(_index_after_break, [
        (np.linspace(0, 1, 20), 0.5), (np.linspace(0, 1, 20), 2.0), (np.linspace(0, 1, 7), -1.0)])
