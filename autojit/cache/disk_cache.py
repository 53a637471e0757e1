"""The persistent compile cache: a fresh process finds its plans and machine code on disk.

The dispatcher asks :func:`open_slot` where a (function, signature) lives before tracing,
:func:`load_plan` for a Plan whose guards hold (a hit skips the trace and the fusion), and
:func:`load_programs` for a target's compiled kernels (a hit skips LLVM or NVRTC). After a
miss it stores what it made with :func:`store_plan` and :func:`store_programs`.

What the key covers and why is in ``cache_key``; the file format, atomic writes and eviction
in ``disk_files``. Failure never propagates: an unreadable folder is a miss, an unwritable
one is a warning (once per folder), a corrupt, truncated or other-format entry is deleted
with one :class:`~autojit.errors.CacheWarning` and rewritten by the compile that follows.

Concurrency: entries are written atomically and named by content (a key, a variant, and a
target tag), and each target's code file names the plan it was compiled from (``plan_id``, a
digest of the kernels). Processes racing on one entry write equal files, and a reader that
pairs a plan with another plan's code sees the mismatch and recompiles: no lock is needed
to stay consistent. Eviction takes a lock only so that two processes do not both evict.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import logging
import os
import pickle
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from autojit.cache import disk_files
from autojit.cache.cache_key import (
    Unkeyable,
    cpu_tag,
    environment_digest,
    function_fingerprint,
    gpu_tag,
    key_digest,
)
from autojit.config import Settings
from autojit.errors import CacheWarning
from autojit.fuse.plan import Plan
from autojit.ir.graph import SourceLoc
from autojit.lower_cpu import entries

_LOGGER = logging.getLogger("autojit")
_UNWRITABLE: set[str] = set()        # roots we already warned about, once per process
_LOCK = threading.Lock()
_WRITTEN: dict[str, int] = {}         # root -> bytes this process wrote since its last scan
_EVICTING: dict[str, threading.Thread] = {}   # root -> its running eviction
_SCAN_EVERY = 4 << 20                 # ... and it rescans after this much (or 5% of the bound)


@dataclass(frozen=True)
class DiskSlot:
    """Where one (function, signature) lives on disk: ``root`` (the layout folder), ``key``,
    the function's name and code ``origins`` (see ``cache_key``), the size bound; once a plan
    is known, its ``variant`` (which guards it holds) and ``plan_id`` (digest of its kernels).
    """

    root: str
    key: str
    function: str
    origins: tuple[tuple[str, int], ...]
    max_bytes: int
    variant: str = ""
    plan_id: str = ""

    def path(self, kind: str, variant: str | None = None) -> str:
        """Return the file of ``kind`` ("plan", "cpu-<tag>", ...) for this slot."""
        name = f"{self.key}.{variant or self.variant}.{kind}"
        return os.path.join(self.root, self.key[:2], name)


def open_slot(fn: Any, name: str, signature: tuple, settings: Settings) -> DiskSlot | None:
    """Return the slot of ``fn`` at ``signature``; None when the disk cache is off
    (``cache_max_mb`` 0) or ``fn`` reads something that cannot be keyed faithfully."""
    if settings.cache_max_mb <= 0 or not settings.cache_dir:
        return None
    try:
        fingerprint = function_fingerprint(fn)
    except Unkeyable as exc:
        _LOGGER.debug("%s is not cached on disk: %s", name, exc)
        return None
    except Exception as exc:  # what it reads raised (a repr, a chain of helpers too deep):
        _LOGGER.debug("%s is not cached on disk: fingerprinting raised %s: %s", name,
                      type(exc).__name__, exc)   # the disk cache is optional, never fatal
        return None
    key = key_digest(fingerprint.digest, repr(tuple(map(tuple, signature))),
                     settings.fusion_max_ops, environment_digest())
    return DiskSlot(disk_files.layout_root(settings.cache_dir), key, name,
                    fingerprint.origins, int(settings.cache_max_mb * 2**20))


# -- reading -------------------------------------------------------------------------------
def _read(path: str, slot: DiskSlot, kind: str) -> tuple[dict, Any] | None:
    """Return (header, unpickled payload) of a valid entry; None when absent or discarded."""
    try:
        header, payload = disk_files.read_entry(path)
        if header.get("key") != slot.key or header.get("kind") != kind:
            raise disk_files.CorruptEntry("its header names another entry")
        return header, pickle.loads(payload)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _LOGGER.debug("cannot read %s: %s", path, exc)
        return None
    except Exception as exc:  # CorruptEntry, or a payload that no longer unpickles
        discard(path, str(exc) if isinstance(exc, disk_files.CorruptEntry)
                else f"unreadable payload ({type(exc).__name__}: {exc})")
        return None


def discard(path: str, reason: str) -> None:
    """Delete a bad entry and warn once about it (the next compile rewrites it)."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    warnings.warn(f"autojit: ignoring disk-cache entry {path}: {reason}; it will be "
                  "recompiled and rewritten", CacheWarning, stacklevel=2)


