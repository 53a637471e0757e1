"""The cost model: what one call of a Plan costs on a device, from bytes, flops and launches.

Per kernel, ``bytes`` is what its buffers span (a broadcast dimension costs nothing) and
``flops`` its scalar instructions weighted by :data:`FLOP_WEIGHTS`. A device then costs::

    seconds = overhead + launches·launch + moved/transfer + Σ_k max(bytes_k/bandwidth,
                                                                 flops_k/flop_rate)·slowdown

``moved`` are the bytes that must cross between host and GPU for this route (inputs not
resident there, results that must live on the other side). Every term but the first two
grows with the call's element count ``n``, so an estimate is kept as ``fixed + per_elem·n``
and re-evaluated per call for the price of one multiply.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from autojit.fuse.plan import Plan
from autojit.ir.kernel import Kernel
from autojit.ir.ops import OP_TABLE, Op
from autojit.ir.types import Dim

INFINITE = math.inf

#: Weighted flops of one scalar instruction, by op: the op table's cost column
#: (``OpInfo.cost``), which the CPU's thread splitter weighs kernels by too.
FLOP_WEIGHTS: dict[Op, float] = {op: info.cost for op, info in OP_TABLE.items()}


def flop_weight(op: Op) -> float:
    """Return the weighted flops of one ``op`` instruction."""
    return FLOP_WEIGHTS[op]


@dataclass(frozen=True)
class DeviceParams:
    """Calibrated speeds of one device (seconds, bytes per second, weighted flops per second).

    ``transfer`` is the host<->device bandwidth; ``inf`` for the CPU (it is the host).
    """

    overhead_s: float = 10e-6
    launch_s: float = 2e-6
    bandwidth: float = 10e9
    flop_rate: float = 5e9
    transfer: float = INFINITE

    def with_overrides(self, device: str, overrides: tuple[tuple[str, float], ...]
                       ) -> DeviceParams:
        """Return these params with ``device.name=value`` overrides applied (env wins)."""
        mine = {name.split(".", 1)[1]: value for name, value in overrides
                if name.startswith(device + ".")}
        known = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in mine.items() if k in known})


@dataclass(frozen=True)
class KernelCost:
    """One kernel: its loop (products of size symbols), buffers and flops per iteration.

    ``buffers`` holds (itemsize, loop dimensions the buffer spans) per buffer.
    """

    loop: tuple[tuple[str, ...], ...]
    buffers: tuple[tuple[int, tuple[int, ...]], ...]
    flops: float


@dataclass(frozen=True)
class PlanCost:
    """Everything the model needs from a Plan, computed once per compiled entry.

    ``arrays`` (argument index, itemsize, shape) for array parameters; ``allocations`` and
    ``outputs`` (itemsize, shape) for what a call allocates and what it returns;
    ``bytes_per_element`` bounds the working set: for any call, working set <= it × n.
    """

    kernels: tuple[KernelCost, ...]
    arrays: tuple[tuple[int, int, tuple[Dim, ...]], ...]
    allocations: tuple[tuple[int, tuple[Dim, ...]], ...]
    outputs: tuple[tuple[int, tuple[Dim, ...]], ...]
    bytes_per_element: int


@dataclass(frozen=True)
class Work:
    """One call's work: element count ``n``, kernel (bytes, flops) terms, launches, and the
    bytes of array inputs on the host and on the GPU, of results and of the working set
    (inputs + allocations)."""

    n: int
    kernels: tuple[tuple[float, float], ...]
    launches: int
    host_input_bytes: int
    device_input_bytes: int
    output_bytes: int
    working_set: int


def _kernel_cost(kernel: Kernel) -> KernelCost:
    buffers = tuple((buffer.dtype.itemsize,
                     tuple(d for d, s in enumerate(buffer.strides) if s != 0))
                    for buffer in kernel.buffers)
    flops = sum(flop_weight(instr.op) for instr in kernel.body)
    return KernelCost(kernel.loop_sizes, buffers, float(flops))


def _fixed_elements(shape: tuple[Dim, ...]) -> int:
    return math.prod(d for d in shape if isinstance(d, int))


def cost_plan(plan: Plan) -> PlanCost:
    """Return the PlanCost of ``plan`` (walks the plan once; cheap, but cache it)."""
    graph = plan.graph
    arrays = tuple((i, p.type.dtype.itemsize, tuple(p.type.shape))
                   for i, p in enumerate(graph.params) if p.kind == "array")
    allocations = tuple((graph.node(n).type.dtype.itemsize, tuple(graph.node(n).type.shape))
                        for n in plan.allocations)
    returned = set(graph.outputs)
    outputs = tuple((graph.node(n).type.dtype.itemsize, tuple(graph.node(n).type.shape))
                    for n in plan.allocations if n in returned)
    bound = sum(size * _fixed_elements(shape) for _, size, shape in arrays)
    bound += sum(size * _fixed_elements(shape) for size, shape in allocations)
    return PlanCost(tuple(_kernel_cost(k) for k in plan.kernels), arrays, allocations,
                    outputs, bound)


def _elements(shape: tuple[Dim, ...], sizes: Mapping[str, int]) -> int:
    return math.prod(sizes[d] if isinstance(d, str) else d for d in shape)


def measure_work(cost: PlanCost, sizes: Mapping[str, int],
                 on_device: frozenset[int] = frozenset()) -> Work:
    """Return the Work of one call with size symbols ``sizes``; the arguments whose indices
    are in ``on_device`` live on the GPU."""
    terms = []
    launches = 0
    for kernel in cost.kernels:
        extent = [math.prod(sizes[s] for s in product) for product in kernel.loop]
        total = math.prod(extent)
        launches += total > 0
        moved = sum(itemsize * math.prod(extent[d] for d in dims)
                    for itemsize, dims in kernel.buffers) if total else 0
        terms.append((float(moved), kernel.flops * total))
    inputs = [(i in on_device, size * _elements(shape, sizes)) for i, size, shape in cost.arrays]
    on_gpu = sum(nbytes for resident, nbytes in inputs if resident)
    on_host = sum(nbytes for resident, nbytes in inputs if not resident)
    allocated = sum(size * _elements(shape, sizes) for size, shape in cost.allocations)
    outputs = sum(size * _elements(shape, sizes) for size, shape in cost.outputs)
    n = math.prod(sizes.values()) if sizes else 1
    return Work(n, tuple(terms), launches, on_host, on_gpu, outputs,
                on_host + on_gpu + allocated)


def device_seconds(params: DeviceParams, work: Work, slowdown: float = 1.0) -> float:
    """Return the device-side time: Σ_k max(bytes_k/bandwidth, flops_k/flop_rate)·slowdown."""
    return slowdown * sum(max(moved / params.bandwidth, flops / params.flop_rate)
                          for moved, flops in work.kernels)


def estimate(params: DeviceParams, work: Work, moved: float, transfer: float,
             slowdown: float = 1.0) -> tuple[float, float]:
    """Return (fixed seconds, seconds per element) of ``work`` on a device with ``params``.

    ``moved`` bytes cross at ``transfer`` bytes/s; ``slowdown`` (>= 1) scales the device's
    work and launches for its current load.
    """
    fixed = params.overhead_s + work.launches * params.launch_s * slowdown
    variable = device_seconds(params, work, slowdown)
    if moved:
        variable += moved / transfer
    return fixed, variable / max(work.n, 1)


SATURATION_PENALTY = 2.0    # above AUTOJIT_GPU_UTIL_THRESH the GPU estimate doubles again


def gpu_slowdown_for(utilisation: float, threshold: float) -> tuple[float, str]:
    """Return the factor a GPU ``utilisation`` busy (0..1) puts on our GPU work, time-shared
    with the other users (1/(1-u)), doubled again at or above ``threshold`` (the call then
    stays on the CPU unless the GPU is still clearly faster), and a remark for the reason."""
    slowdown = 1.0 / (1.0 - min(utilisation, 0.95))
    if utilisation < threshold:
        return slowdown, (f"GPU {utilisation:.0%} busy" if utilisation >= 0.05 else "")
    slowdown *= SATURATION_PENALTY
    return slowdown, (f"GPU {utilisation:.0%} busy >= AUTOJIT_GPU_UTIL_THRESH={threshold:g}: "
                      f"estimate x{slowdown:.3g}")
