"""Targets: what one kind of hardware provides to run a plan's kernels (compile one kernel,
allocate an output, launch a kernel on its operands), and the three there are: the host CPU
(LLVM programs called in this process), the CUDA GPU (NVRTC through CuPy) and the CUDA C
emulated on the CPU (g++), which checks the GPU code path on machines without one.

The compilers are imported on first use, so ``import autojit`` stays light and CuPy/NVRTC
load only when a GPU route is taken. A target reads no settings: the CPU's thread split is
given to it (:func:`cpu_target`), resolved once per call by the dispatcher.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from autojit.cache.disk_cache import ENTRY_PLACE, EntryPlace
from autojit.config import Settings
from autojit.ir.kernel import Kernel
from autojit.lower_cpu.program import CpuProgram
from autojit.lower_cpu.team import park as park_team
from autojit.lower_cpu.threads import call_kernel, split_of
from autojit.runtime.output_pool import OUTPUT_POOL


class Target(Protocol):
    """What the plan runner (``runtime.schedule.run_plan``) needs from a target. Optional:
    ``before_library()`` (called before a library step such as a GEMM) and ``array_module``
    (the module whose functions run library steps: NumPy's BLAS, CuPy's cuBLAS)."""

    name: str

    def compile(self, kernel: Kernel) -> Any: ...
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None: ...


def _address(array: np.ndarray) -> int:
    return array.ctypes._data


def _python_addresses(arrays: Sequence[np.ndarray]) -> list[int]:
    return [_address(a) for a in arrays]


try:   # one C call for every array's address: ``a.ctypes`` costs ~0.7 µs an array
    from autojit._native.fastcall import addresses as _addresses
except ImportError:   # not built (or built before it had one)
    _addresses = _python_addresses

try:   # the kernel call itself (what ``CpuProgram.call`` makes), for a loop body's launches
    from autojit._native.fastcall import call as _fast_call
except ImportError:
    _fast_call = None


class Threads(NamedTuple):
    """How the CPU target splits a big kernel call over threads (``AUTOJIT_NUM_THREADS``,
    ``AUTOJIT_THREAD_MIN_WORK``, ``AUTOJIT_THREAD_SPIN_US``)."""

    count: int = 1
    min_work: int = 1 << 16
    spin_s: float = 0.0


#: no split: every kernel call on the calling thread
ONE_THREAD = Threads()


def _with_entry_place(entries: EntryPlace | None, fn: Callable[..., Any], *args: Any) -> Any:
    """Return ``fn(*args)`` with ``entries`` as the place extra entry points are kept
    (``ENTRY_PLACE``): set only around a split's choice and run (``call_kernel``), not for
    each small call (setting and resetting a context variable costs ~160 ns)."""
    token = ENTRY_PLACE.set(entries)
    try:
        return fn(*args)
    finally:
        ENTRY_PLACE.reset(token)


class CpuTarget:
    """LLVM-compiled kernels called in this process, split over ``threads`` (one thread by
    default; :func:`cpu_target` gives the one for a call's settings)."""

    name = "cpu"

    def __init__(self, threads: Threads = ONE_THREAD, entries: EntryPlace | None = None,
                 pool_bytes: int | None = None) -> None:
        # ``entries``: where the extra entry points a split call links are kept on disk;
        # ``pool_bytes``: how much of dropped big results the output pool keeps for reuse
        # (None: no pool, NumPy's own allocation)
        self.threads, self.entries, self.pool_bytes = threads, entries, pool_bytes
        self._within = functools.partial(_with_entry_place, entries)

    def compile(self, kernel: Kernel) -> Any:
        from autojit.lower_cpu import compile_kernel
        return compile_kernel(kernel)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if self.pool_bytes is None:
            return np.empty(shape, dtype)
        return OUTPUT_POOL.empty(shape, dtype, self.pool_bytes)   # big results, recycled

    @staticmethod
    def before_library() -> None:
        """BLAS brings its own threads: our idle workers stop spinning for it (measured:
        relu(x@w+b) 63.5 -> 62.3 ms median with workers asleep through the GEMM)."""
        park_team()

    def launch(self, kernel: Kernel, program: Any, arrays: Sequence[Any],
               scalars: Sequence[Any], sizes: dict[str, int], meta: list[int]) -> None:
        if scalars:   # each scalar in memory of the parameter's dtype, read by address
            arrays = [*arrays, *[np.array(v, dtype=p.dtype)
                                 for p, v in zip(kernel.scalars, scalars)]]
        data = _addresses(arrays)
        threads = self.threads
        if threads.count > 1 and isinstance(program, CpuProgram):   # splits big calls
            call_kernel(kernel, program, data, meta, threads.count, threads.min_work,
                        threads.spin_s, self._within)
        else:
            program.call(data, meta)


    def launcher(self, kernel: Kernel, program: Any, meta: list[int]
                 ) -> Callable[[list[Any]], None]:
        """Return ``launch`` with its ``meta`` fixed (its thread split chosen once), called
        with the operands then one array per scalar, of the parameter's dtype (a loop
        body's holders, written before each call): what a loop body's iterations call for
        operands of a layout they saw before (the same shapes and strides: the same meta),
        instead of ``launch``; the operands' addresses are read at each call."""
        threads = self.threads
        if threads.count > 1 and isinstance(program, CpuProgram):
            split = split_of(kernel, program, meta, threads.count, threads.min_work,
                             self._within)
            if split is not None:
                within, spin_s = self._within, threads.spin_s
                return lambda operands: within(split, _addresses(operands), spin_s)
        if _fast_call is not None and isinstance(program, CpuProgram):   # ndarrays as they are
            fast, address = _fast_call, program.address
            return lambda operands: fast(address, operands, meta)
        call = program.call
        return lambda operands: call(_addresses(operands), meta)


class GpuTarget:
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


class EmulatedCudaTarget:
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



@functools.lru_cache(maxsize=64)
def _cpu_target(threads: Threads, entries: EntryPlace, pool_bytes: int) -> CpuTarget:
    return CpuTarget(threads, entries, pool_bytes)


#: id(settings) -> (settings, its CPU target): a warm call's lookup costs one dict get
#: (settings objects are shared per combination: ``config.current_settings``)
_BY_SETTINGS: dict[int, tuple[Settings, CpuTarget]] = {}


#: the last (settings, target) answered: a run of calls under one Settings (the usual case)
#: costs one identity test, not the dict's id() and get
_LAST: tuple[Settings | None, CpuTarget | None] = (None, None)


def cpu_target(settings: Settings) -> CpuTarget:
    """Return the CPU target for a call under ``settings`` (one per thread split, shared)."""
    global _LAST
    last = _LAST
    if last[0] is settings:
        return last[1]   # type: ignore[return-value]
    found = _BY_SETTINGS.get(id(settings))
    if found is not None and found[0] is settings:
        _LAST = found
        return found[1]
    target = _cpu_target(Threads(settings.num_threads, settings.thread_min_work,
                                 settings.thread_spin_us * 1e-6), EntryPlace.of(settings),
                         int(settings.output_pool_mb * (1 << 20)))
    if len(_BY_SETTINGS) > 256:
        _BY_SETTINGS.clear()
    _BY_SETTINGS[id(settings)] = _LAST = (settings, target)
    return target


#: the targets programs are compiled for, by route name (compiling does not depend on the
#: call's settings; launching on the CPU does: :func:`cpu_target`)
TARGETS: dict[str, Target] = {"cpu": CpuTarget(), "gpu": GpuTarget()}
