"""Large programs: compile work grows linearly with their size (counted, never timed), long
unrolled loops neither recurse nor reach the user as internal errors, and Ctrl-C stops a
long first compile and leaves the function usable. ``benchmarks/compile_scaling.py`` times
the stages by hand."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy

from autojit import FallbackWarning, autoroute, config
from autojit.dispatch import dispatcher as dispatcher_module
from autojit.fuse.partition import SIBLING_CANDIDATES, partition_graph
from autojit.fuse.plan import plan_kernels
from autojit.ir.ops import Op
from autojit.runtime.targets import TARGETS
from autojit.tracer import trace_function


def _chain(n: int):
    def fn(x):
        for _ in range(n):
            x = np.sin(x) + 1.0
        return x
    return fn


def _shared_input(n: int):
    """Every op reads the argument: each one's siblings are every group reading it."""
    def fn(x):
        y = x
        for _ in range(n):
            y = np.sin(y) * x
        return y
    return fn


def _with_reductions(n: int):
    def fn(x):
        for i in [*range(n)]:   # a list: unrolled (a range loop would be a region)
            x = np.sin(x) * 0.5
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x
    return fn


def _evaluations(fn, max_ops: int) -> tuple[int, int]:
    graph = trace_function(fn, (np.ones((4, 8)),))
    counters: dict[str, int] = {}
    partition_graph(graph, max_ops, counters)
    return counters["evaluations"], len(graph.nodes)


@pytest.mark.parametrize("make", [_chain, _shared_input, _with_reductions])
@pytest.mark.parametrize("max_ops", [2, 16, 128])
def test_join_attempts_per_op_are_bounded(make, max_ops):
    """Each op tries its inputs' groups and a bounded number of siblings: the attempts per
    op do not grow with the program (they did: every group reading a value was tried)."""
    small, small_nodes = _evaluations(make(100), max_ops)
    large, large_nodes = _evaluations(make(800), max_ops)
    bound = 3 + SIBLING_CANDIDATES
    assert small <= bound * small_nodes and large <= bound * large_nodes
    assert large / large_nodes <= small / small_nodes + 1


@pytest.mark.parametrize("max_ops", [16, 128])
def test_kernels_with_many_passes_stay_within_the_emitted_bound(max_ops):
    """A later pass recomputes the row values it reads: the partition counts those
    recomputations, so no kernel emits more than twice max_ops ops (at least 64; a kernel
    of 128 graph ops in 14 passes emitted ~700 and took LLVM a second)."""
    plan = plan_kernels(trace_function(_with_reductions(300), (np.ones((4, 8)),)),
                        [True], max_ops)
    bound = max(2 * max_ops, 64)
    leaves = (Op.ARG, Op.CONST, Op.VIEW, Op.SIZE)
    for kernel in plan.kernels:
        emitted = {(i.node, i.level, i.phase) for i in kernel.body
                   if i.node is not None and i.node >= 0
                   and plan.graph.node(i.node).op not in leaves}
        assert len(emitted) <= bound, kernel.name


def test_long_unrolled_scalar_accumulation_compiles():
    """The Numba five-minute-guide loop: thousands of scalar ops feeding one broadcast
    (they recursed past Python's limit, and RecursionError reached the caller)."""
    def trace_plus(a):
        trace = 0.0
        for i in range(a.shape[0]):
            trace += np.tanh(a[i, i % 4])
        return a + trace

    assert_matches_numpy(trace_plus, np.arange(1500 * 4.0).reshape(1500, 4) / 1e4, ulps=4)


def test_long_chain_of_views_and_writes_compiles():
    def shifted(x, y):
        for i in range(1, x.shape[0]):
            y[i:i + 1] = y[i - 1:i] * 0.5 + x[i:i + 1]
        return y

    assert_matches_numpy(shifted, np.linspace(0, 1, 400), np.zeros(400))


def test_long_loop_of_single_element_writes_keeps_every_write():
    """``y[i] = ...`` writes through a 0-d view of the argument; taken with integers alone
    it was a scalar copy, and every write was lost."""
    def recurrence(x, y):
        for i in range(1, x.shape[0]):
            y[i] = y[i - 1] * 0.5 + x[i]
        return y

    for n in (2, 5, 300):
        assert_matches_numpy(recurrence, np.linspace(0, 1, n), np.zeros(n))
    assert_matches_numpy(lambda a: a.__setitem__((1, 2), a[0, 0] + 1) or a,
                         np.arange(12.0).reshape(3, 4))


def test_long_chain_of_views_of_views_compiles():
    def peeled(x):
        for _ in range(1500):
            x = x[1:]
        return x + 1

    assert_calls_match_numpy(peeled, [(np.arange(2000.0),), (np.arange(1600.0),)])


