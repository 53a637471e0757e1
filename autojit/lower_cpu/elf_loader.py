"""A minimal linker for the JIT's own object code: x86-64 ELF, large code model.

Why it exists: loading a cached kernel through LLVM means importing ``llvmlite.binding``
(~30 ms) and building an execution engine, while a warm process should answer in a few
milliseconds. The objects ``autojit.lower_cpu.jit`` emits are simple: its target machine uses
the large code model (``codemodel="jitdefault"``), so every reference — to the constant pool,
to libm and libmvec — is one absolute 64-bit address (``R_X86_64_64``), and kernels keep no
writable data. Linking such an object is copying its sections into fresh memory, writing
those addresses, and making the memory read-only and executable.

The pages are mapped with the C library's ``mmap`` and never unmapped, not even when the
interpreter finalises (a Python ``mmap`` object would be closed then, while a worker thread
or a daemon thread may still be running the code: a SIGSEGV at exit).

Anything else is declined with :class:`ObjectLoadError` — another machine or object type, a
relocation other than ``R_X86_64_64``, writable or common data, an unresolved symbol, a
system that refuses executable memory — and the caller falls back to LLVM's own linker
(``ExecutionEngine.add_object_file``). Declining is always safe; guessing never is.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import struct
import sys

from autojit.lower_cpu import svml_symbols
from autojit.lower_cpu.libm_symbols import glibc_address, public_name

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")

_ET_REL, _EM_X86_64 = 1, 62
_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 4, 8, 9
_SHF_WRITE, _SHF_ALLOC = 0x1, 0x2
_SHN_UNDEF, _SHN_ABS = 0, 0xFFF1
_R_X86_64_NONE, _R_X86_64_64 = 0, 1
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 0x1, 0x2, 0x4
_MAP_FAILED = (1 << 64) - 1
_MASK64 = (1 << 64) - 1
#: Unwind tables: only debuggers and C++ exceptions read them, and kernels throw none.
_SKIPPED = frozenset({".eh_frame"})


class ObjectLoadError(Exception):
    """This loader cannot link the object; the caller uses LLVM's linker instead."""


class _Section:
    """One section header (a plain class: a dataclass costs ~1 ms to create at import)."""

    __slots__ = ("index", "name", "type", "flags", "offset", "size", "link", "info", "align")

    def __init__(self, *values: int | str) -> None:
        for slot, value in zip(self.__slots__, values, strict=True):
            setattr(self, slot, value)


def _sections(data: bytes) -> list[_Section]:
    """Return the section headers of a relocatable x86-64 ELF object; decline others."""
    if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise ObjectLoadError("not an ELF object")
    ident, e_type, machine, *_, shoff, _flags, _eh, _ph, _phn, shentsize, shnum, shstrndx = (
        _ELF_HEADER.unpack_from(data))
    if ident[4:6] != b"\x02\x01" or e_type != _ET_REL or machine != _EM_X86_64:
        raise ObjectLoadError("not a little-endian 64-bit x86-64 relocatable object")
    if sys.platform != "linux" or shentsize != _SECTION.size:
        raise ObjectLoadError("unsupported platform or section header size")
    raw = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx]
    sections = []
    for index, (name, type_, flags, _addr, offset, size, link, info, align, _es) in (
            enumerate(raw)):
        start = names[4] + name
        label = data[start:data.index(b"\0", start)].decode()
        if type_ != _SHT_NOBITS and offset + size > len(data):
            raise ObjectLoadError(f"section {label} runs past the end of the object")
        sections.append(_Section(index, label, type_, flags, offset, size, link, info,
                                 max(align, 1)))
    return sections


