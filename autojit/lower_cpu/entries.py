"""Extra entry points compiled from LLVM text (the team's native chunk loop, a kernel's
thread partials), kept in the disk cache where one is installed.

Why: a fresh process whose kernels come from the disk cache links them without LLVM
(``elf_loader``), but its first split call still compiled these entries: importing
``llvmlite.binding`` and running O3 (100-300 ms for a reduction's partials). Their object
code is keyed by what makes the module text (and, in the store, the machine and
toolchain), so a later process links it like a cached kernel, without rendering it. A
store that declines or fails only costs the compile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from autojit.lower_cpu.elf_loader import ObjectLoadError, load_functions

log = logging.getLogger("autojit")


class EntryStore(Protocol):
    """Object code by key; ``autojit.cache.disk_cache`` installs the disk's."""

    def load(self, key: str) -> bytes | None: ...
    def save(self, key: str, object_code: bytes) -> None: ...


#: where compiled entries are kept between processes (None: nowhere)
STORE: EntryStore | None = None

#: addresses already linked in this process, by key and symbols: kernels that share machine
#: code (``jit.compile_kernel`` reuses an identical kernel's) share its symbol, so their
#: partials' module is the same text, whose symbols the JIT must not be given twice
_LINKED: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}
_LINKED_LOCK = threading.Lock()


def link_entries(key: str, symbols: tuple[str, ...], render: Callable[[], str]) -> tuple[int, ...]:
    """Return the address of each of ``symbols`` defined by the LLVM module ``render()``
    returns: linked from the store's object code under ``key`` when it has some (nothing
    rendered then: rendering imports LLVM's bindings), else compiled and stored. ``key``
    must name the module text exactly (the text itself, or what it is made from).
    Raises ``CompileError`` when LLVM rejects the text or a symbol is missing."""
    with _LINKED_LOCK:
        found = _LINKED.get((key, symbols))
        if found is None:
            found = _LINKED[key, symbols] = _link(key, symbols, render)
    return found


def _link(key: str, symbols: tuple[str, ...], render: Callable[[], str]) -> tuple[int, ...]:
    store = STORE
    if store is not None:
        cached = store.load(key)
        if cached is not None:
            try:
                return load_functions(cached, symbols)
            except ObjectLoadError as exc:   # another platform, say: compile instead
                log.debug("autojit: cached entries %s not linked: %s", symbols[0], exc)
    from autojit.lower_cpu.jit import compile_entries
    addresses, object_code = compile_entries(render(), symbols)
    if store is not None:
        store.save(key, object_code)
    return addresses
