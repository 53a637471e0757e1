"""Recycled memory for big outputs: the pages of a result the caller dropped are reused by
the next call instead of being returned to the kernel and faulted in again.

Why: glibc serves allocations above its mmap threshold (at most 32 MiB) with fresh
``mmap``s, so every call that returns a 10M-float64 result first-touches 80 MB: measured
here, allocating and filling 80 MB costs 37.7 ms against 15.3 ms for refilling memory
already mapped (median of 15). Below 32 MiB glibc already reuses freed heap memory, so
only arrays at least ``MIN_BYTES`` big come from here.

The arrays are NumPy's own, allocated by ``np.empty`` through a NumPy allocator handler
(NEP 49, ``autojit/_native/pool.c``) made current for that one allocation: they own their
data (``flags.owndata``, ``base is None``, ``resize`` works, pickling and
``np.shares_memory`` as for any array), and NumPy frees them through the handler it keeps
in the array, which puts the block back in the pool. A block is thus reused only once
its array and every view of it are gone. Idle blocks are kept up to
``AUTOJIT_OUTPUT_POOL_MB`` (default 512; 0 turns recycling off), least recently freed
unmapped first. Without the native module (not built) big results are plain ``np.empty``.
Blocks are advised as huge pages, as NumPy's own allocator does above 4 MiB. Measured
(benchmarks/bench_output_pool.py, one run, medians of 70 calls), ms per call, pool / no
pool / the earlier ``np.ndarray(buffer=mmap)`` pool: x + 1.0 on 10M f64 18.1 / 37.1 / 19.9,
layer norm (16384, 1024) f32 20.7 / 51.5 / 24.1 (the gain over mmap views: huge pages).
"""

from __future__ import annotations

import math

import numpy as np

try:
    from autojit._native import pool as _native
except ImportError:   # not built: NumPy's allocation, only slower for big results
    _native = None

#: glibc's largest mmap threshold: smaller blocks are recycled by malloc itself
MIN_BYTES = 32 << 20


#: the item size of each numeric dtype, by dtype: every call allocates its results here,
#: and a lookup costs ~20 ns where ``np.dtype(dtype).itemsize`` costs ~90
_ITEMSIZES = {np.dtype(c): np.dtype(c).itemsize
              for c in "?" + np.typecodes["AllInteger"] + np.typecodes["AllFloat"]}


class OutputPool:
    """Idle blocks of big results, bounded in bytes, least recently freed first out.
    ``limit_bytes`` is the bound where a request names none (the process's pool is asked
    with the call's ``output_pool_mb``: the CPU target carries it)."""

    def __init__(self, limit_bytes: int = 0) -> None:
        self.limit_bytes = limit_bytes
        # the NumPy mem_handler capsule; every array from it keeps it (and its blocks) alive
        self._handler = _native.new_pool(MIN_BYTES) if _native is not None else None

    def empty(self, shape: tuple[int, ...], dtype: np.dtype,
              limit_bytes: int | None = None) -> np.ndarray:
        """Return an uninitialised C-contiguous array, on recycled pages when it is big,
        keeping at most ``limit_bytes`` idle (default: the pool's own bound)."""
        itemsize = _ITEMSIZES.get(dtype)
        if itemsize is None:
            dtype = np.dtype(dtype)
            itemsize = dtype.itemsize
        if self._handler is None or math.prod(shape) * itemsize < MIN_BYTES:
            return np.empty(shape, dtype)
        dtype = np.dtype(dtype)
        limit = self.limit_bytes if limit_bytes is None else limit_bytes
        if limit <= 0:   # off: nothing idle, and blocks still out unmapped on free
            _native.clear(self._handler, 0)
            return np.empty(shape, dtype)
        # a block the system cannot map: NULL to NumPy, which raises its own MemoryError
        return _native.empty(self._handler, tuple(shape), dtype, int(limit))

    def clear(self) -> None:
        """Unmap every idle block (their memory goes back to the system)."""
        if self._handler is not None:
            _native.clear(self._handler)

    def _stats(self) -> tuple[int, int, int, int]:
        return _native.stats(self._handler) if self._handler is not None else (0, 0, 0, 0)

    @property
    def reused(self) -> int:
        """Big requests served by an idle block."""
        return self._stats()[0]

    @property
    def mapped(self) -> int:
        """Big requests served by a fresh mapping."""
        return self._stats()[1]

    @property
    def refused(self) -> int:
        """Big requests the system refused to map (the caller got NumPy's MemoryError)."""
        return self._stats()[2]

    @property
    def idle_bytes(self) -> int:
        return self._stats()[3]


#: the process's pool; each request names its bound, the call's ``AUTOJIT_OUTPUT_POOL_MB`` /
#: ``config(output_pool_mb=...)`` (``targets.CpuTarget.pool_bytes``)
OUTPUT_POOL = OutputPool()
