"""Float sums shared by threads are NumPy's bits for every thread count: a pairwise sum is
cut at its own tree's nodes (``threads._tree_edges``) and the subtrees' sums are added
back in tree order; sums NumPy adds one element after another (over an outer axis, or
in 8192-element cast chunks) are shared only by output elements, never along the row."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

import autojit
from autojit.lower_cpu.threads import SPLITS, _tree_edges

RNG = np.random.default_rng(20261202)
THREADS = [1, 2, 3, 4, 8]
#: lengths around the pairwise block (8, 128), the cast chunk (8192), a power of two
SIZES = [*range(21), 127, 128, 129, 130, 8191, 8192, 8193, 65535, 65536, 65537, 1_000_007]

REDUCTIONS = {
    "sum": lambda a, b: a.sum(),
    "mean": lambda a, b: a.mean(),
    "var": lambda a, b: a.var(),
    "mse": lambda a, b: ((a - b) ** 2).mean(),               # a fused producer
    "sum_exp": lambda a, b: np.exp(a - a.max()).sum(),       # two phases
    "dot_like": lambda a, b: (a * b).sum() + a.sum(),
}


def _spread(n: int, dtype) -> np.ndarray:
    """Values over many magnitudes, so any other summation order rounds differently."""
    return (RNG.standard_normal(n) * 10.0 ** RNG.integers(-4, 5, n)).astype(dtype)


def _forced(threads: int) -> autojit.config:
    return autojit.config(num_threads=threads, thread_min_work=0)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_full_float_reductions_are_numpy_s_bits_for_any_thread_count(threads, dtype, name):
    fn = REDUCTIONS[name]
    calls = [(_spread(n, dtype), _spread(n, dtype)) for n in SIZES]
    before = SPLITS["partials"]
    with _forced(threads):
        assert_calls_match_numpy(fn, calls, ulps=4 if name == "sum_exp" else 0)
    if threads > 1:
        assert SPLITS["partials"] > before     # the rows really were shared


def test_sums_of_exactly_computed_values_ignore_the_thread_count():
    """exp is within ULPs of NumPy, but the threaded sums are one thread's bits."""
    x = _spread(1_000_007, np.float64) * 1e-4
    results = []
    for threads in THREADS:
        with _forced(threads):
            results.append(autojit.autoroute(lambda a: np.exp(a).sum(), force="cpu")(x))
    assert len({r.tobytes() for r in results}) == 1


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_long_rows_are_shared_exactly(threads, dtype):
    calls = [(_spread(r * n, dtype).reshape(r, n),)
             for r, n in [(2, 70001), (3, 8193), (1, 65537), (2, 130), (3, 17)]]
    with _forced(threads):
        assert_calls_match_numpy(lambda a: (a.sum(axis=1), a.mean(axis=-1),
                                            a.var(axis=1)), calls)


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_sequential_and_chunked_sums_stay_numpy_s_order(threads):
    """Over an outer axis NumPy adds row after row, and a sum with a cast adds 8192-element
    chunks one after another: neither may be cut along the reduced axis."""
    calls = [(_spread(r * n, np.float32).reshape(r, n),)
             for r, n in [(5003, 3), (20001, 2), (3, 5003), (64, 2049)]]
    with _forced(threads):
        assert_calls_match_numpy(lambda a: (a.sum(axis=0), a.mean(axis=0)), calls)
        assert_calls_match_numpy(
            lambda a: (a.sum(dtype=np.float64), a.mean(dtype=np.float64)),
            [(_spread(n, np.float32),) for n in (8191, 8193, 65537, 1_000_007)])
        assert_calls_match_numpy(
            lambda a: a.mean(), [(RNG.integers(-9, 10**6, n),) for n in (8193, 300_001)])


def test_tree_edges_are_pairwise_sum_s_nodes():
    """The subtrees are NumPy's: n2 = n/2 - (n/2) % 8 at every node, none under 129
    split, and an edge inside a step of a multi-position loop step refuses the cut."""
    assert _tree_edges(100, 1, 8) is None                  # one block: nothing to share
    assert list(_tree_edges(130, 1, 8)) == [0, 64, 130]
    assert list(_tree_edges(1000, 1, 4)) == [0, 248, 496, 744, 1000]
    edges = _tree_edges(1_000_007, 1, 16)
    assert len(edges) == 17 and all(e % 8 == 0 for e in edges[:-1])
    assert list(_tree_edges(4, 256, 2)) == [0, 2, 4]
    assert _tree_edges(3, 1000, 2) is None                 # n2 = 1496: inside step 1


def _long_chain(a):
    for _ in range(40):       # 80 element instructions: the block's scratch-array form
        a = a * 0.999 + 0.001
    return a.sum(), (a * 2.0).sum()


@pytest.mark.parametrize("threads", [1, 3])
def test_long_element_code_sums_are_numpy_s_bits(threads):
    calls = [(_spread(n, np.float64),) for n in (7, 129, 8193, 100_003)]
    with _forced(threads):
        assert_calls_match_numpy(_long_chain, calls)
