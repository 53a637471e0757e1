"""Run generated CUDA C on the CPU: g++ compiles the same source against ``emulation.h``.

This is how kernels are checked for numerics on machines without a GPU. The generated
source is untouched; ``-DAUTOJIT_EMULATE`` switches on its ``<name>_emulate`` host entry
point, which plays every (block, thread) of a small odd grid in turn. Reduction kernels run
each block as fibers that meet at barriers and shuffles (see ``emulation.h``), with a launch
chosen by the same function as on a GPU, for a small device (``EMULATED_BLOCK`` threads,
``EMULATED_RESIDENT_BLOCKS`` blocks at once), so modest sizes reach every code path.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from autojit.errors import AutojitError, CompileError
from autojit.ir.abi import loop_extent, pack_meta
from autojit.ir.kernel import Kernel
from autojit.lower_gpu.reduce_launch import (
    WAVES,
    ReduceLaunch,
    choose_reduce_launch,
    is_reduction,
    launch_splits,
    make_reduce_launch,
)

logger = logging.getLogger("autojit")

GXX_FLAGS = ("-x", "c++", "-O1", "-std=c++17", "-ffp-contract=off", "-DAUTOJIT_EMULATE",
             "-shared", "-fPIC", "-w")
# -ffp-contract=off: NVRTC is run with --fmad=false, so neither side fuses a*b+c.

EMULATED_BLOCK = 64
EMULATED_RESIDENT_BLOCKS = 2

_LIBRARIES: dict[str, ctypes.CDLL] = {}


class EmulationError(AutojitError):
    """The emulated kernel misbehaved as it would on a GPU (e.g. a barrier deadlock)."""
_LOCK = threading.Lock()


def emulation_header() -> Path:
    """Return the path of ``emulation.h`` (package data next to this module)."""
    return Path(str(resources.files("autojit.lower_gpu").joinpath("emulation.h")))


def _cache_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"autojit-emulate-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _compile_library(source: str, digest: str) -> Path:
    """Return the path of the shared object for ``source``, compiling it unless cached."""
    target = _cache_dir() / f"{digest}.so"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=_cache_dir()) as work:
        cu, so = Path(work) / "kernel.cu", Path(work) / "kernel.so"
        cu.write_text(source)
        cmd = ["g++", *GXX_FLAGS, "-include", str(emulation_header()), str(cu),
               "-o", str(so), "-lm"]
        logger.debug("emulate: %s", " ".join(cmd))
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CompileError("g++ failed to compile the emulated CUDA source",
                               source, done.stderr)
        os.replace(so, target)   # atomic: parallel test workers never see half a file
    return target


@functools.cache
def _toolchain_key() -> bytes:
    """Return what besides the source decides the shared object: the header and flags (a
    changed emulation.h must not reuse a library cached on disk)."""
    return emulation_header().read_bytes() + " ".join(GXX_FLAGS).encode()


def build_emulation(source: str) -> ctypes.CDLL:
    """Return the loaded library of ``source`` built for emulation (cached per source hash,
    in memory and in a per-user temp directory)."""
    digest = hashlib.sha256(_toolchain_key() + source.encode()).hexdigest()[:32]
    with _LOCK:
        library = _LIBRARIES.get(digest)
    if library is None:
        library = ctypes.CDLL(str(_compile_library(source, digest)))
        with _LOCK:
            _LIBRARIES[digest] = library
    return library


def check_layout(kernel: Kernel, arrays: Sequence[np.ndarray]) -> None:
    """Raise ValueError when an array's strides contradict a compile-time stride.

    A mismatch would make the kernel read or write the wrong elements without any error,
    so the emulator (a test tool) checks what the router guarantees in production.
    """
    for buf, array in zip(kernel.buffers, arrays, strict=True):
        if array.dtype != buf.dtype:
            raise TypeError(f"buffer {buf.name}: expected {buf.dtype}, got {array.dtype}")
        for dim, stride in enumerate(buf.strides):
            axis = kernel.array_axis(kernel.buffers.index(buf), dim, array.ndim)
            if stride is None or axis is None or array.shape[axis] <= 1 or array.size == 0:
                continue
            if array.strides[axis] != stride * array.itemsize:
                raise ValueError(f"buffer {buf.name}: axis {axis} has byte stride "
                                 f"{array.strides[axis]}, kernel expects {stride} elements")


def _data_pointers(kernel: Kernel, arrays: Sequence[np.ndarray],
                   scalars: Sequence[Any]) -> tuple[ctypes.Array, list[np.ndarray]]:
    """Return ``data`` (buffer pointers, then pointers to each scalar's value) and the
    scalar boxes that must outlive the call."""
    boxes = [np.array([value], dtype=p.dtype) for p, value in
             zip(kernel.scalars, scalars, strict=True)]
    pointers = [a.ctypes.data for a in arrays] + [box.ctypes.data for box in boxes]
    return (ctypes.c_void_p * max(len(pointers), 1))(*pointers), boxes


def emulated_launch(kernel: Kernel, sizes: dict[str, int], grid: int | None = None,
                    block: int | None = None, team: int | None = None,
                    splits: int | None = None) -> ReduceLaunch:
    """Return the emulated launch of a reduction kernel: ``choose_reduce_launch`` for the
    small emulated device, with any of grid, block, team and splits forced."""
    extent = loop_extent(kernel, sizes)
    chosen = choose_reduce_launch(kernel, extent, block or EMULATED_BLOCK,
                                  EMULATED_RESIDENT_BLOCKS)
    launch = make_reduce_launch(kernel, extent, chosen.block, team or chosen.team,
                                splits or chosen.splits,
                                grid_cap=WAVES * EMULATED_RESIDENT_BLOCKS)
    return ReduceLaunch(grid or launch.grid, launch.block, launch.team, launch.splits,
                        launch.scratch_words)


def _run_reduction(library: ctypes.CDLL, kernel: Kernel, data: ctypes.Array,
                   meta: np.ndarray, launch: ReduceLaunch) -> None:
    entry = getattr(library, f"{kernel.name}_emulate")
    entry.restype = None
    entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                      ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong]
    scratch = np.zeros(max(launch.scratch_words, 1), np.uint64)
    library.aj_emulate_error.restype = ctypes.c_char_p
    for splits in launch_splits(kernel, launch):
        entry(ctypes.cast(data, ctypes.c_void_p), meta.ctypes.data, launch.grid, launch.block,
              scratch.ctypes.data, launch.team, splits)
        error = library.aj_emulate_error()
        if error:
            raise EmulationError(f"kernel {kernel.name} with {launch}: {error.decode()}")


def run_emulated(kernel: Kernel, source: str, arrays: Sequence[np.ndarray],
                 scalars: Sequence[Any], sizes: dict[str, int],
                 grid: int | None = None, block: int | None = None, *,
                 team: int | None = None, splits: int | None = None) -> None:
    """Run ``kernel`` (rendered, possibly among others, in ``source``) on the CPU.

    ``arrays`` follows ``kernel.buffers`` (NumPy arrays whose layout matches the kernel's
    compile-time strides); outputs are written in place. Returns nothing. Elementwise
    kernels default to a 3 x 7 grid; reduction kernels to ``emulated_launch``'s choice
    (``team`` and ``splits`` apply to them only). Raises EmulationError on a deadlock.
    """
    library = build_emulation(source)
    check_layout(kernel, arrays)
    meta = pack_meta(kernel, sizes, arrays)
    data, _boxes = _data_pointers(kernel, arrays, scalars)
    if is_reduction(kernel):
        launch = emulated_launch(kernel, sizes, grid, block, team, splits)
        _run_reduction(library, kernel, data, meta, launch)
        return
    entry = getattr(library, f"{kernel.name}_emulate")
    entry.restype = None
    entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    entry(ctypes.cast(data, ctypes.c_void_p), meta.ctypes.data, grid or 3, block or 7)
