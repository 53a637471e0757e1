"""Kernel calls split across threads: results equal NumPy's (through the oracle) with the
split forced on at small sizes, identical from run to run, and within rounding of one
thread. ``thread_min_work=0`` forces every splittable call onto the pool; the thread counts
do not divide the sizes evenly, and some exceed the rows there are to share."""

from __future__ import annotations

import importlib
import math
import os
import threading

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy, assert_same_value
from tests.support.programs import chain, image_norm, layer_norm, softmax

import autojit
from autojit import autoroute
from autojit.lower_cpu import threads as threads_module
from autojit.lower_cpu.pool import ThreadPool
from autojit.lower_cpu.threads import SPLITS

THREADS = [2, 7]


def _forced(threads: int) -> autojit.config:
    return autojit.config(num_threads=threads, thread_min_work=0)


def _splits() -> dict[str, int]:
    return dict(SPLITS)


def _grew(before: dict[str, int], way: str) -> bool:
    return SPLITS[way] > before.get(way, 0)


#: float sums of strided arguments run as Python: NumPy adds them in memory order
STRIDED_FLOAT_SUM = "in memory order"


def full_reductions(x):
    # no float prod: it keeps NumPy's row order, so a kernel holding one is not split
    return (x.sum(), x.mean(), x.min(), x.max(), np.argmax(x), np.argmin(x),
            np.any(x > 0.97), np.all(x > 0.01), np.nanmax(x), (x > 0.5).sum())


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.mark.parametrize("threads", THREADS)
def test_elementwise_layouts(threads):
    rng = _rng()
    base = rng.random((37, 29))
    with _forced(threads):
        before = _splits()
        assert_matches_numpy(chain, rng.random(1001), rtol=1e-12, atol=1e-15)
        assert _grew(before, "outer")
        assert_matches_numpy(lambda a, b: a * 2.0 - b, base[::2, ::-3], base[1::2, ::3])
        assert_matches_numpy(lambda a, b: a + b, base, rng.random(29))        # broadcast row
        assert_matches_numpy(lambda a, b: a + b, base, rng.random((37, 1)))   # broadcast col
        assert_matches_numpy(lambda a: a.T * 3.0, base)
        assert_matches_numpy(lambda a: (a > 0.5) & (a < 0.7), base[::-1])
        assert_matches_numpy(lambda a: a + np.arange(a.shape[-1]), base)   # a loop index
        assert_matches_numpy(lambda a: a.astype(np.float32) * np.int8(3), base[:5])


@pytest.mark.parametrize("threads", THREADS)
def test_writes_into_arguments(threads):
    def accumulate(a, x):
        a += x * 2.0

    def shift(a):
        a[1:] = a[:-1] + 1

    rng = _rng()
    with _forced(threads):
        assert_matches_numpy(accumulate, rng.random((23, 17)), rng.random(17))
        assert_matches_numpy(shift, rng.random(101))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
def test_row_reductions(threads, dtype):
    x = (_rng().random((9, 13, 11)) * 50).astype(dtype)
    tol = {"rtol": 1e-5 if dtype == "float32" else 1e-12, "atol": 1e-12}
    with _forced(threads):
        assert_matches_numpy(lambda a: (a.sum(axis=-1), a.max(axis=-1), a.min(axis=1),
                                        a.mean(axis=(1, 2)), a.argmax(axis=-1),
                                        a.sum(axis=0), a.max(axis=(0, 2), keepdims=True)),
                             x, **tol)
        assert_matches_numpy(lambda a: a.sum(axis=-1), x[:, ::-2, ::3], **tol,
                             allowed_fallbacks=[STRIDED_FLOAT_SUM])
        assert_matches_numpy(lambda a: a.argmin(axis=1), x[::-1], **tol)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("size", [2, 5, 1001, 4099])
def test_full_reductions(threads, size):
    x = _rng().random(size) + 0.5
    with _forced(threads):
        before = _splits()
        assert_matches_numpy(full_reductions, x, rtol=1e-12, atol=1e-12)
        # a float sum of one pairwise block (<= 128 elements) is not cut: NumPy adds it whole
        assert _grew(before, "partials") == (size > 128)
        assert_matches_numpy(full_reductions, x[::-3], rtol=1e-12, atol=1e-12,
                             allowed_fallbacks=[STRIDED_FLOAT_SUM])
        assert_matches_numpy(lambda a, b: np.mean((a - b) ** 2), x, x[::-1],
                             rtol=1e-12, atol=1e-12, allowed_fallbacks=[STRIDED_FLOAT_SUM])


