"""CPU lowering: render a Kernel to LLVM IR, optimise it at O3, JIT-compile and call it.

The names below are imported on first use (PEP 562), so that loading cached object code
(``autojit.lower_cpu.program``) does not pull in llvmlite.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CpuProgram": "autojit.lower_cpu.program",
    "load_program": "autojit.lower_cpu.program",
    "compile_kernel": "autojit.lower_cpu.jit",
    "llvm_rule_gaps": "autojit.lower_cpu.render",
    "render_llvm": "autojit.lower_cpu.render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Return an exported name, importing its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
