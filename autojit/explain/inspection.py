"""``f.inspect(*args)``: every stage of one compiled version, as objects and as text."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from autojit.explain.llvm_facts import LlvmFacts, collect_llvm_facts
from autojit.explain.report import (
    Fact,
    ReportInputs,
    format_report,
    report_facts,
    step_counts,
)
from autojit.fuse.buffers import BufferPlan, plan_buffers, value_bytes
from autojit.fuse.plan import Plan
from autojit.fuse.traffic import Traffic, kernel_traffic
from autojit.ir.graph import Graph
from autojit.ir.kernel import Kernel
from autojit.ir.printer import body_names, format_graph, format_kernel, param_names, region_head
from autojit.runtime.executable import Executable

STAGES = ("graph", "fused", "traffic", "llvm", "llvm-opt", "asm", "cuda", "ptx", "report",
          "route")


class Inspection:
    """What autojit did with a function for one signature.

    Attributes: ``graph`` (None on fallback), ``kernels``, ``llvm_ir``,
    ``llvm_ir_optimized``, ``asm``, ``cuda_source`` (the translation unit NVRTC compiles),
    ``ptx``, ``route`` and ``route_reason`` for these arguments, ``fallback_reason``;
    ``buffer_plan`` and ``report()`` (the escape/allocation report), ``llvm_facts``,
    ``gpu_resources``, ``fusion_graph()``; in Jupyter it renders as HTML.
    """

    #: verbosity of the ``report`` stage in ``format`` (1: ``-m``, 2: ``-m -m``)
    verbosity = 1
    #: GPU architecture for the ``ptx`` stage and the register report
    gpu_arch = "sm_90"
    #: include ptxas register counts in the report (an NVRTC compile per kernel)
    gpu_report = True

    def __init__(self, function: str, entry: Executable | None, cpu_programs: Sequence[Any] | None,
                 route: str, route_reason: str | None,
                 sizes: dict[str, int] | None = None) -> None:
        self.function = function
        self.size_names: dict[str, str] = {}     # n0 -> B, from the CLI's --args spec
        self.numpy_measured: int | None = None   # NumPy's peak, from ``measure_numpy``
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
        return _steps_text(self.plan) if self.plan else ""

    @property
    def traffic(self) -> list[Traffic]:
        """Bytes each kernel reads and writes for the inspected arguments."""
        sizes = {**self.sizes, **_native_trips(self.plan)} if self.plan else self.sizes
        return [kernel_traffic(k, sizes) for k in self.kernels]

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
    def ptx(self) -> str:
        """The PTX NVRTC writes for each kernel (``gpu_arch``); without NVRTC, a PTX comment
        saying why (``// no PTX: NVRTC not installed (...)``)."""
        from autojit.lower_gpu import render_cuda
        from autojit.lower_gpu.compile import compile_cuda, nvrtc_unavailable

        if not self.kernels:
            return ""
        reason = nvrtc_unavailable()
        if reason is not None:
            return f"// no PTX: {reason}\n"
        return "\n".join(compile_cuda(render_cuda(k), k.name, self.gpu_arch).ptx
                         for k in self.kernels)

    @property
    def buffer_plan(self) -> BufferPlan | None:
        """Where each value lives: fused, heap, escapes, reused (``autojit.fuse.buffers``)."""
        return plan_buffers(self.plan) if self.plan else None

    @functools.cached_property
    def llvm_facts(self) -> list[LlvmFacts]:
        """Per kernel: LLVM's remarks, calls and allocas left, counts before/after O3."""
        return collect_llvm_facts(self._programs)

    @functools.cached_property
    def gpu_resources(self) -> dict[str, Any]:
        """Per kernel: ptxas registers and spills for ``gpu_arch``; empty without NVRTC."""
        from autojit.lower_gpu import render_cuda
        from autojit.lower_gpu.compile import kernel_resources, nvrtc_version

        if not self.gpu_report or not self.kernels or nvrtc_version() is None:
            return {}
        found = {}
        # kernels alike but for their names (a Python loop's: thousands) compile once
        alike: dict[str, tuple[str, list]] = {}
        for kernel in self.kernels:
            source = render_cuda(kernel)
            key = source.replace(kernel.name, "\0")
            if key in alike:
                first, resources = alike[key]
                resources = [dataclasses.replace(r, name=kernel.name) if r.name == first
                             else r for r in resources]
            else:
                resources = kernel_resources(source, kernel.name, self.gpu_arch)
                alike[key] = (kernel.name, resources)
            for res in resources:
                found[res.name] = res
        return found

    def report_facts(self, toolchain: bool = True) -> list[Fact]:
        """The escape/allocation report as facts (``Fact.as_dict`` for JSON).
        ``toolchain=False`` leaves out what LLVM and ptxas say (it varies by version)."""
        if not self.plan:
            return []
        inputs = ReportInputs(self.sizes, self.size_names, self.numpy_measured,
                              self.gpu_arch)
        if toolchain:
            inputs.llvm, inputs.gpu = self.llvm_facts, self.gpu_resources
        return report_facts(plan_buffers(self.plan), inputs)

    def report(self, verbosity: int | None = None, toolchain: bool = True) -> str:
        """The ``-m`` (1) or ``-m -m`` (2) report text: ``file:line:col: message`` lines."""
        if not self.plan:
            return f"{self.function}: not compiled: {self.fallback_reason}\n"
        return format_report(self.report_facts(toolchain), verbosity or self.verbosity)

    def measure_numpy(self, function: Any, *args: Any) -> int:
        """Run the plain Python ``function`` (an ``@autoroute`` one is unwrapped) on ``args``
        under tracemalloc; remember and return the peak bytes it allocated."""
        import tracemalloc

        plain = getattr(function, "__wrapped__", function)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            plain(*args)
            self.numpy_measured = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        return self.numpy_measured

    def to_json(self, stages: Sequence[str] = STAGES, verbosity: int | None = None) -> dict:
        """Return the chosen stages as a JSON-ready dict; ``report`` is a list of facts."""
        result: dict[str, Any] = {"function": self.function, "route": self.route,
                                  "route_reason": self.route_reason,
                                  "fallback_reason": self.fallback_reason,
                                  "sizes": dict(self.sizes)}
        chosen: dict[str, Any] = {}
        for stage in stages:
            if stage == "report":
                level = verbosity or self.verbosity
                chosen["report"] = [f.as_dict() for f in self.report_facts() if f.level <= level]
                result["buffers"] = self._buffers_json()
            else:
                chosen[stage] = self._getters()[stage]()
        return {**result, "stages": chosen}

    def fusion_graph(self) -> Any:
        """The fusion graph as a picture (Graphviz SVG, else a text diagram) that renders
        in notebooks; ``str()`` of it is the SVG or the text."""
        from autojit.explain.html import FusionGraph
        return FusionGraph(self)

    def _buffers_json(self) -> list[dict[str, Any]]:
        """The buffer plan as data: one entry per value, bytes for the inspected sizes."""
        plan = self.buffer_plan
        if plan is None:
            return []
        return [{"node": f.node, "decision": f.decision, "writer": f.writer,
                 "readers": list(f.readers), "kernels": list(f.kernels), "escape": f.escape,
                 "allocated": f.allocated, "reuses": f.reuses, "in_place": f.in_place,
                 "type": str(plan.graph.node(f.node).type),
                 "bytes": value_bytes(plan.graph.node(f.node), self.sizes)}
                for f in plan.fates]

    def _repr_html_(self) -> str:
        from autojit.explain.html import render_html
        return render_html(self)

    @property
    def route_text(self) -> str:
        text = f"route: {self.route} ({self.route_reason})"
        if self.fallback_reason:
            text = f"route: python (fallback: {self.fallback_reason})"
        return text + "\n"

    def _getters(self) -> dict[str, Callable[[], str]]:
        return {"graph": lambda: self.graph_text, "fused": lambda: self.kernels_text,
                "traffic": lambda: self.traffic_text,
                "llvm": lambda: self.llvm_ir, "llvm-opt": lambda: self.llvm_ir_optimized,
                "asm": lambda: self.asm, "cuda": lambda: self.cuda_source,
                "ptx": lambda: self.ptx, "report": lambda: self.report(),
                "route": lambda: self.route_text}

    def format(self, stages: Sequence[str] = STAGES) -> str:
        """Return the text of the chosen stages, each under a ``=== stage ===`` heading."""
        getters = self._getters()
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


def _native_trips(plan: Plan) -> dict[str, int]:
    """A native loop's trip count is known only when it runs: its traffic is shown for one
    iteration, as a host loop's body kernels are."""
    trips, pending = {}, [plan]
    while pending:
        for call in pending.pop().regions:
            pending.append(call.body)
            if call.native is not None:
                trips[call.native.trip] = 1
    return trips


def _steps_text(plan: Plan, indent: str = "", names: Mapping[int, str] | None = None) -> str:
    """The plan's steps in order; a loop region's head (the user's names: ``loop i in [0,
    n) carried (acc) ...``) and its body plan's steps under it, indented (nested loops
    further in)."""
    parts = []
    shown = param_names(plan.graph, names)
    for kind, index in plan.steps:
        if kind == "kernel":
            text = format_kernel(plan.kernels[index])
        elif kind == "region":
            call = plan.regions[index]
            node = plan.graph.node(call.node)
            where = f", {str(node.loc).rsplit(':', 1)[0]}" if node.loc else ""
            body = _steps_text(call.body, "  ", body_names(node, plan.graph, shown))
            text = (f"{region_head(node, plan.graph, shown)}    # loop{index} %{call.node}"
                    f"{where}: per iteration {step_counts(call.body)}\n{body}")
            if call.native is not None:   # what the CPU runs instead of the host loop
                text = (f"loop{index} %{call.node} as one native kernel (its row: the "
                        f"iterations, in order):\n{format_kernel(call.native.kernel)}"
                        f"otherwise {text}")
        else:
            call = plan.libraries[index]
            operands = " ".join(f"%{i}" for i in call.inputs)
            text = f"library {call.name} {operands} -> %{call.output}\n"
        parts.append("".join(f"{indent}{line}\n" if line else "\n"
                             for line in text.splitlines()))
    return "\n".join(parts)