def _layout(sections: list[_Section]) -> tuple[dict[int, int], int]:
    """Return (section index -> offset in the image, image size) of the loaded sections."""
    placed: dict[int, int] = {}
    cursor = 0
    for section in sections:
        if not section.flags & _SHF_ALLOC or section.size == 0 or section.name in _SKIPPED:
            continue
        if section.flags & _SHF_WRITE:
            raise ObjectLoadError(f"writable section {section.name}")
        cursor = -(-cursor // section.align) * section.align
        placed[section.index] = cursor
        cursor += section.size
    if not placed:
        raise ObjectLoadError("no code")
    return placed, -(-cursor // mmap.PAGESIZE) * mmap.PAGESIZE


@functools.cache
def _libraries() -> tuple[ctypes.CDLL, ...]:
    """Return the handles external symbols resolve against: the process, libmvec, libm."""
    handles = [ctypes.CDLL(None, use_errno=True)]
    for name in ("libmvec.so.1", "libm.so.6"):   # glibc's sonames (find_library forks)
        with contextlib.suppress(OSError):   # no libmvec: objects needing it are declined
            handles.append(ctypes.CDLL(name))
    return tuple(handles)


#: private names kernels call: how to recover the public symbol, and where it lives
_PRIVATE = ((public_name, glibc_address),
            (svml_symbols.public_name, svml_symbols.svml_address))


def _external(name: str) -> int:
    """Return the address of an external symbol, resolved as LLVM's JIT resolves it; decline
    when no library defines it.

    The JIT asks LLVM's symbol table first, where ``llvm.add_symbol`` may have put another
    definition (Numba installs its own ``log``, ``log1p``, ``expm1``, ...). Such a table
    exists only once ``llvmlite.binding`` is imported, so then it is asked too; before that,
    the libraries themselves are what the JIT would find. The private libm names kernels
    call (``libm_symbols.py``) are glibc's functions, whatever that table holds, and the
    private SVML names (``svml_symbols.py``) NumPy's routines."""
    for unmangle, resolve in _PRIVATE:
        plain = unmangle(name)
        if plain is not None:
            address = resolve(plain)
            if not address:
                raise ObjectLoadError(f"unresolved symbol {name}")
            return address
    binding = sys.modules.get("llvmlite.binding")
    if binding is not None:
        address = binding.address_of_symbol(name)
        if address:
            return address
    for library in _libraries():
        try:
            return ctypes.cast(library[name], ctypes.c_void_p).value or 0
        except AttributeError:
            continue
    raise ObjectLoadError(f"unresolved symbol {name}")


def _symbols(data: bytes, sections: list[_Section]) -> list[tuple[str, int, int]]:
    """Return the symbol table as (name, section index, value) triples."""
    table = [s for s in sections if s.type == _SHT_SYMTAB]
    if len(table) != 1:
        raise ObjectLoadError("expected one symbol table")
    strings = sections[table[0].link].offset
    result = []
    for at in range(table[0].offset, table[0].offset + table[0].size, _SYMBOL.size):
        name, _info, _other, shndx, value, _size = _SYMBOL.unpack_from(data, at)
        start = strings + name
        result.append((data[start:data.index(b"\0", start)].decode(), shndx, value))
    return result


def _address_of(symbol: tuple[str, int, int], base: int, placed: dict[int, int]) -> int:
    name, shndx, value = symbol
    if shndx == _SHN_UNDEF:
        return _external(name)
    if shndx == _SHN_ABS:
        return value
    if shndx not in placed:
        raise ObjectLoadError(f"symbol {name} lives in a section that is not loaded")
    return base + placed[shndx] + value


def _relocate(data: bytes, sections: list[_Section], base: int, placed: dict[int, int],
              symbols: list[tuple[str, int, int]]) -> None:
    """Write every relocation of the loaded sections into the image at ``base``."""
    for section in sections:
        if section.type == _SHT_REL:
            raise ObjectLoadError("REL relocations")
        if section.type != _SHT_RELA or section.info not in placed:
            continue
        target = placed[section.info]
        for at in range(section.offset, section.offset + section.size, _RELA.size):
            offset, info, addend = _RELA.unpack_from(data, at)
            kind = info & 0xFFFFFFFF
            if kind == _R_X86_64_NONE:
                continue
            if kind != _R_X86_64_64:
                raise ObjectLoadError(f"relocation type {kind} in {section.name}")
            value = _address_of(symbols[info >> 32], base, placed) + addend
            ctypes.c_uint64.from_address(base + target + offset).value = value & _MASK64


@functools.cache
def _libc() -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr, ctypes._CFuncPtr]:
    """Return the C library's ``mmap``, ``munmap`` and ``mprotect``, typed."""
    libc = _libraries()[0]
    mmap_, munmap, mprotect = libc.mmap, libc.munmap, libc.mprotect
    mmap_.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long)
    mmap_.restype = ctypes.c_void_p
    munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    munmap.restype = mprotect.restype = ctypes.c_int
    return mmap_, munmap, mprotect


def lifelong_pages(size: int) -> int:
    """Return the address of ``size`` bytes (rounded up to pages) of fresh zeroed read-write
    memory that is never freed: not by the garbage collector, not when the interpreter
    finalises (threads still running native code may read it then; the OS frees it when
    the process ends). Raises OSError when the system refuses."""
    size = -(-max(size, 1) // mmap.PAGESIZE) * mmap.PAGESIZE
    anonymous = getattr(mmap, "MAP_ANONYMOUS", None)   # the platform's own flag values
    if anonymous is None or sys.platform == "win32":
        raise OSError("no anonymous mmap here")
    address = _libc()[0](None, size, _PROT_READ | _PROT_WRITE, mmap.MAP_PRIVATE | anonymous,
                         -1, 0)
    if address is None or address == _MAP_FAILED:
        raise OSError(ctypes.get_errno(), "mmap refused anonymous memory")
    return address


def _protect(base: int, size: int) -> None:
    if _libc()[2](base, size, _PROT_READ | _PROT_EXEC) != 0:
        raise ObjectLoadError(f"mprotect refused executable memory (errno {ctypes.get_errno()})")


def load_function(data: bytes, symbol: str) -> int:
    """Link ``data`` (an ELF object) into executable memory; return ``symbol``'s address.

    Raises ObjectLoadError for anything outside the supported subset (nothing is mapped
    executable in that case)."""
    return load_functions(data, (symbol,))[0]


def load_functions(data: bytes, symbols: tuple[str, ...]) -> tuple[int, ...]:
    """Link ``data`` once; return the address of each of ``symbols`` (``load_function``)."""
    sections = _sections(data)
    placed, size = _layout(sections)
    table = _symbols(data, sections)
    found = []
    for symbol in symbols:
        defined = [s for s in table if s[0] == symbol and s[1] in placed]
        if len(defined) != 1:
            raise ObjectLoadError(f"symbol {symbol} is not defined exactly once")
        found.append(defined[0])
    try:
        base = lifelong_pages(size)
    except OSError as exc:
        raise ObjectLoadError(f"no memory for the code ({exc})") from exc
    try:
        for index, offset in placed.items():
            section = sections[index]
            if section.type != _SHT_NOBITS:
                ctypes.memmove(base + offset, data[section.offset:section.offset + section.size],
                               section.size)
        _relocate(data, sections, base, placed, table)
        _protect(base, size)
    except BaseException:
        _libc()[1](base, size)     # nothing can run it yet
        raise
    # the pages stay mapped for the life of the process: their code may be called any time
    return tuple(_address_of(symbol, base, placed) for symbol in found)
