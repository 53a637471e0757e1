"""Compile CUDA C to cubin (and PTX) with NVRTC through ``cuda.bindings``.

NVRTC needs neither a GPU nor a driver, so this runs on every machine with the
``nvidia-cuda-nvrtc`` wheel. We load cubins, not PTX: the PTX ISA of a newer NVRTC cannot
be JIT-compiled by an older driver. ``cuda`` is imported inside the functions so that
importing autojit never imports it.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from autojit.errors import CompileError

logger = logging.getLogger("autojit")

#: --fmad=false: NumPy never fuses a*b+c, and contract 1 wants IEEE basic ops exact.
#: --diag-suppress=177: decompositions leave unused values ("declared but never referenced").
NVRTC_OPTIONS: tuple[str, ...] = ("-default-device", "--std=c++17", "-lineinfo",
                                  "--fmad=false", "--diag-suppress=177")


@dataclass(frozen=True)
class CudaBinary:
    """The output of one NVRTC compile: SASS for ``arch``, its PTX and NVRTC's log."""

    cubin: bytes
    ptx: str
    log: str
    arch: str


_CACHE: dict[tuple[str, str], CudaBinary] = {}


def nvrtc_version() -> tuple[int, int] | None:
    """Return NVRTC's (major, minor), or None when NVRTC cannot be loaded."""
    return _probe_nvrtc()[0]


def nvrtc_unavailable() -> str | None:
    """Return why NVRTC cannot be used (``NVRTC not installed (...)``), None when it can."""
    return _probe_nvrtc()[1]


def _probe_nvrtc() -> tuple[tuple[int, int] | None, str | None]:
    """Return (NVRTC's version, None), or (None, why it cannot be used)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        reason = (f"NVRTC not installed ({exc}): pip install cuda-bindings nvidia-cuda-nvrtc "
                  "(in autojit's test extra)")
        logger.debug("NVRTC unavailable: %s", reason)
        return None, reason
    try:
        status, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # the shared library missing or unloadable
        reason = f"NVRTC could not be loaded ({type(exc).__name__}: {exc})"
        logger.debug("NVRTC unavailable: %s", reason)
        return None, reason
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None, f"NVRTC could not be loaded (nvrtcVersion: {status})"
    return (major, minor), None


def _check(nvrtc: Any, result: tuple, what: str, source: str = "") -> tuple:
    """Return the values after NVRTC's status code; raise CompileError on failure."""
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, message = nvrtc.nvrtcGetErrorString(status)
        raise CompileError(f"NVRTC {what} failed: {message.decode()}", source)
    return tuple(values)


def _read(nvrtc: Any, prog: Any, size_fn: str, get_fn: str) -> bytes:
    """Return one NVRTC output (log, PTX or cubin) as bytes, NUL terminator included."""
    (size,) = _check(nvrtc, getattr(nvrtc, size_fn)(prog), size_fn)
    buffer = b" " * size
    _check(nvrtc, getattr(nvrtc, get_fn)(prog, buffer), get_fn)
    return buffer


def _run_nvrtc(source: str, name: str, arch: str, extra: tuple[str, ...] = ()) -> CudaBinary:
    from cuda.bindings import nvrtc

    (prog,) = _check(nvrtc, nvrtc.nvrtcCreateProgram(
        source.encode(), f"{name}.cu".encode(), 0, [], []), "create program", source)
    try:
        options = [f"--gpu-architecture={arch}".encode()] + [
            o.encode() for o in (*NVRTC_OPTIONS, *extra)]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        log = _read(nvrtc, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
        log_text = log.rstrip(b"\0").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC could not compile kernel {name!r} for {arch}",
                               source, log_text)
        cubin = _read(nvrtc, prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
        ptx = _read(nvrtc, prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CudaBinary(cubin, ptx.rstrip(b"\0").decode(), log_text, arch)


def compile_cuda(source: str, name: str, arch: str = "sm_90") -> CudaBinary:
    """Return the cubin, PTX and log of ``source`` compiled for ``arch`` (``sm_XX``).

    ``name`` names the program in diagnostics. Results are cached in memory per
    (source hash, arch). Raises ``CompileError`` with the numbered source and NVRTC's log.
    """
    key = (hashlib.sha256(source.encode()).hexdigest(), arch)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    binary = _run_nvrtc(source, name, arch)
    logger.debug("NVRTC compiled %s for %s: %d bytes of cubin", name, arch, len(binary.cubin))
    _CACHE[key] = binary
    return binary


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one entry function: registers, spills, stack."""

    name: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack: int


_PTXAS_ENTRY = re.compile(r"Function properties for (\S+)\s*\n.*?(\d+) bytes stack frame, "
                          r"(\d+) bytes spill stores, (\d+) bytes spill loads"
                          r"(?:\s*\n.*?Used (\d+) registers)?")


def kernel_resources(source: str, name: str, arch: str = "sm_90") -> list[KernelResources]:
    """Return ptxas's register and spill counts for each ``__global__`` function of
    ``source`` (NVRTC with ``--ptxas-options=-v``; no GPU needed). Helper device functions
    that ptxas reports without a register count are left out."""
    log = _run_nvrtc(source, name, arch, ("--ptxas-options=-v",)).log
    return [KernelResources(m[1], int(m[5]), int(m[3]), int(m[4]), int(m[2]))
            for m in _PTXAS_ENTRY.finditer(log) if m[5] is not None]