def _plan_files(slot: DiskSlot) -> list[str]:
    """Return this slot's plan files, most recently used first."""
    folder, prefix = os.path.join(slot.root, slot.key[:2]), slot.key + "."
    try:
        with os.scandir(folder) as entries:
            found = [(e.stat().st_mtime, e.path) for e in entries
                     if e.name.startswith(prefix) and e.name.endswith(".plan")]
    except OSError:
        return []
    return [path for _, path in sorted(found, reverse=True)]


def load_plan(slot: DiskSlot, fits: Callable[[Plan], Mapping[str, int] | None]
              ) -> tuple[Plan, Mapping[str, int], DiskSlot] | None:
    """Return (plan, size values, slot with variant and plan id) of a stored plan that
    ``fits`` the call (its size values, or None when it does not: the caller binds the
    call, ``runtime.binding``); None on a miss."""
    for path in _plan_files(slot):
        found = _read(path, slot, "plan")
        if found is None:
            continue
        header, plan = found
        if not isinstance(plan, Plan):
            discard(path, "its payload is not a plan")
            continue
        sizes = fits(plan)
        if sizes is None:
            continue
        disk_files.touch(path)
        origins = tuple(tuple(o) for o in header.get("origins", ()))
        plan = relocate_plan(plan, origins, slot.origins)
        return plan, sizes, dataclasses.replace(slot, variant=header["variant"],
                                                plan_id=header["plan_id"])
    return None


def target_tag(target: str) -> str | None:
    """Return the file kind of ``target``'s code on this machine (``cpu-<tag>``,
    ``gpu-<tag>``), or None when the machine cannot say (no GPU: nothing to cache)."""
    try:
        if target == "cpu":
            return f"cpu-{cpu_tag()}"
        from autojit.lower_gpu.compile import nvrtc_version
        from autojit.lower_gpu.device import device_arch
        return f"gpu-{gpu_tag(device_arch(), nvrtc_version())}"
    except Exception as exc:  # a broken device or toolkit must not break the call
        _LOGGER.debug("no disk cache for %s code: %s", target, exc)
        return None


def load_programs(slot: DiskSlot, target: str) -> list[Any] | None:
    """Return ``target``'s compiled kernels for the slot's plan, or None on a miss."""
    kind = target_tag(target)
    found = None if kind is None else _read(slot.path(kind), slot, kind)
    if found is None:
        return None
    path = slot.path(kind)
    header, records = found
    if header.get("plan_id") != slot.plan_id:   # another plan's code (a race, or an edit)
        return None
    try:
        programs = _revive(target, records)
    except Exception as exc:  # the loader declined every way to link it
        discard(path, f"its code cannot be loaded ({type(exc).__name__}: {exc})")
        return None
    disk_files.touch(path)
    return programs


def _revive(target: str, records: list[Any]) -> list[Any]:
    """Return live programs from stored records (CPU: linked; GPU: CudaBinary as stored)."""
    if target == "cpu":
        from autojit.lower_cpu.program import load_program
        return [load_program(**record) for record in records]
    from autojit.lower_gpu.compile import CudaBinary
    if not all(isinstance(r, CudaBinary) for r in records):
        raise TypeError("not a list of CudaBinary")
    return list(records)


# -- writing -------------------------------------------------------------------------------
def _dumps(slot: DiskSlot, kind: str, payload: Any) -> bytes | None:
    """Return ``payload`` pickled; None (logged) when something in it does not pickle."""
    try:
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # something in the plan does not pickle: skip, never fail
        _LOGGER.debug("not caching %s %s: %s", slot.function, kind, exc)
        return None


def _write(slot: DiskSlot, path: str, kind: str, payload: Any, **extra: Any) -> None:
    """Store one entry, then evict down to the bound; failures warn (once per folder)."""
    data = _dumps(slot, kind, payload)
    if data is not None:
        _write_data(slot, path, kind, data, **extra)


def _write_data(slot: DiskSlot, path: str, kind: str, data: bytes, **extra: Any) -> None:
    """Store one pickled entry (see ``_write``)."""
    header = {"kind": kind, "key": slot.key, "variant": slot.variant,
              "plan_id": slot.plan_id, "function": slot.function, **extra}
    try:
        written = disk_files.write_entry(path, header, data)
        if _due_for_eviction(slot, written):
            _evict_in_background(slot)
    except OSError as exc:
        with _LOCK:
            if slot.root in _UNWRITABLE:
                return
            _UNWRITABLE.add(slot.root)
        warnings.warn(f"autojit: cannot write the compile cache under {slot.root} ({exc}); "
                      "compiled code is kept in memory only. Set AUTOJIT_CACHE_DIR to a "
                      "writable folder, or AUTOJIT_CACHE_MAX_MB=0 to turn the cache off",
                      CacheWarning, stacklevel=3)


