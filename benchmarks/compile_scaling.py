"""Stage times of the first call of an N-op program (trace, split, partition, plan, LLVM).

Compile time must grow linearly with program size: run by hand,
``python benchmarks/compile_scaling.py [N ...]`` (default 1000 2000 4000 10000) and compare
the per-op times across N. ``compiled``/``reused`` count the kernels LLVM compiled and
those that reused an identical kernel's code (``jit.KERNEL_COUNTS``). ``--profile N``
prints cProfile's top functions for one size; ``--first-call [N ...]`` times each
program's first call through ``autoroute`` in a fresh process (CPU and wall seconds, and
the fallback's reason where it runs as Python).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections.abc import Callable

import numpy as np

from autojit.fuse.partition import partition_graph
from autojit.fuse.plan import DEFAULT_MAX_OPS, plan_kernels
from autojit.fuse.split_reduce import split_reductions
from autojit.lower_cpu import jit
from autojit.tracer import trace_function


def chain(n: int) -> Callable:
    """An elementwise chain of about ``n`` graph ops."""
    def fn(x: np.ndarray) -> np.ndarray:
        for _ in range(n // 2):
            x = np.sin(x) + 1.0
        return x
    return fn


def mixed(n: int) -> Callable:
    """Elementwise ops with a reduction every few ops (softmax-like passes)."""
    def fn(x: np.ndarray) -> np.ndarray:
        for i in range(n // 4):
            x = np.sin(x) * 0.5
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x
    return fn


def distinct(n: int) -> Callable:
    """``mixed`` with a constant of its own in every pass: no two kernels alike (nothing
    for ``jit.compile_kernel`` to reuse), so every kernel goes through LLVM."""
    def fn(x: np.ndarray) -> np.ndarray:
        for i in range(n // 4):
            x = np.sin(x) * (0.5 + 1e-3 * i)
            x = x - x.max(axis=-1, keepdims=True) if i % 3 == 0 else x + 1.0
        return x
    return fn


def stages(fn: Callable, args: tuple) -> dict[str, float]:
    """Return seconds per stage of compiling ``fn`` for ``args`` (no call is made)."""
    times: dict[str, float] = {}
    mark = time.perf_counter()
    graph = trace_function(fn, args)
    times["trace"] = time.perf_counter() - mark
    mark = time.perf_counter()
    split = split_reductions(graph)
    times["split"] = time.perf_counter() - mark
    mark = time.perf_counter()
    groups = partition_graph(split, DEFAULT_MAX_OPS)
    times["partition"] = time.perf_counter() - mark
    mark = time.perf_counter()
    plan = plan_kernels(graph, [True] * len(args))
    times["plan (incl. partition)"] = time.perf_counter() - mark
    jit.forget_kernels()       # each program compiles from cold (no earlier program's code)
    before = dict(jit.COMPILE_SECONDS)
    counted = dict(jit.KERNEL_COUNTS)
    mark = time.perf_counter()
    for kernel in plan.kernels:
        jit.compile_kernel(kernel)
    times["llvm total"] = time.perf_counter() - mark
    for phase in jit.COMPILE_PHASES:
        times[f"  {phase}"] = jit.COMPILE_SECONDS[phase] - before[phase]
    times["nodes"] = len(graph.nodes)
    times["kernels"] = len(plan.kernels)
    times["groups"] = len(groups)
    for count in jit.KERNEL_COUNTS:     # kernels LLVM compiled, and those reusing their code
        times[count] = jit.KERNEL_COUNTS[count] - counted[count]
    return times


FIRST_CALL = """
import resource, sys, time, warnings
import numpy as np
sys.path.insert(0, {folder!r})
from compile_scaling import {kind} as make
from autojit import autoroute
fn = autoroute(make({n}), force="cpu")
x = np.ones((4, 8))
wall, cpu = time.perf_counter(), time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    fn(x)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
fallbacks = fn.stats()["fallbacks"]
print(f"{{cpu:.2f}} {{wall:.2f}} {{fallbacks[0] if fallbacks else 'compiled'}}")
"""


def first_call(kind: str, n: int) -> tuple[float, float, str]:
    """Return (CPU s, wall s, the fallback's reason or "compiled") of the first call of
    ``kind``'s n-op program through ``autoroute``, in a fresh process with an empty disk
    cache (CPU time is what a shared machine measures faithfully)."""
    import os
    import subprocess
    import tempfile
    folder = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", FIRST_CALL.format(folder=folder,
                                                                      kind=kind, n=n)],
                             env={**os.environ, "AUTOJIT_CACHE_DIR": cache},
                             capture_output=True, text=True, check=True).stdout
    cpu, wall, reason = out.strip().split(" ", 2)
    return float(cpu), float(wall), reason


def main(argv: list[str]) -> None:
    if argv[:1] == ["--first-call"]:     # ops -> first-call seconds, CPU and wall
        for name in ("chain", "mixed", "distinct"):
            for n in [int(a) for a in argv[1:]] or [1000, 2000, 5000, 10000, 20000]:
                cpu, wall, reason = first_call(name, n)
                print(f"{name:8} N={n:6}  cpu={cpu:.2f}  wall={wall:.2f}  {reason}",
                      flush=True)
        return
    if argv[:1] == ["--profile"]:
        n = int(argv[1])
        profile = cProfile.Profile()
        profile.enable()
        stages(chain(n), (np.ones((4, 8)),))
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
        return
    sizes = [int(a) for a in argv] or [1000, 2000, 4000, 10000]
    for name, make in (("chain", chain), ("mixed", mixed), ("distinct", distinct)):
        for n in sizes:
            times = stages(make(n), (np.ones((4, 8)),))
            row = "  ".join(f"{k.strip()}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in times.items())
            print(f"{name:8} N={n:6}  {row}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
