"""Render a Kernel as an LLVM IR module; each instruction goes through ``llvm_rules.LLVM_RULES``.

The loops are ``loop_nest.LoopNest``'s (axes, bounds, strides, bodies; the thread partials
of ``partials.py`` emit the same nest). Float sums NumPy adds pairwise (``Kernel.pairwise``)
replace the innermost row loop (or, with ``pairwise_from``, the row loops from there in) by
``pairwise.emit_pairwise``: NumPy's ``pairwise_sum`` tree over the same positions in the
same order, so single-threaded results are NumPy's bit for bit.

Two functions per kernel. The exported one follows the calling convention
``void <name>(void **data, const int64_t *meta)``: it reads every pointer, size, runtime
stride and scalar once, then calls the loop nest, an internal ``alwaysinline`` function
whose output pointers are ``noalias`` (outputs are always freshly allocated, so they
never alias an input). Inlining turns that promise into alias metadata, which lets the
loop vectoriser skip runtime overlap checks. Sample (``out0 = in0 + 1.0``, rank 1)::

    define internal void @"k.loops"(ptr %"in0", ptr noalias %"out0", i64 %"n0")
        alwaysinline nounwind {
    entry:
      %".5" = icmp sgt i64 %"n0", 0
      br i1 %".5", label %"loop0", label %"exit0"
    loop0:
      %"i0" = phi  i64 [0, %"entry"], [%"i0.next", %"loop0"]
      %"in0.p" = getelementptr inbounds double, ptr %"in0", i64 %"i0"
      %"out0.p" = getelementptr inbounds double, ptr %"out0", i64 %"i0"
      %".7" = load double, ptr %"in0.p", align 8
      %".8" = fadd double %".7", 0x3ff0000000000000
      store double %".8", ptr %"out0.p", align 8
      %"i0.next" = add nuw nsw i64 %"i0", 1
      %".10" = icmp slt i64 %"i0.next", %"n0"
      br i1 %".10", label %"loop0", label %"exit0"
    exit0:
      ret void
    }
    define void @"k"(ptr %"data", ptr %"meta") nounwind {
    entry:
      %".4" = getelementptr inbounds ptr, ptr %"data", i64 0
      %"in0.base" = load ptr, ptr %".4", align 8
      ...
      %"n0" = load i64, ptr %".6", align 8
      call void @"k.loops"(ptr %"in0.base", ptr %"out0.base", i64 %"n0")
      ret void
    }
"""

from __future__ import annotations

import llvmlite.ir as ir

from autojit.ir.kernel import Kernel
from autojit.ir.verify import check_kernel
from autojit.lower_cpu.llvm_rules import llvm_rule_gaps
from autojit.lower_cpu.loop_nest import LoopNest, read_arguments
from autojit.lower_cpu.loops import PTR, VOID
from autojit.lower_cpu.mathlib import MathCalls

__all__ = ["llvm_rule_gaps", "render_llvm"]


def _emit_loops_function(module: ir.Module, kernel: Kernel, math: MathCalls,
                         name: str) -> ir.Function:
    """Return the internal loop-nest function (see the module docstring)."""
    fn, nest = LoopNest.declare(module, kernel, math, name)
    nest.emit_loops()
    nest.builder.ret_void()
    return fn


def _emit_entry(module: ir.Module, kernel: Kernel, loops: ir.Function, name: str) -> None:
    """Emit ``void @name(ptr data, ptr meta)``: read every argument once, call the nest."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR]), name)
    fn.attributes.add("nounwind")
    data, meta = fn.args
    data.name, meta.name = "data", "meta"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(loops, read_arguments(b, kernel, data, meta,
                                 lambda j: f"n{j}" if j < kernel.rank else f"stride{j}"))
    b.ret_void()


def render_llvm(kernel: Kernel, symbol: str | None = None) -> str:
    """Return the LLVM IR module text of ``kernel``, its entry point named ``symbol``
    (default: the kernel's name); see the module docstring for a sample."""
    check_kernel(kernel)
    symbol = symbol or kernel.name
    module = ir.Module(name=kernel.name)
    math = MathCalls(module)
    loops = _emit_loops_function(module, kernel, math, f"{symbol}.loops")
    _emit_entry(module, kernel, loops, symbol)
    math.finish()
    return str(module)