@pytest.mark.parametrize("threads", THREADS)
def test_full_reductions_of_2d_and_narrow_rows(threads):
    rng = _rng()
    x = rng.random((11, 301))
    with _forced(threads):
        before = _splits()
        assert_matches_numpy(full_reductions, x, rtol=1e-12, atol=1e-12)
        assert_matches_numpy(full_reductions, x[::-2, 3::4], rtol=1e-12, atol=1e-12,
                             allowed_fallbacks=[STRIDED_FLOAT_SUM])
        # two outer rows, long rows: the rows themselves are shared through partials
        assert_matches_numpy(lambda a: (a.sum(axis=1), a.argmax(axis=1), a.mean(axis=-1)),
                             rng.random((2, 5003)), rtol=1e-12, atol=1e-12)
        assert_matches_numpy(lambda a: a.max(axis=(1, 2)), rng.random((3, 17, 19)))
        assert _grew(before, "partials")


@pytest.mark.parametrize("threads", THREADS)
def test_extremes_nan_and_first_occurrence_across_chunks(threads):
    x = np.zeros(1000)
    x[[123, 777, 901]] = 5.0       # ties in different chunks: the first one wins
    x[[50, 600]] = -5.0
    y = x.copy()
    y[[700, 950]] = np.nan         # the first NaN wins argmax/argmin; max/min propagate
    ints = (x * 3).astype(np.int16)
    bools = np.zeros(1001, bool)
    bools[999] = True
    with _forced(threads):
        for data in (x, y, ints):
            assert_matches_numpy(lambda a: (np.argmax(a), np.argmin(a), a.max(), a.min(),
                                            a.sum()), data)
        assert_matches_numpy(lambda a: (np.nanmax(a), np.nanmin(a)), y)
        assert_matches_numpy(lambda a: (np.any(a), np.all(a), np.argmax(a), a.sum()), bools)
        assert_matches_numpy(lambda a: (a.sum(dtype=np.int8), a.prod(), a.mean()),
                             np.arange(-300, 301, dtype=np.int16) % 7 - 3)


@pytest.mark.parametrize("threads", THREADS)
def test_fused_programs(threads):
    rng = _rng()
    with _forced(threads):
        before = _splits()
        assert_matches_numpy(softmax, rng.random((5, 7, 33), np.float32), rtol=2e-6,
                             atol=1e-7)
        assert_matches_numpy(layer_norm, rng.random((19, 64), np.float32), rtol=2e-5,
                             atol=1e-6)
        assert_matches_numpy(image_norm, rng.random((2, 21, 38), np.float32), rtol=2e-5,
                             atol=1e-6)
        assert _grew(before, "outer")
        # too few rows to share evenly, or none: partials phase by phase, with the values
        # a later phase reads (mean, std) carried between them
        before = _splits()
        assert_matches_numpy(image_norm, rng.random((5, 21, 38), np.float32), rtol=2e-5,
                             atol=1e-6)
        assert_matches_numpy(lambda a: (a.var(), a - a.mean(), a.std() * a.sum()),
                             rng.random(999), rtol=1e-12, atol=1e-12)
        assert_matches_numpy(lambda a: softmax(a[::-1]), rng.random(1001), rtol=1e-12,
                             allowed_fallbacks=[STRIDED_FLOAT_SUM])   # a reversed view
        assert_matches_numpy(softmax, rng.random(1001), rtol=1e-12)
        assert _grew(before, "partials")


def test_results_identical_run_to_run():
    rng = _rng()
    x, y = rng.random(10_007), rng.random(10_007)
    programs = [(lambda a, b: np.mean((a - b) ** 2), (x, y)),
                (lambda a, b: (a * b).sum(axis=-1), (x.reshape(1, -1), y)),
                (layer_norm, (rng.random((6, 500), np.float32),))]
    for threads in (2, 3):
        with _forced(threads):
            for fn, args in programs:
                jitted = autoroute(fn, force="cpu")
                first = jitted(*args)
                for _ in range(5):
                    assert_same_value(jitted(*args), first)


