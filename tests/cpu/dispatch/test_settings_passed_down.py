"""Settings are resolved once per call, in the dispatcher, and passed down: the router,
the device, the CPU target (thread split) and the disk store of extra entry points use the
call's settings, decorator options included; nothing below the dispatcher reads them."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

import autojit
from autojit import autoroute
from autojit.cache import disk_cache, disk_files
from autojit.config import current_settings
from autojit.runtime.targets import cpu_target

ROOT = Path(__file__).resolve().parents[3]
#: modules below the dispatcher still reading settings themselves, and why
STILL_READING = {"autojit/runtime/output_pool.py": "its bound; rewritten for NEP 49"}


def test_nothing_below_the_dispatcher_reads_settings() -> None:
    readers = []
    for package in ("routing", "runtime", "cache", "observe"):
        for path in sorted((ROOT / "autojit" / package).glob("*.py")):
            name = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.Name, ast.Attribute)):
                    text = ast.unparse(node)
                    if (text.split(".")[-1] in ("current_settings", "environ", "getenv")
                            and name not in STILL_READING):
                        readers.append(f"{name}:{node.lineno} reads {text}")
    assert readers == []


def test_the_cpu_target_is_the_settings_thread_split() -> None:
    with autojit.config(num_threads=3, thread_min_work=123, thread_spin_us=50.0):
        target = cpu_target(current_settings())
    assert tuple(target.threads) == (3, 123, 50.0 * 1e-6)
    assert cpu_target(current_settings()).threads.count == current_settings().num_threads
    assert cpu_target(current_settings()) is cpu_target(current_settings())


def _entry_groups(cache: Path) -> list:
    root = disk_files.layout_root(str(cache))
    return [g for g in disk_files.scan_groups(root) if g.variant == disk_cache.EntryFiles.kind]


@pytest.mark.parametrize("where", ["config", "decorator"])
def test_a_split_call_stores_its_entries_under_the_calls_cache(tmp_path: Path,
                                                               where: str) -> None:
    """The thread partials a split reduction links go to the cache folder of the call's
    settings: ``config(cache_dir=...)`` and the decorator's ``cache_dir=`` alike."""
    cache = tmp_path / "cache"
    scale = float(np.random.default_rng().integers(2, 1 << 30))   # a kernel of its own
    options = {"cache_dir": str(cache), "num_threads": 2, "thread_min_work": 0}
    x = np.linspace(0.0, 1.0, 1 << 16)
    if where == "config":
        f = autoroute(lambda a: (a * scale).sum(), force="cpu")
        with autojit.config(**options):
            assert_matches_numpy(f, x)
    else:
        f = autoroute(lambda a: (a * scale).sum(), force="cpu", **options)
        assert_matches_numpy(f, x)
    assert _entry_groups(cache), "no entry points stored under the call's cache folder"


def test_a_split_call_without_a_disk_cache_stores_no_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    scale = float(np.random.default_rng().integers(2, 1 << 30))
    f = autoroute(lambda a: (a * scale).sum(), force="cpu", cache_dir=str(cache),
                  cache_max_mb=0, num_threads=2, thread_min_work=0)
    assert_matches_numpy(f, np.linspace(0.0, 1.0, 1 << 16))
    assert not cache.exists() or not _entry_groups(cache)
