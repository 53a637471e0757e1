"""Private names for the libm functions kernels call, bound to glibc's own definitions.

A kernel calling ``@log`` would be linked against whatever the process's LLVM symbol table
says ``log`` is, and Numba, once it has compiled anything, installs its own ``log``,
``log1p``, ``expm1``, ``acosh``, ... there (``llvm.add_symbol``): results would depend on
what ran before. So kernels call ``@autojit_libm_log``, a name only autojit defines: the JIT
binds it to glibc's ``log`` (``mathlib.bind_private_math``) and the ELF loader resolves it
the same way, without asking LLVM's table. No llvmlite here: the ELF loader imports this.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools

PREFIX = "autojit_libm_"


def private_name(symbol: str) -> str:
    """Return the name kernels call for libm's ``symbol``: ``autojit_libm_sinf``."""
    return PREFIX + symbol


def public_name(name: str) -> str | None:
    """Return libm's symbol behind a private name, or None for any other name."""
    return name[len(PREFIX):] if name.startswith(PREFIX) else None


@functools.cache
def _libm() -> ctypes.CDLL | None:
    with contextlib.suppress(OSError):
        return ctypes.CDLL("libm.so.6")   # glibc's soname (find_library forks)
    return None


def glibc_address(symbol: str) -> int:
    """Return the address of glibc's libm ``symbol`` (0 when absent)."""
    library = _libm()
    if library is None:
        return 0
    try:
        return ctypes.cast(library[symbol], ctypes.c_void_p).value or 0
    except AttributeError:
        return 0
