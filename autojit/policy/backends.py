"""Backends and the plan runner: allocate a call's buffers, launch its kernels, return results.

The compilers are imported on first use, so ``import autojit`` stays light and CuPy/NVRTC
load only when a GPU route is taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from autojit.fuse.plan import Plan
from autojit.ir.abi import pack_meta
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op


class Backend(Protocol):
    name: str

    def compile(self, kernel: Kernel) -> Any: ...
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int]) -> None: ...


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


class CpuBackend:
    """LLVM-compiled kernels called in this process."""

    name = "cpu"

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_cpu import compile_kernel
        return compile_kernel(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int]) -> None:
        holders = [np.array(v, dtype=p.dtype) for p, v in zip(kernel.scalars, scalars)]
        data = [_address(a) for a in arrays] + [_address(h) for h in holders]
        program.run(data, pack_meta(kernel, sizes, arrays))


class GpuBackend:
    """CUDA C kernels compiled by NVRTC and launched through CuPy."""

    name = "gpu"

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_gpu import compile_cuda, render_cuda
        from autojit.lower_gpu.device import device_arch
        return compile_cuda(render_cuda(kernel), kernel.name, device_arch())

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        import cupy
        return cupy.empty(shape, dtype)

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int]) -> None:
        from autojit.lower_gpu import launch
        launch(kernel, program, arrays, scalars, sizes)


def _leaf_value(plan: Plan, node_id: int, args: Sequence[Any]) -> Any:
    node = plan.graph.node(node_id)
    if node.op is Op.ARG:
        return args[node.attr("index")]
    return np.asarray(node.attr("value"), dtype=node.type.dtype)


def run_plan(plan: Plan, programs: Sequence[Any], backend: Backend, args: Sequence[Any],
             sizes: dict[str, int]) -> Any:
    """Run every kernel of ``plan``; return the function's result as NumPy would."""
    graph = plan.graph
    values: dict[int, Any] = {}
    for node_id in plan.allocations:
        node = graph.node(node_id)
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in node.type.shape)
        values[node_id] = backend.empty(shape, node.type.dtype)
    for kernel, program in zip(plan.kernels, programs):
        arrays = [values[b.value] if b.value in values else _leaf_value(plan, b.value, args)
                  for b in kernel.buffers]
        scalars = [args[graph.node(s.value).attr("index")] for s in kernel.scalars]
        backend.launch(kernel, program, arrays, scalars, sizes)
    results = []
    for node_id, is_scalar in zip(graph.outputs, graph.scalar_outputs):
        value = values[node_id] if node_id in values else _leaf_value(plan, node_id, args)
        results.append(value[()] if is_scalar and getattr(value, "ndim", 1) == 0 else value)
    return tuple(results) if graph.output_tuple else results[0]


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
    return sizes


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