def test_full_reductions_identical_for_any_thread_count():
    """A row shared through partials is cut into the same chunks for every thread count."""
    x = _rng().random(20_011) - 0.5
    jitted = autoroute(lambda a: (a.sum(), np.mean(a * a), a.var(), np.argmax(a)),
                       force="cpu")
    with _forced(2):
        first = jitted(x)
    for threads in (3, 7, 16):
        with _forced(threads):
            for a, b in zip(jitted(x), first, strict=True):
                assert_same_value(a, b)


def test_long_rows_cut_by_size_alone():
    """A long row gets more chunks, smaller towards its end (``_partial_edges``), as many
    for every thread count."""
    x = _rng().random(1_300_007) - 0.5
    jitted = autoroute(lambda a: (a.sum(), np.mean(a * a), np.argmax(a)), force="cpu")
    assert len(threads_module._partial_edges(x.size, 1, 64)) > 17
    with _forced(2):
        first = jitted(x)
    for threads in (3, 16, 40):
        with _forced(threads):
            for a, b in zip(jitted(x), first, strict=True):
                assert_same_value(a, b)
    assert_same_value(first[0], x.sum(), rtol=1e-12)


def test_python_tasks_match_the_native_chunk_loop(monkeypatch):
    rng = _rng()
    programs = [(lambda a: (a.sum(), a.var()), (rng.random(30_011),)),
                (softmax, (rng.random((37, 301)),))]
    for fn, args in programs:
        jitted = autoroute(fn, force="cpu")
        with _forced(3):
            native = jitted(*args)
            monkeypatch.setattr(threads_module, "team", lambda: None)
            tasks = jitted(*args)
            monkeypatch.undo()
        for a, b in zip(native if isinstance(native, tuple) else (native,),
                        tasks if isinstance(tasks, tuple) else (tasks,), strict=True):
            assert_same_value(b, a)


def test_one_and_many_threads_agree():
    """Outer splits give one thread's bits exactly (transcendentals included: chunk edges
    keep libmvec's and libm's elements apart as on one thread); partials differ from one
    thread by the summation order only."""
    rng = _rng()
    x = rng.random((3, 40_001))
    exact = [chain, lambda a: np.exp(a[:, ::-1]) + np.sin(a[0]), lambda a: softmax(a.T)]
    rounded = [full_reductions, lambda a: a.sum(axis=-1), softmax]
    for fn in exact + rounded:
        jitted = autoroute(fn, force="cpu")
        with autojit.config(num_threads=1):
            one = jitted(x)
        with _forced(4):
            many = jitted(x)
        tolerance = {} if fn in exact else {"rtol": 1e-13, "atol": 1e-13}
        for a, b in zip(one if isinstance(one, tuple) else (one,),
                        many if isinstance(many, tuple) else (many,), strict=True):
            assert_same_value(b, a, **tolerance)


def test_small_calls_stay_on_the_calling_thread():
    jitted = autoroute(chain, force="cpu")
    x = _rng().random(1000)
    with autojit.config(num_threads=4, thread_min_work=1 << 40):
        before = _splits()
        jitted(x)
        assert _splits() == before
    with autojit.config(num_threads=1, thread_min_work=0):
        jitted(x)
        assert _splits() == before


def test_concurrent_callers_share_the_pool():
    jitted = autoroute(lambda a: (np.sin(a).sum(), np.cos(a)), force="cpu")
    rng = _rng()
    inputs = [rng.random(5000 + 37 * i) for i in range(6)]
    expected = [(np.sin(a).sum(), np.cos(a)) for a in inputs]
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with _forced(3):
                for _ in range(10):
                    total, values = jitted(inputs[i])
                    assert_same_value(total, expected[i][0], rtol=1e-12)
                    assert_same_value(values, expected[i][1], ulps=4)
        except BaseException as exc:  # noqa: BLE001 — reported below
            failures.append(exc)

    callers = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not failures, failures[0]


