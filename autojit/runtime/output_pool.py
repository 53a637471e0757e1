"""Recycled memory for big outputs: the pages of a result the caller dropped are reused by
the next call instead of being returned to the kernel and faulted in again.

Why: glibc serves allocations above its mmap threshold (at most 32 MiB) with fresh
``mmap``s, so every call that returns a 10M-float64 result first-touches 80 MB: measured
here, allocating and filling 80 MB costs 37.7 ms against 15.3 ms for refilling memory
already mapped (median of 15). Below 32 MiB glibc already reuses freed heap memory, so
only arrays at least ``MIN_BYTES`` big come from here.

A block is an anonymous ``mmap``. The array handed out is a view of it; when that array
(and every view of it) is gone, a finalizer gives the block back — unless something else
still references the block (``arr.base`` kept by the caller), in which case it is simply
dropped, never reused under a live reference. Idle blocks are kept up to
``AUTOJIT_OUTPUT_POOL_MB`` (default 512; 0 turns recycling off), least recently used
evicted first.
"""

from __future__ import annotations

import math
import mmap
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

#: glibc's largest mmap threshold: smaller blocks are recycled by malloc itself
MIN_BYTES = 32 << 20
_PAGE = mmap.PAGESIZE


def _references_left_by_a_dropped_array() -> int:
    """Return ``sys.getrefcount(block)`` inside the finalizer of an array nobody else saw
    (the dying array's base, the finalizer's arguments, ...): measured, not assumed, as it
    depends on the interpreter's version."""
    seen: list[int] = []
    block = mmap.mmap(-1, _PAGE)
    array = np.ndarray((_PAGE,), np.uint8, buffer=block)
    weakref.finalize(array, lambda b: seen.append(sys.getrefcount(b)), block)
    del block, array
    return seen[0]


_UNUSED_REFERENCES = _references_left_by_a_dropped_array()


class OutputPool:
    """Idle mmap blocks by size, bounded in bytes, least recently used first out.
    ``limit_bytes`` is a number or a function returning it (read at each big request)."""

    def __init__(self, limit_bytes: int | Callable[[], int]) -> None:
        self._limit = limit_bytes if callable(limit_bytes) else lambda: limit_bytes
        self._idle: OrderedDict[int, list[mmap.mmap]] = OrderedDict()
        self._idle_bytes = 0
        self._lock = threading.Lock()
        self.reused = self.mapped = self.dropped = 0

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """Return an uninitialised C-contiguous array, on recycled pages when it is big."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < MIN_BYTES:
            return np.empty(shape, dtype)
        self.limit_bytes = self._limit()
        if self.limit_bytes <= 0:
            self.clear()
            return np.empty(shape, dtype)
        size = -(-nbytes // _PAGE) * _PAGE
        try:
            block = self._take(size)
        except (OSError, OverflowError, ValueError):
            # the system cannot map it (ENOMEM) or the size does not fit: NumPy's own
            # allocation then raises what NumPy raises (MemoryError "Unable to allocate")
            return np.empty(shape, dtype)
        array = np.ndarray(shape, dtype, buffer=block)      # base: the block itself
        weakref.finalize(array, self._give_back, block)
        return array

    def _take(self, size: int) -> mmap.mmap:
        with self._lock:
            blocks = self._idle.get(size)
            if blocks:
                block = blocks.pop()
                if not blocks:
                    del self._idle[size]
                self._idle_bytes -= size
                self.reused += 1
                return block
            self.mapped += 1
        return mmap.mmap(-1, size)

    limit_bytes = 0

    def _give_back(self, block: mmap.mmap) -> None:
        # More references than a dropped array leaves (_UNUSED_REFERENCES) means the caller
        # kept the block itself (``arr.base``): never reuse it then.
        if sys.getrefcount(block) > _UNUSED_REFERENCES:
            self.dropped += 1
            return
        size = len(block)
        with self._lock:
            self._idle.setdefault(size, []).append(block)
            self._idle.move_to_end(size)
            self._idle_bytes += size
            while self._idle_bytes > self.limit_bytes and self._idle:
                evicted_size, blocks = next(iter(self._idle.items()))
                blocks.pop().close()
                self._idle_bytes -= evicted_size
                if not blocks:
                    del self._idle[evicted_size]

    def clear(self) -> None:
        """Unmap every idle block (their memory goes back to the system)."""
        with self._lock:
            for blocks in self._idle.values():
                for block in blocks:
                    block.close()
            self._idle.clear()
            self._idle_bytes = 0

    @property
    def idle_bytes(self) -> int:
        return self._idle_bytes


def _configured_limit() -> int:
    from autojit.config import current_settings
    return int(current_settings().output_pool_mb * (1 << 20))


#: the process's pool, bounded by ``AUTOJIT_OUTPUT_POOL_MB`` / ``config(output_pool_mb=...)``
OUTPUT_POOL = OutputPool(_configured_limit)