def test_internal_error_while_planning_falls_back_with_its_reason(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("planner bug")

    monkeypatch.setattr(dispatcher_module, "plan_kernels", broken)
    f = autoroute(lambda a: np.sin(a) + 1, force="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        result = f(np.ones(3))
    assert result.tolist() == (np.sin(np.ones(3)) + 1).tolist()
    assert any("internal error while planning (RuntimeError: planner bug)" in reason
               for reason in f.stats()["fallbacks"])


def test_internal_error_while_compiling_falls_back_with_its_reason(monkeypatch):
    def broken(kernel):
        raise RuntimeError("LLVM rejected it")

    monkeypatch.setattr(TARGETS["cpu"], "compile", broken)
    f = autoroute(lambda a: np.cos(a) * 3, force="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        results = [f(np.ones(3)), f(np.ones(3))]
    for result in results:
        assert result.tolist() == (np.cos(np.ones(3)) * 3).tolist()
    assert any("internal error while compiling (RuntimeError: LLVM rejected it)" in reason
               for reason in f.stats()["fallbacks"])


INTERRUPTED = textwrap.dedent('''
    import sys, time
    import numpy as np
    from autojit import autoroute

    @autoroute
    def fn(x):
        for i in range(x.shape[0]):
            x = np.sin(x) * 0.5
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x

    print("start", flush=True)
    try:
        fn(np.ones((3000, 8)))
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    small = np.ones((3, 8))
    print("after", bool(np.array_equal(fn(small), fn.__wrapped__(small))), flush=True)
''')


def test_ctrl_c_stops_a_long_first_compile_and_the_function_still_works():
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "start"
    time.sleep(0.5)     # tracing or compiling the 9,000-op program (a first call of ~2 s)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    line = process.stdout.readline().strip()
    latency = time.monotonic() - sent
    rest, errors = process.communicate(timeout=120)
    if line == "finished":
        pytest.skip("the compile finished before the interrupt")
    assert line == "interrupted", errors
    assert latency < 5.0, f"KeyboardInterrupt took {latency:.1f} s"
    assert rest.strip() == "after True", errors


# -- partition and plan regressions found with the rewrite ---------------------------------

def test_value_read_before_a_write_and_after_it_is_stored_before_the_write():
    """``v3`` reads ``a0`` before the masked write and is read again after it: recomputed
    after the write it would see the new memory (and the kernels formed a cycle)."""
    def mask_write(a0, a1):
        v1 = np.floor(a1)
        v3 = np.clip(a0, False, None)
        a0[v3] = True
        return v1, a0 > v3

    assert_calls_match_numpy(mask_write, [(np.array([True]), np.array([1.5])),
                                          (np.array([False]), np.array([2.5]))])
    assert_matches_numpy(mask_write, np.array([False]), np.array([-0.5]))


def test_value_read_before_a_write_through_a_broadcast_is_stored_before_it():
    def scaled_then_zeroed(x, y):
        column = x[:, :1] * 2.0
        x[...] = 0.0
        return y + column

    assert_matches_numpy(scaled_then_zeroed, np.arange(6.0).reshape(3, 2), np.ones((3, 4)))


@pytest.mark.parametrize("shape", [(2, 1), (1, 1), (3, 4), (2, 1, 3)])
@pytest.mark.parametrize("max_ops", [1, 2, 128])
def test_index_values_stored_or_recomputed_keep_their_loop(shape, max_ops):
    """An arange stored by one kernel is loaded by the next, and one recomputed inside a
    kernel keeps that kernel's loops per axis (it was emitted as the index of a loop the
    kernel had collapsed into one: IndexError)."""
    with config(fusion_max_ops=max_ops):
        assert_matches_numpy(lambda a: a - np.arange(a.shape[-1]) * 0.5,
                             np.ones(shape, np.int32))
        assert_matches_numpy(lambda a: a + np.eye(a.shape[-2], a.shape[-1], dtype=np.uint16),
                             np.ones(shape[-2:], np.int8))


@pytest.mark.parametrize("num", [0, 1, 2, 5])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_of_any_length_including_one(num, endpoint):
    """linspace(a, b, 1) is [a] (NumPy's undefined step is not used); with the size read
    from an argument of last dim 1 it was a column of NaNs once it compiled."""
    assert_matches_numpy(lambda x: x + np.linspace(2.0, -3.0, num, endpoint=endpoint),
                         np.zeros(num))
    assert_matches_numpy(lambda a: a - np.linspace(0.0, 1.0, a.shape[-1], endpoint=endpoint),
                         np.ones((2, max(num, 1)), np.int32))