def _evict_in_background(slot: DiskSlot) -> None:
    """Scan and evict on a daemon thread, one per cache folder at a time: scanning stats
    every file (74 ms for a 30 MB cache here), which a first call should not wait for.
    Every step tolerates races and an interrupted eviction (plans are deleted first)."""
    with _LOCK:
        if slot.root in _EVICTING:
            return

        def run() -> None:
            try:
                disk_files.evict(slot.root, slot.max_bytes)
            except OSError as exc:
                _LOGGER.debug("cache eviction under %s failed: %s", slot.root, exc)
            finally:
                with _LOCK:
                    _EVICTING.pop(slot.root, None)

        _EVICTING[slot.root] = thread = threading.Thread(
            target=run, name="autojit-cache-evict", daemon=True)
    thread.start()


def wait_for_eviction() -> None:
    """Wait until background evictions started so far are done (tests, ``cache`` CLI)."""
    with _LOCK:
        running = list(_EVICTING.values())
    for thread in running:
        thread.join()


def _due_for_eviction(slot: DiskSlot, written: int) -> bool:
    """Return True when this process should scan the cache against its bound: on its first
    write, then after writing 5% of the bound (at most 4 MB). Scanning stats every file, so
    doing it on every write would cost more than the write; the bound is therefore soft by
    what processes write between scans."""
    with _LOCK:
        since = _WRITTEN.get(slot.root)
        total = written if since is None else since + written
        due = since is None or total >= min(_SCAN_EVERY, slot.max_bytes // 20)
        _WRITTEN[slot.root] = 0 if due else total
    return due


def store_plan(slot: DiskSlot, plan: Plan) -> DiskSlot:
    """Store ``plan``; return the slot with its variant and plan id (for its programs).
    The id digests the pickled plan, made once for the file: a repr of the kernels cost
    more than the pickle (0.26 s for a 10,000-op program), and equal plans pickle alike."""
    guards, decisions = plan.graph.guards, plan.graph.decisions
    # plans of one signature that took other Python decisions (``if n > 100:``) are
    # variants of their own: named by guards alone, the last one written replaced the other
    kept = (guards, tuple(d[:2] for d in decisions)) if decisions else guards
    variant = key_digest(repr(kept))[:12] if kept else "base"
    data = _dumps(slot, "plan", dataclasses.replace(plan, schedule_cache={}))
    if data is None:
        return dataclasses.replace(slot, variant=variant)
    slot = dataclasses.replace(slot, variant=variant,
                               plan_id=hashlib.blake2b(data, digest_size=12).hexdigest())
    where = plan.graph.loc.full if plan.graph.loc else ""
    _write_data(slot, slot.path("plan"), "plan", data, origins=slot.origins, where=where,
                guards=[list(g) for g in guards])
    return slot


def store_programs(slot: DiskSlot, target: str, programs: Sequence[Any]) -> None:
    """Store ``target``'s compiled kernels for the slot's plan. CPU: object code, the IR
    texts, and the assembly listing when it was already made. A listing is a second code
    generation (~45% of a kernel's compile time), so it is not made just to be stored; on a
    hit without one, ``inspect`` derives it from the cached optimised IR on demand."""
    if target == "cpu":
        if not all(getattr(p, "object_code", b"") for p in programs):
            return
        records: list[Any] = [
            {"name": p.name, "symbol": p.symbol, "object_code": p.object_code,
             "llvm_ir": p.llvm_ir, "llvm_ir_optimized": p.llvm_ir_optimized,
             "asm": p.__dict__.get("asm")} for p in programs]
    else:
        from autojit.lower_gpu.compile import CudaBinary
        if not all(isinstance(p, CudaBinary) for p in programs):
            return
        records = list(programs)
    kind = target_tag(target)
    if kind is not None:
        _write(slot, slot.path(kind), kind, records)


# -- source locations ------------------------------------------------------------------------
def relocate_plan(plan: Plan, stored: tuple[tuple[str, int], ...],
                  current: tuple[tuple[str, int], ...]) -> Plan:
    """Return ``plan`` with source locations moved from where the code was when it was
    traced (``stored`` origins) to where it is now (``current``): an edit above a function,
    or a notebook cell's new file name, must not leave ``inspect`` pointing at old lines."""
    if stored == current or len(stored) != len(current):
        return plan
    moves = list(zip(stored, current))

    def move(loc: SourceLoc | None) -> SourceLoc | None:
        if loc is None:
            return None
        before = [(line, i) for i, ((file, line), _) in enumerate(moves)
                  if file == loc.file and line <= loc.line]
        if not before:
            return loc
        line, index = max(before)
        file, now = moves[index][1]
        return SourceLoc(file, loc.line - line + now, loc.col)

    graph = plan.graph
    nodes = tuple(dataclasses.replace(n, loc=move(n.loc)) for n in graph.nodes)
    graph = dataclasses.replace(graph, nodes=nodes, loc=move(graph.loc), _by_id={})
    return dataclasses.replace(plan, graph=graph, schedule_cache={})


# -- the ``autojit cache`` command -----------------------------------------------------------
class EntryPlace(NamedTuple):
    """Where a call keeps extra entry points: its settings' cache folder and bound."""

    cache_dir: str
    cache_max_mb: float

    @classmethod
    def of(cls, settings: Settings) -> EntryPlace:
        return cls(settings.cache_dir, settings.cache_max_mb)


#: the running call's EntryPlace: set by the CPU target around the split kernel calls that
#: link extra entry points (``runtime.targets.CpuTarget.launch``), from the settings the
#: dispatcher resolved for the call; None (outside such a call): nothing is stored
ENTRY_PLACE: contextvars.ContextVar[EntryPlace | None] = contextvars.ContextVar(
    "autojit_entry_place", default=None)


class EntryFiles:
    """The disk's ``EntryStore`` (``autojit.lower_cpu.entries``): object code of extra entry
    points (the team's chunk loop, thread partials), one group per module text, evicted
    with the rest. Where they go is the running call's (``ENTRY_PLACE``), so
    ``config(cache_max_mb=0)`` and a decorator's ``cache_max_mb=0`` hold."""

    kind = "entries"

    def _slot(self, text: str) -> tuple[DiskSlot, str, str] | None:
        place = ENTRY_PLACE.get()
        if place is None or place.cache_max_mb <= 0 or not place.cache_dir:
            return None
        code_kind = target_tag("cpu")
        if code_kind is None:
            return None
        key = key_digest(self.kind, text, environment_digest())
        slot = DiskSlot(disk_files.layout_root(place.cache_dir), key, "native entries",
                        (), int(place.cache_max_mb * 2**20), variant=self.kind)
        return slot, slot.path(code_kind), code_kind

    def load(self, text: str) -> bytes | None:
        found = self._slot(text)
        read = None if found is None else _read(found[1], found[0], found[2])
        if read is None or not isinstance(read[1], bytes):
            return None
        disk_files.touch(found[1])
        return read[1]

    def save(self, text: str, object_code: bytes) -> None:
        found = self._slot(text)
        if found is not None:
            _write(found[0], found[1], found[2], object_code)


def list_entries(cache_dir: str) -> list[dict[str, Any]]:
    """Return one row per cached compiled version, most recently used first: ``key``,
    ``variant``, ``function``, ``where``, ``kinds`` (plan, cpu, gpu), ``bytes``, ``last_used``
    (seconds since the epoch)."""
    rows = []
    for group in reversed(disk_files.scan_groups(disk_files.layout_root(cache_dir))):
        kinds = sorted(os.path.basename(path).split(".")[2].partition("-")[0]
                       for path, _, _ in group.files)
        plan = next((p for p, _, _ in group.files if p.endswith(".plan")), group.files[0][0])
        header = disk_files.read_header(plan) or {}
        rows.append({"key": group.key, "variant": group.variant,
                     "function": header.get("function", "?"), "where": header.get("where", ""),
                     "kinds": kinds, "bytes": group.size, "last_used": group.last_used})
    return rows


def clear_cache(cache_dir: str) -> tuple[int, int]:
    """Delete every cached version; return (versions, bytes) removed."""
    groups = disk_files.scan_groups(disk_files.layout_root(cache_dir))
    return len(groups), sum(disk_files.remove_group(g) for g in groups)


def cache_summary(cache_dir: str, max_mb: float) -> dict[str, Any]:
    """Return the folder, counts of versions and files per kind, bytes used and the bound."""
    rows = list_entries(cache_dir)
    kinds: dict[str, int] = {}
    for row in rows:
        for kind in row["kinds"]:
            kinds[kind] = kinds.get(kind, 0) + 1
    return {"cache_dir": cache_dir, "versions": len(rows), "files": kinds,
            "bytes": sum(r["bytes"] for r in rows), "max_bytes": int(max_mb * 2**20)}


entries.STORE = EntryFiles()     # thread entries link from disk in later processes
