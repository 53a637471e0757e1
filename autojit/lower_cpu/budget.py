"""A program's compile cost, estimated before LLVM sees it, and the budget it must fit.

Why: a first call may not stall for tens of seconds. Kernels identical but for their names
compile once (``jit.compile_kernel`` reuses the code), so only distinct kernels cost LLVM
time; a program of thousands of distinct ones (a Python loop with a new constant each pass)
would still take ~10 s, and runs as plain Python instead, decided within the time its trace
and plan took. This module does not import llvmlite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from autojit.errors import CompileError
from autojit.ir.kernel import Kernel

if TYPE_CHECKING:   # the planner's type; lower_cpu does not import fuse at run time
    from autojit.fuse.plan import Outline

#: kernels with more instructions than this are optimised lean (``jit.optimize_module``): no
#: loop interleaving or unrolling. A body that long already has the independent work those
#: add, and they double LLVM's time and the code (a 7-pass, 219-instruction kernel of a
#: softmax-like loop: optimise + codegen 130 -> 63 ms, object 26 -> 10 kB). The kernels of
#: benchmarks/workloads.py have 4-65 instructions.
LEAN_BODY = 128

#: seconds of rendering and LLVM a first call may spend on the CPU before it falls back;
#: with tracing and planning the first call stays under ~5 s
COMPILE_BUDGET_S = 4.0

#: cost model, measured on a 2-core Xeon (benchmarks/compile_scaling.py; lean kernels, twice that
#: for the others): rendering is paid
#: by every kernel, LLVM only by distinct ones; LLVM time goes mostly to each pass's loop
#: (vectorised and code-generated once per phase) and a little to each instruction
RENDER_S = 0.0003
RENDER_INSTRUCTION_S = 0.00004
PHASE_S = 0.009
INSTRUCTION_S = 0.00005
#: and to the nest's depth: LLVM's time grows with the cube of a kernel's loop count (a body of
#: 3-6 instructions, 2-core Xeon: 8 loops ~0.06-0.1 s, 16 ~0.6-1.9 s, 20 ~1.6-4.6 s, 24
#: ~1.3-7 s; a 32-deep float max was ~17 s), charged for each loop past the first. Kernels
#: are rarely over 4 deep (``fuse.plan`` drops static size-1 axes and merges contiguous
#: ones): this is a backstop that makes a deep nest run as Python rather than stall.
NEST_S = 0.0001


class CompileBudgetError(CompileError):
    """The program's kernels would take longer to compile than ``COMPILE_BUDGET_S``."""


def _shape_key(kernel: Kernel) -> tuple[Any, ...]:
    """A key equal for kernels whose module text is (nearly) alike: only for the estimate,
    where a near miss costs nothing (the JIT keys its reuse by the exact text)."""
    position = {ins.id: i for i, ins in enumerate(kernel.body)}   # ids never reach the text
    body = tuple((ins.op, tuple(position.get(a, a) for a in ins.args), ins.dtype.str,
                  repr(ins.attr), ins.level, ins.phase) for ins in kernel.body)
    buffers = tuple((b.dtype.str, b.strides, b.is_output) for b in kernel.buffers)
    loops = tuple(len(size) for size in kernel.loop_sizes)   # read from meta by position
    return loops, kernel.row_dims, kernel.phases, buffers, body


def _nest_seconds(depth: int) -> float:
    """LLVM's time for a nest ``depth`` loops deep beyond that of one loop."""
    return NEST_S * (max(depth, 1) ** 3 - 1)


def estimate_seconds(kernels: Sequence[Kernel]) -> tuple[float, int]:
    """Return (estimated seconds to render and compile ``kernels``, distinct kernels)."""
    distinct = {_shape_key(k): k for k in kernels}
    llvm_s = sum((PHASE_S * k.phases + INSTRUCTION_S * len(k.body) + _nest_seconds(k.rank))
                 * (1 if len(k.body) > LEAN_BODY else 2) for k in distinct.values())
    render_s = sum(RENDER_S + RENDER_INSTRUCTION_S * len(k.body) for k in kernels)
    return render_s + llvm_s, len(distinct)


def check_outlines(ops: int, outlines: Sequence[Outline]) -> None:
    """Raise ``CompileBudgetError`` when even a lower bound of the compile time of a
    program of ``ops`` graph ops is over ``COMPILE_BUDGET_S``, from its kernels' outlines
    (``plan_kernels``' check, before they are emitted): each distinct kernel's loops,
    compiled lean (a 10,000-op program of 129 distinct kernels, 899 loops: 8 s of LLVM).
    The check after emission (``check_budget``) counts the instructions and each kernel's
    loop depth too (known once ``fuse.plan`` has merged the loops)."""
    distinct = {o.key: o for o in outlines}
    seconds = (RENDER_S * len(outlines)
               + sum(PHASE_S * o.phases for o in distinct.values()))
    if seconds > COMPILE_BUDGET_S:
        raise CompileBudgetError(
            f"too large to compile in time: {ops} ops in {len(outlines)} kernels "
            f"({len(distinct)} distinct, {sum(o.phases for o in distinct.values())} loops) "
            f"would take at least {seconds:.1f} s of LLVM, over the {COMPILE_BUDGET_S:g} s "
            "budget")


def check_budget(kernels: Sequence[Kernel]) -> None:
    """Raise ``CompileBudgetError`` (its message the fallback's reason) when compiling
    ``kernels`` is estimated to exceed ``COMPILE_BUDGET_S``."""
    seconds, distinct = estimate_seconds(kernels)
    if seconds > COMPILE_BUDGET_S:
        raise CompileBudgetError(
            f"too large to compile in time: {len(kernels)} kernels ({distinct} distinct, "
            f"{sum(len(k.body) for k in kernels)} instructions) would take about "
            f"{seconds:.1f} s of LLVM, over the {COMPILE_BUDGET_S:g} s budget")
