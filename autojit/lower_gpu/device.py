"""The CUDA device: is one usable, what is its ``sm_XX``, and launching a compiled kernel.

CuPy is imported lazily and only here. "CuPy imports" is not "a GPU is usable": without a
driver every device call raises, so :func:`gpu_available` asks for the device count.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autojit.errors import DeviceUnavailableError
from autojit.ir.abi import loop_extent, pack_meta
from autojit.ir.kernel import Kernel
from autojit.lower_gpu.compile import CudaBinary
from autojit.lower_gpu.reduce_launch import (
    ReduceLaunch,
    choose_reduce_launch,
    is_reduction,
    launch_splits,
)

logger = logging.getLogger("autojit")

BLOCK = 256
BLOCKS_PER_SM = 32   # grid-stride loop: more blocks than this only adds scheduling work
RESIDENT_THREADS_PER_SM = 2048   # sm_80 / sm_90: blocks of BLOCK threads resident at once

_FUNCTIONS: dict[tuple[str, str, bytes], Any] = {}


@functools.cache
def gpu_available() -> bool:
    """Return True when CuPy imports and sees at least one CUDA device (probed once)."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # ImportError, CUDARuntimeError (no driver), ...
        logger.debug("no usable GPU: %s", exc)
        return False
    logger.debug("CUDA devices: %d", count)
    return count > 0


def _require_gpu() -> Any:
    if not gpu_available():
        raise DeviceUnavailableError(
            "no usable CUDA device (CuPy missing, no driver, or no GPU); run on the CPU "
            "or set AUTOJIT_FORCE=cpu")
    import cupy
    return cupy


@functools.cache
def _device_properties(device: int) -> tuple[str, int]:
    cupy = _require_gpu()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    return f"sm_{props['major']}{props['minor']}", int(props["multiProcessorCount"])


def device_arch() -> str:
    """Return the current device's architecture for NVRTC, e.g. ``"sm_90"`` on an H100."""
    cupy = _require_gpu()
    return _device_properties(cupy.cuda.runtime.getDevice())[0]


def _kernel_function(kernel: Kernel, binary: CudaBinary) -> Any:
    """Return the loaded ``RawKernel`` for ``binary``, loading the cubin on first use."""
    key = (kernel.name, binary.arch, binary.cubin)   # bytes cache their hash
    function = _FUNCTIONS.get(key)
    if function is None:
        cupy = _require_gpu()
        digest = hashlib.sha256(binary.cubin).hexdigest()[:32]
        folder = Path(tempfile.gettempdir()) / f"autojit-cubin-{os.getuid()}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{kernel.name}-{binary.arch}-{digest}.cubin"
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(binary.cubin)
            os.replace(partial, path)
        function = cupy.RawModule(path=str(path)).get_function(kernel.name)
        _FUNCTIONS[key] = function
    return function


def launch_args(kernel: Kernel, arrays: Sequence[Any], scalars: Sequence[Any],
                sizes: dict[str, int]) -> tuple:
    """Return the ``__global__`` function's arguments: arrays (as device pointers), scalars
    as NumPy scalars of their declared dtype, then sizes and runtime strides as int64."""
    typed = [np.dtype(p.dtype).type(v) for p, v in zip(kernel.scalars, scalars, strict=True)]
    meta = [np.int64(m) for m in pack_meta(kernel, sizes, arrays)]
    return (*arrays, *typed, *meta)


def reduction_launch(kernel: Kernel, sizes: dict[str, int], sm_count: int) -> ReduceLaunch:
    """Return how a reduction kernel is launched on a device with ``sm_count`` SMs."""
    resident = sm_count * (RESIDENT_THREADS_PER_SM // BLOCK)
    return choose_reduce_launch(kernel, loop_extent(kernel, sizes), BLOCK, resident)


def _launch_reduction(cupy: Any, kernel: Kernel, function: Any, args: tuple,
                      plan: ReduceLaunch) -> None:
    """Launch with the reduction parameters (scratch, team, splits) after ``args`` (a split
    scan: twice, in stream order; see ``launch_splits``).

    Scratch is allocated per launch from CuPy's stream-ordered pool and zeroed on the same
    stream (its row counters must start at 0); without splits the pointer is NULL.
    """
    scratch = (cupy.zeros(plan.scratch_words, dtype=np.uint64) if plan.scratch_words
               else np.uint64(0))
    for splits in launch_splits(kernel, plan):
        function((plan.grid,), (plan.block,),
                 (*args, scratch, np.int64(plan.team), np.int64(splits)))


def launch(kernel: Kernel, binary: CudaBinary, arrays: Sequence[Any],
           scalars: Sequence[Any], sizes: dict[str, int]) -> None:
    """Launch ``kernel`` on the current device and stream; returns without synchronising.

    ``arrays`` are CuPy arrays in ``kernel.buffers`` order (outputs written in place).
    """
    extent = loop_extent(kernel, sizes)
    reduction = is_reduction(kernel)
    # a reduction over empty rows still stores its start values, once per (outer) row
    if math.prod(extent[:kernel.outer_rank] if reduction else extent) == 0:
        return
    cupy = _require_gpu()
    sm_count = _device_properties(cupy.cuda.runtime.getDevice())[1]
    if reduction:
        _launch_reduction(cupy, kernel, _kernel_function(kernel, binary),
                          launch_args(kernel, arrays, scalars, sizes),
                          reduction_launch(kernel, sizes, sm_count))
        return
    total = math.prod(extent)
    grid = max(1, min(-(-total // BLOCK), sm_count * BLOCKS_PER_SM))
    function = _kernel_function(kernel, binary)
    function((grid,), (BLOCK,), launch_args(kernel, arrays, scalars, sizes))
