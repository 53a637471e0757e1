"""``f.inspect(*args)``: every stage of one compiled version, as objects and as text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autojit.fuse.plan import Plan
from autojit.fuse.traffic import Traffic, kernel_traffic
from autojit.ir.graph import Graph
from autojit.ir.kernel import Kernel
from autojit.ir.printer import format_graph, format_kernel

STAGES = ("graph", "fused", "traffic", "llvm", "llvm-opt", "asm", "cuda", "route")


class Inspection:
    """What autojit did with a function for one signature.

    Attributes: ``graph`` (None on fallback), ``kernels``, ``llvm_ir``,
    ``llvm_ir_optimized``, ``asm``, ``cuda_source`` (the translation unit NVRTC compiles),
    ``route`` and ``route_reason`` for these arguments, ``fallback_reason``.
    """

    def __init__(self, function: str, entry: Any, cpu_programs: Sequence[Any] | None,
                 route: str, route_reason: str | None,
                 sizes: dict[str, int] | None = None) -> None:
        self.function = function
        self.sizes = sizes or {}
        self.plan: Plan | None = entry.plan if entry is not None else None
        self.signature = entry.signature if entry is not None else None
        self._programs = list(cpu_programs or [])
        self.route = route
        self.route_reason = route_reason
        self.fallback_reason = route_reason if self.plan is None else None

    @property
    def graph(self) -> Graph | None:
        return self.plan.graph if self.plan else None

    @property
    def kernels(self) -> list[Kernel]:
        return list(self.plan.kernels) if self.plan else []

    @property
    def graph_text(self) -> str:
        return format_graph(self.graph) if self.graph else ""

    @property
    def kernels_text(self) -> str:
        """The plan's steps in order: kernels, and library calls (``matmul %3 %5 -> %7``)."""
        if not self.plan:
            return ""
        parts = []
        for kind, index in self.plan.steps:
            if kind == "kernel":
                parts.append(format_kernel(self.plan.kernels[index]))
            else:
                call = self.plan.libraries[index]
                operands = " ".join(f"%{i}" for i in call.inputs)
                parts.append(f"library {call.name} {operands} -> %{call.output}\n")
        return "\n".join(parts)

    @property
    def traffic(self) -> list[Traffic]:
        """Bytes each kernel reads and writes for the inspected arguments."""
        return [kernel_traffic(k, self.sizes) for k in self.kernels]

    @property
    def traffic_text(self) -> str:
        return "\n".join(str(t) for t in self.traffic)

    def _joined(self, attribute: str) -> str:
        return "\n".join(getattr(p, attribute) for p in self._programs)

    @property
    def llvm_ir(self) -> str:
        return self._joined("llvm_ir")

    @property
    def llvm_ir_optimized(self) -> str:
        return self._joined("llvm_ir_optimized")

    @property
    def asm(self) -> str:
        return self._joined("asm")

    @property
    def cuda_source(self) -> str:
        if not self.kernels:
            return ""
        from autojit.lower_gpu import render_cuda
        return "\n".join(render_cuda(k) for k in self.kernels)

    @property
    def route_text(self) -> str:
        text = f"route: {self.route} ({self.route_reason})"
        if self.fallback_reason:
            text = f"route: python (fallback: {self.fallback_reason})"
        return text + "\n"

    def format(self, stages: Sequence[str] = STAGES) -> str:
        """Return the text of the chosen stages, each under a ``=== stage ===`` heading."""
        getters = {"graph": lambda: self.graph_text, "fused": lambda: self.kernels_text,
                   "traffic": lambda: self.traffic_text,
                   "llvm": lambda: self.llvm_ir, "llvm-opt": lambda: self.llvm_ir_optimized,
                   "asm": lambda: self.asm, "cuda": lambda: self.cuda_source,
                   "route": lambda: self.route_text}
        unknown = [s for s in stages if s not in getters]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; choose from {', '.join(STAGES)}")
        parts = [f"=== {stage} ===\n{getters[stage]().rstrip()}\n" for stage in stages]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return (f"<Inspection {self.function}: {len(self.kernels)} kernel(s), "
                f"route {self.route}>")