def test_pool_reraises_a_task_error_after_all_finish():
    pool = ThreadPool()
    done: list[int] = []

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        pool.run([lambda: done.append(0), fail, lambda: done.append(2)])
    assert sorted(done) == [0, 2]
    pool.run([lambda: done.append(3)] * 3)
    assert len(done) == 5


def test_num_threads_from_the_environment(monkeypatch):
    monkeypatch.setenv("AUTOJIT_NUM_THREADS", "3")
    monkeypatch.setenv("AUTOJIT_THREAD_MIN_WORK", "12345")
    try:
        settings = autojit.reload_environment()
        assert (settings.num_threads, settings.thread_min_work) == (3, 12345)
    finally:
        monkeypatch.undo()
        autojit.reload_environment()


def test_partials_that_fail_to_compile_leave_the_call_on_one_thread(monkeypatch):
    import autojit.lower_cpu.entries as entries
    from autojit.errors import CompileError

    def refuse(text, symbols):
        raise CompileError("planted")

    monkeypatch.setattr(entries, "link_entries", refuse)
    x = _rng().random(3001)
    with _forced(2):
        before = _splits()
        assert_matches_numpy(lambda a: a.sum() * 2.0, x, rtol=1e-12)
        assert SPLITS["partials"] == before.get("partials", 0)


@pytest.mark.parametrize("threads", THREADS)
def test_scans_split_only_across_rows(threads):
    x = _rng().random((9, 301))
    with _forced(threads):
        before = _splits()
        assert_matches_numpy(lambda a: (np.cumsum(a, axis=1), np.cumsum(a, axis=0),
                                        np.cumsum(a), np.cumprod(a[::-1] + 0.5, axis=-1)),
                             x, rtol=1e-12)
        assert SPLITS["partials"] == before.get("partials", 0)


def test_decorator_thread_options_reach_the_launch(monkeypatch):
    """``@autoroute(num_threads=1)`` keeps that function's calls on the caller where the
    environment splits every call, and ``num_threads=2`` splits where it says one thread
    (a ``config()`` block would override both: it is innermost)."""
    x = _rng().random(200_000)
    alone = autoroute(lambda a: np.sin(a) * 2.0, num_threads=1)
    split = autoroute(lambda a: np.sin(a) * 3.0, num_threads=2, thread_min_work=0)
    try:
        monkeypatch.setenv("AUTOJIT_NUM_THREADS", "2")
        monkeypatch.setenv("AUTOJIT_THREAD_MIN_WORK", "0")
        autojit.reload_environment()
        before = _splits()
        assert_same_value(alone(x), np.sin(x) * 2.0, ulps=4)
        assert not _grew(before, "outer")
        monkeypatch.setenv("AUTOJIT_NUM_THREADS", "1")
        autojit.reload_environment()
        assert_same_value(split(x), np.sin(x) * 3.0, ulps=4)
        assert _grew(before, "outer")
    finally:
        monkeypatch.undo()
        autojit.reload_environment()


@pytest.mark.parametrize(("v2", "v1", "limit"), [
    ("250000 100000", None, 2.5),          # cgroup v2: 2.5 CPUs
    ("max 100000", None, None),            # v2, no quota
    (None, ("200000", "100000"), 2.0),     # cgroup v1
    (None, ("-1", "100000"), None),        # v1, no quota
    (None, None, None),                    # no cgroup files
])
def test_default_threads_respect_a_container_cpu_quota(monkeypatch, tmp_path, v2, v1, limit):
    """Under a CFS quota the default thread count is the quota rounded up, never more than
    the CPUs the process may run on (threads beyond it only queue, spinning burns it)."""
    config_module = importlib.import_module("autojit.config")
    paths = [tmp_path / "cpu.max", (tmp_path / "quota", tmp_path / "period")]
    if v2 is not None:
        paths[0].write_text(v2 + "\n")
    if v1 is not None:
        for path, text in zip(paths[1], v1, strict=True):
            path.write_text(text + "\n")
    monkeypatch.setattr(config_module, "CGROUP_CPU_FILES",
                        (str(paths[0]), tuple(str(p) for p in paths[1])))
    assert config_module.cgroup_cpu_limit() == limit
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    expected = cores if limit is None else max(1, min(cores, math.ceil(limit)))
    assert config_module._default_threads() == expected
