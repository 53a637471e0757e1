"""Facts about one kernel's LLVM code: what O3 did (remarks), what it left (calls, allocas),
and how many loads, stores, address computations and branches it removed.

Counting reads the IR text, so it needs no compiler; remarks need llvmlite (see
``autojit.lower_cpu.jit.optimisation_remarks``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: what each redundancy count matches in the IR text
COUNTED: dict[str, re.Pattern[str]] = {
    "loads": re.compile(r"= load\b"),
    "stores": re.compile(r"^\s*store\b", re.MULTILINE),
    "address computations": re.compile(r"= getelementptr\b"),
    "branches": re.compile(r"^\s*(?:br|switch)\b", re.MULTILINE),
}

_CALL = re.compile(r"\bcall\b[^@]*@\"?([\w.$]+)\"?\(")
_ALLOCA = re.compile(r"= alloca\b")
_VECTORIZED = re.compile(r"vectorized loop \(vectorization width: (\d+), "
                         r"interleaved count: (\d+)\)")


@dataclass(frozen=True)
class LlvmFacts:
    """What LLVM did with one kernel: remark sentences, calls left, allocas left, and
    (before, after) O3 counts of each ``COUNTED`` kind."""

    kernel: str
    remarks: tuple[str, ...]
    calls: tuple[str, ...]
    allocas: int
    counts: tuple[tuple[str, int, int], ...]


def count_instructions(ir_text: str) -> dict[str, int]:
    """Return how many of each ``COUNTED`` kind of instruction ``ir_text`` holds."""
    return {name: len(pattern.findall(ir_text)) for name, pattern in COUNTED.items()}


def calls_left(ir_text: str) -> tuple[str, ...]:
    """Return the functions still called (not inlined) in ``ir_text``, intrinsics aside,
    once each in order of appearance."""
    names = [m[1] for m in _CALL.finditer(ir_text) if not m[1].startswith("llvm.")]
    return tuple(dict.fromkeys(names))


def describe_remark(remark: str) -> str:
    """Return a remark as a report phrase: ``loop vectorized (width 8, interleave 2)``."""
    match = _VECTORIZED.search(remark)
    if match:
        return f"loop vectorized (width {match[1]}, interleave {match[2]})"
    return remark.rstrip(".")


def kernel_llvm_facts(kernel: str, ir_text: str, optimized: str,
                      remarks: list[str] | None = None) -> LlvmFacts:
    """Return the facts of one kernel from its IR before and after O3 (and its remarks)."""
    before, after = count_instructions(ir_text), count_instructions(optimized)
    phrases = [describe_remark(r) for r in remarks or ()]
    if any(p.startswith("loop not vectorized:") for p in phrases):   # the reason says it
        phrases = [p for p in phrases if p != "loop not vectorized"]
    return LlvmFacts(kernel, tuple(phrases),
                     calls_left(optimized), len(_ALLOCA.findall(optimized)),
                     tuple((name, before[name], after[name]) for name in COUNTED))


def collect_llvm_facts(programs: list) -> list[LlvmFacts]:
    """Return the facts of each compiled CPU program (``CpuProgram``), remarks included."""
    from autojit.lower_cpu.jit import optimisation_remarks

    return [kernel_llvm_facts(p.name, p.llvm_ir, p.llvm_ir_optimized,
                              optimisation_remarks(p.llvm_ir)) for p in programs]


__all__ = ["COUNTED", "LlvmFacts", "calls_left", "collect_llvm_facts", "count_instructions",
           "describe_remark", "kernel_llvm_facts"]
