"""One translation unit per CUDA test catalogue: trace and plan each case, render every
kernel into one source, compile it with NVRTC for both archs and for the CPU emulation at
once (NVRTC releases the GIL, g++ is a subprocess: the three overlap)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from autojit.dispatch.signature import signature_of
from autojit.fuse.plan import Plan, plan_kernels
from autojit.lower_gpu import CudaBinary, compile_cuda, render_cuda
from autojit.lower_gpu.emulate import build_emulation
from autojit.tracer import trace_function

ARCHS = ("sm_80", "sm_90")


def case_plan(fn: Callable, args: Sequence[Any], name_prefix: str) -> Plan:
    """Plan ``fn(*args)`` with kernels renamed ``<prefix>_<name>``: unique in one unit."""
    contiguous = [bool(k[0] == "a" and k[4]) for k in signature_of(tuple(args))]
    plan = plan_kernels(trace_function(fn, args), contiguous)
    kernels = tuple(dataclasses.replace(k, name=f"{name_prefix}_{k.name}")
                    for k in plan.kernels)
    return dataclasses.replace(plan, kernels=kernels)


def shared_plans(cases: Sequence[Any], letter: str) -> list[Plan]:
    """Return each case's plan; cases with the same function and inputs (a forced launch
    of a base case) share the base case's plan and kernels."""
    first: dict[tuple, int] = {}
    for i, case in enumerate(cases):
        first.setdefault((case.fn, *map(id, case.args)), i)
    own = {i: case_plan(cases[i].fn, cases[i].args, f"{letter}{i}")
           for i in sorted(set(first.values()))}
    return [own[first[(c.fn, *map(id, c.args))]] for c in cases]


def compile_unit(plans: Sequence[Plan], unit: str) -> tuple[str, dict[str, CudaBinary]]:
    """Render the plans' kernels (each plan once) as one source; return it and its NVRTC
    binaries per arch, the emulation built alongside."""
    unique = list({id(p): p for p in plans}.values())
    source = "\n".join(render_cuda(k) for plan in unique for k in plan.kernels)
    with ThreadPoolExecutor(len(ARCHS)) as pool:
        futures = {arch: pool.submit(compile_cuda, source, unit, arch) for arch in ARCHS}
        build_emulation(source)
        binaries = {arch: future.result() for arch, future in futures.items()}
    return source, binaries
