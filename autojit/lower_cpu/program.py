"""``CpuProgram``, a compiled kernel, and loading one from cached object code.

This module imports neither llvmlite nor the renderer: a process whose kernels all come from
the disk cache never loads LLVM (importing ``llvmlite.binding`` alone costs ~30 ms, three
times the budget of a warm start). LLVM is imported only for a listing that was not cached,
or when the object code needs the JIT's own linker (see :func:`load_program`).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger("autojit")

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)

try:   # the native call packs (data, meta) as ctypes does, ~1 µs cheaper per call
    from autojit._native.fastcall import call as _native_call
except ImportError:   # not built (or built before it had one): ctypes
    _native_call = None


@dataclass(frozen=True)
class CpuProgram:
    """A compiled kernel: its entry point ``void name(void **data, const int64_t *meta)``.

    ``name`` is the kernel's name, ``symbol`` the unique symbol in the JIT, ``address`` the
    function pointer. ``object_code`` is the relocatable ELF object the JIT loaded (what the
    disk cache stores; empty when unknown). ``asm`` (host assembly) is produced on first
    access, or comes from the disk cache. A call may be split across threads by
    ``threads.call_kernel``, which needs the Kernel too.
    """

    name: str
    symbol: str
    address: int
    llvm_ir: str
    llvm_ir_optimized: str
    object_code: bytes = field(default=b"", repr=False, compare=False)
    #: what ``threads.py`` derives once per program: its split plan, the partials entries
    threading: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @functools.cached_property
    def _function(self) -> ctypes._CFuncPtr:
        return _KernelFn(self.address)

    @functools.cached_property
    def asm(self) -> str:
        """Return the host assembly of the optimised module."""
        from autojit.lower_cpu.engine import assembly_of
        return assembly_of(self.llvm_ir_optimized)

    def call(self, data: Sequence[int], meta: Sequence[int]) -> None:
        """Call the kernel with plain ints: buffer then scalar addresses (or the arrays
        themselves, natively), and ``meta``."""
        if _native_call is not None:
            _native_call(self.address, data, meta)
            return
        pointers = (ctypes.c_void_p * max(len(data), 1))(*data)
        sizes = (ctypes.c_int64 * max(len(meta), 1))(*meta)
        self._function(pointers, sizes)

    def run(self, data: Sequence[int], meta: np.ndarray) -> None:
        """Call the kernel: ``data`` holds buffer then scalar addresses, ``meta`` the int64
        sizes and runtime strides (``autojit.ir.abi.pack_meta``). Returns when it is done."""
        pointers = (ctypes.c_void_p * max(len(data), 1))(*data)
        meta = np.ascontiguousarray(meta, dtype=np.int64)
        self._function(ctypes.addressof(pointers), meta.ctypes.data)


def load_program(name: str, symbol: str, object_code: bytes, llvm_ir: str,
                 llvm_ir_optimized: str, asm: str | None = None) -> CpuProgram:
    """Return a callable ``CpuProgram`` for cached ``object_code`` (nothing is recompiled).

    The object is linked by :mod:`autojit.lower_cpu.elf_loader` (no LLVM needed) when it
    can be; an object that loader declines (another platform, a relocation it does not
    know, a symbol only the JIT defines) goes through LLVM's own linker,
    ``ExecutionEngine.add_object_file``. ``asm``, when given, is the cached listing.
    Raises ``ObjectLoadError`` when neither can load it.
    """
    from autojit.lower_cpu.elf_loader import ObjectLoadError, load_function

    try:
        address = load_function(object_code, symbol)
    except ObjectLoadError as exc:
        log.debug("autojit: %s goes through the LLVM JIT: %s", symbol, exc)
        from autojit.lower_cpu.engine import load_object
        address = load_object(object_code, symbol)
    program = CpuProgram(name, symbol, address, llvm_ir, llvm_ir_optimized, object_code)
    if asm is not None:
        program.__dict__["asm"] = asm   # prefill the cached_property
    return program
