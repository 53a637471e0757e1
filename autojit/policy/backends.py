"""Backends and the plan runner: allocate a call's buffers, launch its kernels, return results.

The compilers are imported on first use, so ``import autojit`` stays light and CuPy/NVRTC
load only when a GPU route is taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from autojit.fuse.buffers import plan_buffers
from autojit.fuse.partition import memory_param
from autojit.fuse.plan import Plan
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.ir.views import apply_view
from autojit.lower_cpu.program import CpuProgram
from autojit.lower_cpu.team import park as park_team
from autojit.lower_cpu.threads import call_kernel
from autojit.policy.config import current_settings
from autojit.policy.output_pool import OUTPUT_POOL


class Backend(Protocol):
    name: str

    def compile(self, kernel: Kernel) -> Any: ...
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None: ...


def _nothing() -> None:
    pass


def _address(array: np.ndarray) -> int:
    return array.ctypes._data


class CpuBackend:
    """LLVM-compiled kernels called in this process; the thread settings come from
    ``options`` (a decorator's, e.g. ``num_threads=1``) over the environment and config()."""

    name = "cpu"

    def __init__(self, options: tuple[tuple[str, Any], ...] = ()) -> None:
        self.options = options

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_cpu import compile_kernel
        return compile_kernel(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return OUTPUT_POOL.empty(shape, dtype)    # big results on recycled pages

    @staticmethod
    def before_library() -> None:
        """BLAS brings its own threads: our idle workers stop spinning for it (measured:
        relu(x@w+b) 63.5 -> 62.3 ms median with workers asleep through the GEMM)."""
        park_team()

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None:
        holders = [np.array(v, dtype=p.dtype) for p, v in zip(kernel.scalars, scalars)]
        data = [_address(a) for a in arrays] + [_address(h) for h in holders]
        settings = current_settings(self.options)
        if settings.num_threads > 1 and isinstance(program, CpuProgram):
            call_kernel(kernel, program, data, meta, settings.num_threads,   # splits big
                        settings.thread_min_work, settings.thread_spin_us * 1e-6)  # calls
        else:
            program.call(data, meta)


class GpuBackend:
    """CUDA C kernels compiled by NVRTC and launched through CuPy."""

    name = "gpu"

    @property
    def array_module(self) -> Any:
        import cupy
        return cupy

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_gpu import compile_cuda, render_cuda
        from autojit.lower_gpu.device import device_arch
        return compile_cuda(render_cuda(kernel), kernel.name, device_arch())

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        import cupy
        return cupy.empty(shape, dtype)

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None:
        from autojit.lower_gpu import launch
        launch(kernel, program, arrays, scalars, sizes)


class EmulatedCudaBackend:
    """Runs each kernel's generated CUDA C on the CPU (g++ with an emulation header): how
    GPU-less machines check the GPU code path (tests, ``assert_backends_agree``)."""

    name = "cuda-emulated"

    def __init__(self, source: str | None = None, **launch: int) -> None:
        # ``source``: one translation unit holding every kernel (one g++ run for many);
        # ``launch``: forced launch shapes for reduction kernels (grid=, block=, ...).
        self.source, self.launch_options = source, launch

    def compile(self, kernel: Any) -> str:
        from autojit.lower_gpu import render_cuda
        return self.source if self.source is not None else render_cuda(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def launch(self, kernel: Any, source: str, arrays: Sequence[Any], scalars: Sequence[Any],
               sizes: dict[str, int], meta: Sequence[int] = ()) -> None:
        from autojit.lower_gpu import run_emulated
        from autojit.lower_gpu.reduce_launch import is_reduction
        options = self.launch_options if is_reduction(kernel) else {}
        run_emulated(kernel, source, arrays, scalars, sizes, **options)


@dataclass(frozen=True)
class KernelCall:
    """Where one kernel's operands come from, precomputed so a warm call only looks up.

    ``buffers`` index the call's slots (arguments, then allocations, then constants);
    ``strides`` are (buffer position, array axis) of each runtime stride, in meta order.
    """

    buffers: tuple[int, ...]
    scalars: tuple[int | tuple[str, ...], ...]   # argument index, or size symbols to multiply
    loop: tuple[tuple[str, ...], ...]
    strides: tuple[tuple[int, int | None], ...]


@dataclass(frozen=True)
class Schedule:
    """A plan flattened for execution: allocations, kernel operands and results by slot."""

    allocations: tuple[tuple[tuple, np.dtype], ...]
    constants: tuple[np.ndarray, ...]
    calls: tuple[KernelCall, ...]
    outputs: tuple[tuple[int, bool], ...]
    output_tuple: bool
    views: tuple[tuple[int, tuple[str, Any]], ...] = ()   # (base slot, step), in slot order
    libraries: tuple[tuple[str, tuple[int, ...], int], ...] = ()   # (name, inputs, output)
    order: tuple[tuple[str, int], ...] = ()
    # the buffer plan (autojit.fuse.buffers): allocations made before any step; per step,
    # (allocation, allocation whose buffer it takes or -1, clear the donor's slot) made
    # before it, and the allocations released after it
    upfront: tuple[int, ...] = ()
    allocate: tuple[tuple[tuple[int, int, bool], ...], ...] = ()
    release: tuple[tuple[int, ...], ...] = ()


def _scalar_source(node: Any) -> int | tuple[str, ...]:
    return node.attr("index") if node.op is Op.ARG else node.attr("symbols")


def build_schedule(plan: Plan, argument_count: int) -> Schedule:
    """Return the Schedule of ``plan`` (computed once per plan, then cached on it)."""
    cached = plan.schedule_cache.get(argument_count)
    if cached is not None:
        return cached
    graph = plan.graph
    slots = {n: argument_count + i for i, n in enumerate(plan.allocations)}
    constants: list[np.ndarray] = []
    views: list[tuple[int, tuple[str, Any]]] = []
    constant_nodes = [n for n in graph.nodes if n.op in (Op.CONST, Op.FILL)]
    first_view = argument_count + len(plan.allocations) + len(constant_nodes)

    def slot(node_id: int) -> int:
        chain = []                # views of views (x = x[1:] in a loop): walked, not recursed
        while node_id not in slots and graph.node(node_id).op is Op.VIEW:
            chain.append(node_id)
            node_id = graph.node(node_id).inputs[0]
        base = leaf_slot(node_id)
        for view in reversed(chain):   # a view of an argument, taken again at every call
            views.append((base, graph.node(view).attr("step")))
            base = slots[view] = first_view + len(views) - 1
        return base

    def leaf_slot(node_id: int) -> int:
        node = graph.node(node_id)
        if node_id in slots:
            return slots[node_id]
        if node.op in (Op.ARG, Op.WRITE):   # a write's result is its argument's memory
            return memory_param(graph, node_id)
        constants.append(np.asarray(node.attr("value"), dtype=node.type.dtype))
        slots[node_id] = argument_count + len(plan.allocations) + len(constants) - 1
        return slots[node_id]

    calls = []
    for kernel in plan.kernels:
        ndims = [len(graph.node(b.value).type.shape) for b in kernel.buffers]
        strides = tuple((b, kernel.array_axis(b, d, ndims[b]))
                        for b, d in kernel.runtime_strides())
        calls.append(KernelCall(
            tuple(slot(b.value) for b in kernel.buffers),
            tuple(_scalar_source(graph.node(s.value)) for s in kernel.scalars),
            kernel.loop_sizes, strides))
    libraries = tuple((call.name, tuple(slot(i) for i in call.inputs), slot(call.output))
                      for call in plan.libraries)
    outputs = tuple((slot(o), s) for o, s in zip(graph.outputs, graph.scalar_outputs))
    allocations = tuple((graph.node(n).type.shape, graph.node(n).type.dtype)
                        for n in plan.allocations)
    constants += [np.empty(0)] * (len(constant_nodes) - len(constants))   # unused slots
    schedule = Schedule(allocations, tuple(constants), tuple(calls), outputs,
                        graph.output_tuple, tuple(views), libraries, plan.steps,
                        *_lifetimes(plan))
    plan.schedule_cache[argument_count] = schedule
    return schedule


def _lifetimes(plan: Plan) -> tuple[tuple[int, ...],
                                     tuple[tuple[tuple[int, int, bool], ...], ...],
                                     tuple[tuple[int, ...], ...]]:
    """Return the Schedule's ``upfront``, ``allocate`` and ``release`` from the buffer plan."""
    buffers = plan_buffers(plan).allocations
    # a donor to a later step keeps its slot until the taker takes it over
    later = {a.reuses for a in buffers if a.reuses is not None and not a.in_place}
    steps = range(len(plan.steps))
    upfront = tuple(i for i, a in enumerate(buffers) if a.first < 0)
    allocate = tuple(tuple((i, -1 if a.reuses is None else a.reuses, not a.in_place)
                           for i, a in enumerate(buffers) if a.first == s) for s in steps)
    release = tuple(tuple(i for i, a in enumerate(buffers) if a.last == s and i not in later)
                    for s in steps)
    return upfront, allocate, release


def _take_over(buffer: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Return ``buffer``'s memory as an array of ``shape`` and ``dtype`` (it fits: the
    buffer plan only pairs byte counts that are the same product of sizes). A buffer taken
    over before is a view of a narrower size: the memory is its fresh allocation, the base."""
    if buffer.shape == shape and buffer.dtype == dtype:
        return buffer
    while isinstance(buffer.base, type(buffer)):
        buffer = buffer.base
    nbytes = math.prod(shape) * dtype.itemsize
    return buffer.reshape(-1).view("uint8")[:nbytes].view(dtype).reshape(shape)


def _allocate(backend: Backend, schedule: Schedule, values: list[Any], first: int,
              index: int, donor: int, clear: bool, sizes: dict[str, int]) -> None:
    """Put allocation ``index`` in its slot: fresh memory, or the buffer of ``donor`` (whose
    slot is cleared when it is dead already; an in-place step still reads it)."""
    shape, dtype = schedule.allocations[index]
    concrete = tuple(sizes[d] if d.__class__ is str else d for d in shape)
    if donor < 0:
        values[first + index] = backend.empty(concrete, dtype)
        return
    values[first + index] = _take_over(values[first + donor], concrete, dtype)
    if clear:
        values[first + donor] = None


def _meta(call: KernelCall, arrays: Sequence[Any], sizes: dict[str, int]) -> list[int]:
    meta = [math.prod(sizes[s] for s in product) for product in call.loop]
    for buffer, axis in call.strides:
        array = arrays[buffer]
        meta.append(array.strides[axis] // array.itemsize if axis is not None else 0)
    return meta


def _run_library(backend: Backend, name: str, inputs: list[Any], out: Any) -> None:
    """Run a library step with the backend's array module (NumPy's BLAS, CuPy's cuBLAS)."""
    getattr(backend, "before_library", _nothing)()
    xp = getattr(backend, "array_module", np)
    function = getattr(xp, name)
    if out.ndim == 0:
        out[...] = function(*inputs)
    else:
        function(*inputs, out=out)


def _launch(backend: Backend, kernel: Kernel, program: Any, call: KernelCall,
            values: list[Any], args: Sequence[Any], sizes: dict[str, int]) -> None:
    """Launch one kernel on its slots (a function, so its operand list dies with it)."""
    arrays = [values[i] for i in call.buffers]
    scalars = [args[s] if s.__class__ is int else math.prod(sizes[n] for n in s)
               for s in call.scalars]
    backend.launch(kernel, program, arrays, scalars, sizes, _meta(call, arrays, sizes))


def run_plan(plan: Plan, programs: Sequence[Any], backend: Backend, args: Sequence[Any],
             sizes: dict[str, int]) -> Any:
    """Run every kernel of ``plan``; return the function's result as NumPy would."""
    schedule = build_schedule(plan, len(args))
    first = len(args)
    values = [*args, *[None] * len(schedule.allocations)]
    for index in schedule.upfront:
        _allocate(backend, schedule, values, first, index, -1, False, sizes)
    values.extend(schedule.constants)
    for base, step in schedule.views:
        view = apply_view(values[base], step)
        values.append(np.asarray(view) if isinstance(view, np.generic) else view)
    for position, (kind, index) in enumerate(schedule.order):
        for allocation, donor, clear in schedule.allocate[position]:
            _allocate(backend, schedule, values, first, allocation, donor, clear, sizes)
        if kind == "library":
            name, inputs, output = schedule.libraries[index]
            _run_library(backend, name, [values[i] for i in inputs], values[output])
        else:
            _launch(backend, plan.kernels[index], programs[index], schedule.calls[index],
                    values, args, sizes)
        for allocation in schedule.release[position]:   # dead: give the memory back now
            values[first + allocation] = None
    results = [values[i][()] if is_scalar and getattr(values[i], "ndim", 1) == 0
               else values[i] for i, is_scalar in schedule.outputs]
    if not results and not schedule.output_tuple:
        return None                              # the function only wrote into arguments
    return tuple(results) if schedule.output_tuple else results[0]


def bind_sizes(plan: Plan, args: Sequence[Any]) -> dict[str, int] | None:
    """Return each size symbol's value for this call; None if arguments disagree (NumPy
    would raise a broadcasting error, so the caller runs plain Python to raise it)."""
    sizes: dict[str, int] = {}
    for symbol, sources in plan.graph.dims:
        first_arg, first_axis = sources[0]
        size = args[first_arg].shape[first_axis]
        for arg, axis in sources[1:]:
            if args[arg].shape[axis] != size:
                return None
        sizes[symbol] = size
    if any(sizes.get(s) == 0 for s in plan.graph.nonempty):
        return None   # NumPy raises for a reduction of nothing without an identity
    if not _bind_view_sizes(plan, args, sizes):
        return None
    for symbol, value in plan.graph.guards:
        sizes.setdefault(symbol, value)   # sizes the code itself fixed (np.zeros(3))
    if any(sizes[s] == 0 for s in plan.graph.nonempty):
        return None
    return sizes


def _view_source(plan: Plan, node: Any, args: Sequence[Any], sizes: dict[str, int],
                 views: dict[int, Any]) -> Any:
    """What a view is taken of, for binding its sizes: a view, an argument, or a stand-in
    of the computed value's shape (no memory: only the view's shape is wanted here)."""
    base = plan.graph.node(node.inputs[0])
    if base.op is Op.VIEW:
        return views[base.id]
    param = memory_param(plan.graph, base.id)
    if param is not None:
        return args[param]
    shape = tuple(sizes[d] if d.__class__ is str else d for d in base.type.shape)
    return np.lib.stride_tricks.as_strided(np.zeros(1, base.type.dtype), shape,
                                           (0,) * len(shape))


def _bind_view_sizes(plan: Plan, args: Sequence[Any], sizes: dict[str, int]) -> bool:
    """Bind the sizes of views of arguments; False when they contradict (NumPy raises)."""
    views: dict[int, Any] = {}
    special = plan.schedule_cache.get("view_nodes")
    if special is None:   # once per plan: most plans have no views or writes at all
        special = plan.schedule_cache["view_nodes"] = [
            n for n in plan.graph.nodes if n.op in (Op.VIEW, Op.WRITE)]
    for node in special:
        if node.op is Op.WRITE and not getattr(args[node.attr("param")].flags, "writeable",
                                               True):
            return False   # NumPy raises: assignment destination is read-only
        if node.op is not Op.VIEW:
            continue
        views[node.id] = apply_view(_view_source(plan, node, args, sizes, views),
                                    node.attr("step"))
        for axis, dim in enumerate(node.type.shape):
            size = views[node.id].shape[axis]
            if dim.__class__ is str and sizes.setdefault(dim, size) != size:
                return False
    return True


def guards_hold(plan: Plan, sizes: dict[str, int], args: Sequence[Any]) -> bool:
    """Return True when sizes the trace read concretely are unchanged."""
    return all(sizes[symbol] == value for symbol, value in plan.graph.guards)


def int_arguments_fit(plan: Plan, args: Sequence[Any]) -> bool:
    """Return True when Python ints NumPy converts to small dtypes fit (else NumPy raises)."""
    for index, dtype_name in plan.graph.int_guards:
        info = np.iinfo(dtype_name)
        if not info.min <= args[index] <= info.max:
            return False
    return True
