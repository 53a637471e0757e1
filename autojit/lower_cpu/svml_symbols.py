"""The Intel SVML routines this process's NumPy links and exports, found without llvmlite.

On AVX-512 machines NumPy's wheels compute many float64/float32 math ufuncs with SVML
(``numpy/_core/src/umath/loops_umath_fp.dispatch.c.src``: ``__svml_sinh8_ha`` for float64,
``__svml_sinhf16`` for float32, one zmm register in and out) and export those symbols from
``_multiarray_umath``. A kernel calling glibc there differs from NumPy by an ULP or more, so
where NumPy's results are SVML's bit for bit (``svml.py`` decides that by a probe) kernels
call the same routine, under a private name (``autojit_svml___svml_sinh8_ha``) resolved to
NumPy's function by the JIT (``llvm.add_symbol``) and by the ELF loader alike.

No llvmlite here: the ELF loader and the disk cache's key (:func:`svml_tag`) import this.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os

import numpy as np

PREFIX = "autojit_svml_"

#: libm names of the unary functions NumPy may compute with SVML, and the binary ones
UNARY = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt")
BINARY = ("pow", "atan2")
#: lanes of one zmm register by itemsize
LANES = {8: 8, 4: 16}
#: the NumPy CPU features meaning its AVX-512 (SKX or later) loops run
_NUMPY_AVX512 = ("AVX512_SKX", "X86_V4")


def private_name(symbol: str) -> str:
    """Return the name kernels call for NumPy's ``symbol``: ``autojit_svml___svml_sinh8_ha``."""
    return PREFIX + symbol


def public_name(name: str) -> str | None:
    """Return NumPy's SVML symbol behind a private name, or None for any other name."""
    return name[len(PREFIX):] if name.startswith(PREFIX) else None


def candidates(math_name: str, itemsize: int) -> tuple[str, ...]:
    """Return the SVML symbols that may be NumPy's ``math_name`` at ``itemsize``, the one
    its loops name first (float64: the high-accuracy ``_ha`` variant)."""
    if itemsize == 8:
        return (f"__svml_{math_name}8_ha", f"__svml_{math_name}8")
    return (f"__svml_{math_name}f16",)


def _numpy_avx512() -> bool:
    """Whether this NumPy runs its AVX-512 loops (``NPY_DISABLE_CPU_FEATURES`` can stop it)."""
    from numpy._core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX512F")) and any(
        __cpu_features__.get(f) for f in _NUMPY_AVX512)


@functools.cache
def _module() -> ctypes.CDLL | None:
    from numpy._core import _multiarray_umath
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(_multiarray_umath.__file__)   # already loaded: the same handle
    return None


@functools.cache
def exported() -> dict[str, int]:
    """Return NumPy's SVML symbols this module may bind, with their addresses; empty where
    NumPy does not run its AVX-512 loops or exports none."""
    if not _numpy_avx512():
        return {}
    library = _module()
    if library is None:
        return {}
    found = {}
    for math_name in UNARY + BINARY:
        for itemsize in LANES:
            for symbol in candidates(math_name, itemsize):
                try:
                    address = ctypes.cast(library[symbol], ctypes.c_void_p).value
                except AttributeError:
                    continue
                if address:
                    found[symbol] = address
    return found


def svml_address(symbol: str) -> int:
    """Return the address of NumPy's SVML ``symbol`` (0 when absent or not in use)."""
    return exported().get(symbol, 0)


@functools.cache
def svml_tag() -> str:
    """Return what decides which SVML routines kernels call, for the disk cache's key: the
    NumPy build (file identity) and the symbols it exports and runs here; '' without any
    (code compiled where NumPy uses SVML is never loaded where it does not)."""
    symbols = exported()
    if not symbols:
        return ""
    from numpy._core import _multiarray_umath
    path = _multiarray_umath.__file__
    try:
        info = os.stat(path)
        identity = (path, info.st_size, info.st_mtime_ns)
    except OSError:
        identity = (path, 0, 0)
    return repr((np.__version__, identity, sorted(symbols)))
