"""A kernel's recurrence (``RECUR``/``RECUR_SET``, ``ir.kernel`` "Recurrences") on the CPU:
one stack slot, its start stored before the row loop, loaded at the top of each
iteration and stored by the RECUR_SET; LLVM's mem2reg turns it into the loop's phi
(``%c = phi [init, %entry], [%next, %loop]``), in the ``Accumulator`` interface of
``reduce.py`` so ``loop_nest`` resets and reads it as it does a REDUCE's."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from autojit.ir.kernel import Instr
from autojit.lower_cpu.llvm_rules import llvm_type


@dataclass
class Recurrence:
    """The carried value of one RECUR."""

    ins: Instr
    start: ir.Value
    slot: ir.Value

    @classmethod
    def allocate(cls, b: ir.IRBuilder, ins: Instr, start: ir.Value) -> Recurrence:
        return cls(ins, start, b.alloca(llvm_type(ins.dtype), name=f"recur{ins.id}"))

    def reset(self, b: ir.IRBuilder) -> None:
        b.store(self.start, self.slot)

    def current(self, b: ir.IRBuilder) -> ir.Value:
        """The value carried into this iteration."""
        return b.load(self.slot, name=f"carried{self.ins.id}")

    def set(self, b: ir.IRBuilder, value: ir.Value) -> None:
        """What the next iteration carries."""
        b.store(value, self.slot)

    def result(self, b: ir.IRBuilder) -> ir.Value:
        """The value after the last iteration."""
        return b.load(self.slot)
