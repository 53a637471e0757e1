"""Files of the disk cache: a checksummed envelope, atomic writes, listing and LRU eviction.

Layout under ``AUTOJIT_CACHE_DIR``::

    v1/<key[:2]>/<key>.<variant>.plan          the traced and fused Plan
    v1/<key[:2]>/<key>.<variant>.cpu-<tag>     CPU object code, IR texts and assembly
    v1/<key[:2]>/<key>.<variant>.gpu-<tag>     cubins and PTX
    v1/<key[:2]>/<key>.entries.cpu-<tag>       object code of extra entry points (the
                                               thread team's loop, thread partials)

Every file is one envelope: a fixed prefix (magic, format version, header and payload
lengths, BLAKE2b-256 of header + payload), a JSON header (what the entry is, for ``autojit
cache ls``) and a pickled payload. A file is written to a temporary name in the same folder
and renamed over the final one, so a reader sees a whole old file or a whole new one; a torn
or damaged file (a crash, a full disk, a stray edit) fails the length or checksum test and is
ignored. The cache folder is private to the user (mode 0700): loading a pickle runs code, so
the cache must be as trusted as the user's own files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

FORMAT = 1
LAYOUT = "v1"
_MAGIC = b"AUTOJIT\x00"
_PREFIX = struct.Struct("<8sIIQ32s")
_STALE_TEMP_SECONDS = 3600.0
_LOW_WATER = 0.9     # eviction frees down to this fraction of the bound, not just under it


class CorruptEntry(Exception):
    """A cache file that is not a whole, current-format envelope; the message says why."""


def layout_root(cache_dir: str) -> str:
    """Return the folder holding this format's entries."""
    return os.path.join(cache_dir, LAYOUT)


def write_entry(path: str, header: dict[str, Any], payload: bytes) -> int:
    """Write one envelope atomically (temporary file, then rename); return its size.

    Raises OSError when the folder cannot be created or written."""
    head = json.dumps(header, sort_keys=True).encode()
    digest = hashlib.blake2b(head, digest_size=32)
    digest.update(payload)
    prefix = _PREFIX.pack(_MAGIC, FORMAT, len(head), len(payload), digest.digest())
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(prefix)
            handle.write(head)
            handle.write(payload)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return _PREFIX.size + len(head) + len(payload)


def read_entry(path: str) -> tuple[dict[str, Any], bytes]:
    """Return (header, payload) of a verified envelope.

    Raises FileNotFoundError when there is none, CorruptEntry when it fails a check."""
    with open(path, "rb") as handle:
        data = handle.read()
    if len(data) < _PREFIX.size:
        raise CorruptEntry(f"truncated ({len(data)} bytes)")
    magic, version, head_size, payload_size, digest = _PREFIX.unpack_from(data)
    if magic != _MAGIC:
        raise CorruptEntry("not an autojit cache file")
    if version != FORMAT:
        raise CorruptEntry(f"written in cache format {version}; this autojit reads {FORMAT}")
    body = memoryview(data)[_PREFIX.size:]
    if len(body) != head_size + payload_size:
        raise CorruptEntry(f"truncated ({len(body)} of {head_size + payload_size} bytes)")
    if hashlib.blake2b(body, digest_size=32).digest() != digest:
        raise CorruptEntry("checksum mismatch")
    try:
        header = json.loads(bytes(body[:head_size]))
    except ValueError as exc:
        raise CorruptEntry(f"unreadable header ({exc})") from None
    return header, bytes(body[head_size:])


def read_header(path: str) -> dict[str, Any] | None:
    """Return an envelope's header without verifying the payload (for listings), or None."""
    try:
        with open(path, "rb") as handle:
            prefix = handle.read(_PREFIX.size)
            magic, version, head_size, _, _ = _PREFIX.unpack(prefix)
            if magic != _MAGIC or version != FORMAT:
                return None
            return json.loads(handle.read(head_size))
    except (OSError, struct.error, ValueError):
        return None


def touch(path: str) -> None:
    """Mark an entry as just used (its mtime is the LRU clock); a vanished file is fine."""
    with contextlib.suppress(OSError):
        os.utime(path)


@dataclass
class Group:
    """One compiled version on disk: its plan file and code files, as eviction sees it."""

    key: str
    variant: str
    files: list[tuple[str, int, float]] = field(default_factory=list)  # path, bytes, mtime

    @property
    def size(self) -> int:
        return sum(size for _, size, _ in self.files)

    @property
    def last_used(self) -> float:
        return max((mtime for _, _, mtime in self.files), default=0.0)


def _entry_files(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Yield (path, stat) of every entry file; remove temporaries older than an hour."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(root) as shards:
        for shard in shards:
            if not shard.is_dir():
                continue
            with contextlib.suppress(OSError), os.scandir(shard.path) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        info = entry.stat()
                        if entry.name.endswith(".tmp"):
                            if now - info.st_mtime > _STALE_TEMP_SECONDS:
                                os.unlink(entry.path)
                            continue
                        yield entry.path, info


def scan_groups(root: str) -> list[Group]:
    """Return every compiled version under ``root``, least recently used first."""
    groups: dict[tuple[str, str], Group] = {}
    for path, info in _entry_files(root):
        parts = os.path.basename(path).split(".")
        if len(parts) != 3:
            continue                # not ours: "<key>.<variant>.<kind>"
        key, variant, _ = parts
        group = groups.setdefault((key, variant), Group(key, variant))
        group.files.append((path, info.st_size, info.st_mtime))
    return sorted(groups.values(), key=lambda g: g.last_used)


def remove_group(group: Group) -> int:
    """Delete a compiled version's files, plan first (so no reader pairs it with nothing);
    return the bytes freed."""
    freed = 0
    for path, size, _ in sorted(group.files, key=lambda f: not f[0].endswith(".plan")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            freed += size
    for path, _, _ in group.files[:1]:
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(path))   # only succeeds once the shard is empty
    return freed


@contextlib.contextmanager
def exclusive(root: str) -> Iterator[bool]:
    """Hold the cache's eviction lock if no other process does; yield whether we got it."""
    try:
        import fcntl
    except ImportError:        # not POSIX: evict without a lock (every step tolerates races)
        yield True
        return
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        handle = open(os.path.join(root, ".lock"), "a+b")  # noqa: SIM115 (held across yield)
    except OSError:
        yield False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def evict(root: str, max_bytes: int) -> int:
    """Delete least recently used versions until the cache is under ``_LOW_WATER`` of
    ``max_bytes``; return the bytes freed (0 when under the bound or another process is
    already evicting)."""
    groups = scan_groups(root)
    total = sum(g.size for g in groups)
    if total <= max_bytes:
        return 0
    freed = 0
    with exclusive(root) as owner:
        if not owner:
            return 0
        for group in groups:
            if total - freed <= max_bytes * _LOW_WATER:
                break
            freed += remove_group(group)
    return freed
