"""Chains of math functions where CPU kernels call NumPy's SVML routines, A/B in one process.

Run:  python benchmarks/bench_svml_chains.py [--n N] [--repeat R] [--threads T] [--wall]
                                            [--only NAME,...] [--placement]

Each chain is compiled four ways and timed in turns (one call of each per round, medians):

* ``svml``: as autojit compiles it (innermost loops aligned to 64 bytes,
  ``mathlib.LOOP_ALIGN_LOG2``; SVML wrappers after the kernel in its module);
* ``svml-before``: as before the fix: 16-byte loops (LLVM's default) and the wrappers first
  in the module, which moved each SVML kernel 0x60 bytes into its text section;
* ``glibc``: the chain's SVML-bound functions not bound (``svml.routine`` returning None
  for them): glibc's libmvec, as on a machine without NumPy's SVML; loops aligned;
* ``glibc-before``: that with 16-byte loops: what kernels were before SVML was bound.

Times are the calling thread's CPU time (``--threads 1``, the default: what other processes
on a shared machine take is not counted), or wall-clock with ``--wall``.

``--placement`` compiles one kernel (``tanh(exp(x))``, glibc only: no SVML at all) with
16-byte loop alignment and a padding function in front of it, so that its hot loop lies at
each 16-byte offset of the text section in turn, and times each: the slowdown of
``svml-before`` is where the loop lies, not what it calls.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

#: name -> (expression of x, the SVML-bound functions whose binding is varied)
CHAINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "exp*2": ("np.exp(x) * 2", ("exp",)),
    "tanh(exp)": ("np.tanh(np.exp(x))", ("exp",)),
    "chain": ("np.tanh(np.cos(np.exp(np.sin(x))))", ("exp",)),
    "log": ("np.tanh(np.log(np.abs(x) + 1.0)) * 3 + x", ("log",)),
    "exp2": ("np.cos(np.exp2(x)) + x * x", ("exp2",)),
    "expm1": ("np.sin(np.expm1(x)) * 0.5 + x", ("expm1",)),
    "tan": ("np.exp(np.tan(x * 0.4)) - x", ("tan", "exp")),
    "pow": ("np.sin(np.power(np.abs(x) + 0.5, x)) + x", ("pow",)),
    "log2": ("np.cos(np.log2(np.abs(x) + 1.0)) * x", ("log2",)),
    "sinh": ("np.tanh(np.sinh(x)) + x", ("sinh",)),
}


def _compiled(expr: str, variant: str, drop: tuple[str, ...], threads: int) -> Callable:
    """Return a dispatcher for ``expr`` compiled as ``variant``, its first call made."""
    import autojit
    import autojit.lower_cpu.jit as jit
    import autojit.lower_cpu.mathlib as mathlib
    import autojit.lower_cpu.svml as svml

    namespace: dict[str, Any] = {"np": np}
    exec(f"def f(x):\n    return {expr}\n", namespace)   # a fresh function per variant
    fn = autojit.autoroute(namespace["f"], force="cpu", cache_max_mb=0, num_threads=threads)
    routine, environment = svml.routine, jit.math_environment
    last = mathlib.MathCalls._wrappers_last
    if variant.startswith("glibc"):
        svml.routine = lambda name, size: None if name in drop and size == 8 else routine(
            name, size)
    if variant == "svml-before":
        mathlib.MathCalls._wrappers_last = lambda self: None
    mathlib.align_inner_loops()
    if variant.endswith("before") or variant == "placement":
        mathlib.set_loop_alignment(4)
    jit.math_environment = lambda *names: (environment(*names), variant)   # none shared
    try:
        fn(np.linspace(-1, 1, 1000))
    finally:
        svml.routine, jit.math_environment = routine, environment
        mathlib.MathCalls._wrappers_last = last
        if variant != "placement":
            mathlib.set_loop_alignment(mathlib.LOOP_ALIGN_LOG2)
    return fn


def chains(args: argparse.Namespace) -> None:
    clock = time.perf_counter if args.wall else time.thread_time
    x = np.random.default_rng(0).uniform(-3, 3, args.n)
    names = args.only.split(",") if args.only else list(CHAINS)
    rows: list[tuple[str, str, Callable]] = []
    for name in names:
        expr, drop = CHAINS[name]
        rows.append((name, "numpy", eval(f"lambda x: {expr}", {"np": np})))
        for variant in ("svml", "svml-before", "glibc", "glibc-before"):
            rows.append((name, variant, _compiled(expr, variant, drop, args.threads)))
    samples: dict[int, list[float]] = {i: [] for i in range(len(rows))}
    for _ in range(args.repeat):
        for i, (_, _, fn) in enumerate(rows):
            fn(x)
            start = clock()
            fn(x)
            samples[i].append(clock() - start)
    print(f"n={args.n} threads={args.threads} clock={'wall' if args.wall else 'thread CPU'} "
          f"repeat={args.repeat} (medians, ms)")
    for i, (name, variant, _) in enumerate(rows):
        print(f"  {name:11s} {variant:15s} {1e3 * statistics.median(samples[i]):8.2f}")
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))


def _loop_offset(object_code: bytes) -> int | None:
    """Return the offset of the vector loop's first load in the object's text, or None."""
    with tempfile.NamedTemporaryFile(suffix=".o") as handle:
        handle.write(object_code)
        handle.flush()
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", handle.name],
                              capture_output=True, text=True).stdout
    found = re.search(r"^\s*([0-9a-f]+):\s+vmovups \(%r\w+,%r\w+,8\),%zmm0", text, re.M)
    return int(found.group(1), 16) if found else None


@contextlib.contextmanager
def _all_glibc() -> Iterator[None]:
    import autojit.lower_cpu.svml as svml
    routine = svml.routine
    svml.routine = lambda name, size: None
    try:
        yield
    finally:
        svml.routine = routine


def placement(args: argparse.Namespace) -> None:
    import llvmlite.binding as llvm

    import autojit.lower_cpu.jit as jit
    import autojit.lower_cpu.mathlib as mathlib
    llvm.initialize_native_asmparser()
    # the kernel as autojit optimises it, at 512 bits (as where SVML is called), glibc only
    finish = mathlib.MathCalls.finish

    def wide(self: mathlib.MathCalls) -> None:
        for fn in self.module.functions:
            if not fn.is_declaration:
                set.add(fn.attributes, '"min-legal-vector-width"="512"')
                set.add(fn.attributes, '"prefer-vector-width"="512"')
        finish(self)
    mathlib.MathCalls.finish = wide
    try:
        with _all_glibc():
            program = _compiled("np.tanh(np.exp(x))", "placement", (), 1)
    finally:
        mathlib.MathCalls.finish = finish
    source = next(p for p in jit._jit().by_text.values() if "tanh" in p.llvm_ir)
    text, symbol = source.llvm_ir_optimized, source.symbol
    del program
    at = text.index(f"define void @{symbol}(")
    machine = jit._jit().target_machine
    by_offset: dict[int, str] = {}
    for k in range(args.max_pad):
        body = "".join(f"  store volatile i8 {j % 100}, ptr %p\n" for j in range(k))
        padded = (text[:at] + f"define void @pad(ptr %p) {{\n{body}  ret void\n}}\n"
                  + text[at:])
        offset = _loop_offset(machine.emit_object(llvm.parse_assembly(padded)))
        if offset is not None:
            by_offset.setdefault(offset, padded)
    x = np.random.default_rng(0).uniform(-1, 1, args.n)
    y = np.empty_like(x)
    engines, calls = [], {}
    mathlib.set_loop_alignment(4)
    for offset, padded in sorted(by_offset.items()):
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(padded), machine)
        engine.finalize_object()
        engines.append(engine)
        calls[offset] = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
            engine.get_function_address(symbol))
    mathlib.set_loop_alignment(mathlib.LOOP_ALIGN_LOG2)
    data = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    meta = (ctypes.c_int64 * 1)(args.n)
    samples: dict[int, list[float]] = {offset: [] for offset in calls}
    for _ in range(args.repeat):
        for offset, call in calls.items():
            start = time.thread_time()
            call(data, meta)
            samples[offset].append(time.thread_time() - start)
    print(f"tanh(exp(x)) glibc only, n={args.n}, thread CPU ms by the loop's text offset:")
    for offset, times in samples.items():
        print(f"  loop at {offset:#06x}: {1e3 * statistics.median(times):7.2f}")
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--wall", action="store_true", help="wall-clock, not thread CPU time")
    parser.add_argument("--only", default="", help=f"comma-separated, from {','.join(CHAINS)}")
    parser.add_argument("--placement", action="store_true",
                        help="time one glibc-only loop at each text offset instead")
    parser.add_argument("--max-pad", type=int, default=120, help="--placement: padding stores")
    args = parser.parse_args()
    placement(args) if args.placement else chains(args)


if __name__ == "__main__":
    main()
