"""CPU backend: render a Kernel to LLVM IR, optimise it at O3, JIT-compile and call it."""

from autojit.lower_cpu.jit import CpuProgram, compile_kernel
from autojit.lower_cpu.render import llvm_rule_gaps, render_llvm

__all__ = ["CpuProgram", "compile_kernel", "llvm_rule_gaps", "render_llvm"]
