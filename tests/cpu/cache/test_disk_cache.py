"""The persistent compile cache: fresh processes start warm; edits, corruption, races and the
size bound are handled. Every test uses its own ``tmp_path`` cache folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import autojit
from autojit import autoroute
from autojit.cache import disk_cache, disk_files
from autojit.errors import CacheWarning
from autojit.explain.cli import main

#: Runs ``model.f`` in a fresh process and prints what happened as JSON. With ``--hit`` the
#: trace is made to fail: a disk hit must not trace (nor compile: ``stats()["compiles"]``).
#: With ``--llvm`` the fast object loader declines, so LLVM's linker loads the cached code.
DRIVER = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    import autojit.dispatch.dispatcher as dispatcher
    from autojit.lower_cpu import elf_loader
    if "--hit" in sys.argv:
        def refuse(*args, **kwargs):
            raise AssertionError("traced on a disk hit")
        dispatcher.trace_function = refuse
    if "--llvm" in sys.argv:
        def decline(data, symbol):
            raise elf_loader.ObjectLoadError("declined for the test")
        elf_loader.load_function = decline
    import model
    x = np.linspace(0.0, 1.0, 1000)
    started = time.perf_counter()
    y = model.f(x)
    ms = 1e3 * (time.perf_counter() - started)
    binding = "llvmlite.binding" in sys.modules
    seen = model.f.inspect(x)
    print(json.dumps({"sum": float(np.sum(y)), "stats": model.f.stats(), "ms": ms,
                      "binding": binding, "graph": seen.graph_text,
                      "ir": "define" in seen.llvm_ir_optimized and "define" in seen.llvm_ir,
                      "asm": len(seen.asm.splitlines())}, default=str))
''')

HELPERS = textwrap.dedent('''
    OFFSET = 1.0


    def scale(x):
        return x * 2.0


    def unused(x):
        return x - 1.0
''')

MODEL = textwrap.dedent('''
    import numpy as np

    import helpers
    from autojit import autoroute
    from helpers import scale


    @autoroute
    def f(x):
        return np.sin(scale(x)) + helpers.OFFSET
''')


def _environment(cache: Path, folder: Path) -> dict[str, str]:
    # the checkout under test after the project folder (not whichever autojit is installed)
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, AUTOJIT_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(folder), str(root)]))
    env.pop("AUTOJIT_FORCE", None)
    return env


def _run(folder: Path, cache: Path, *flags: str) -> dict:
    """Run the driver in a fresh interpreter; return its report."""
    done = subprocess.run([sys.executable, str(folder / "driver.py"), *flags], cwd=folder,
                          env=_environment(cache, folder), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _project(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in (("driver.py", DRIVER), ("helpers.py", HELPERS), ("model.py", MODEL)):
        (folder / name).write_text(text)
    return folder, tmp_path / "cache"


def _expected(factor: float = 2.0, offset: float = 1.0) -> float:
    return float(np.sum(np.sin(np.linspace(0.0, 1.0, 1000) * factor) + offset))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_fresh_process_starts_warm_and_edits_miss_exactly_when_they_matter(tmp_path):
    folder, cache = _project(tmp_path)
    cold = _run(folder, cache)
    assert cold["stats"]["disk_misses"] == 1 and cold["stats"]["compiles"] == 1
    warm = _run(folder, cache, "--hit")      # no trace, no compile, no LLVM
    assert warm["sum"] == pytest.approx(_expected(), rel=1e-12)
    assert (warm["stats"]["disk_hits"], warm["stats"]["compiles"]) == (1, 0)
    assert warm["ir"] and warm["asm"] > 10, "inspect shows the cached code's IR and assembly"
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        assert not warm["binding"], "a disk hit must not import llvmlite.binding"
    linked = _run(folder, cache, "--hit", "--llvm")   # the fallback: LLVM links the object
    assert linked["sum"] == warm["sum"] and linked["binding"]
    assert (linked["stats"]["disk_hits"], linked["stats"]["compiles"]) == (1, 0)

    _edit(folder / "helpers.py", "return x - 1.0", "return x - 3.0")        # unrelated
    _edit(folder / "model.py", "import numpy as np", "# a comment\n\nimport numpy as np")
    moved = _run(folder, cache, "--hit")
    assert moved["stats"]["disk_hits"] == 1
    assert "model.py:13" in moved["graph"], "locations follow the code after an edit above"

    _edit(folder / "helpers.py", "return x * 2.0", "return x * 3.0")        # called helper
    helper = _run(folder, cache)
    assert helper["stats"]["disk_misses"] == 1
    assert helper["sum"] == pytest.approx(_expected(3.0), rel=1e-12)

    _edit(folder / "helpers.py", "OFFSET = 1.0", "OFFSET = 5.0")            # global constant
    constant = _run(folder, cache)
    assert constant["stats"]["disk_misses"] == 1
    assert constant["sum"] == pytest.approx(_expected(3.0, 5.0), rel=1e-12)


def test_four_processes_on_an_empty_cache_agree_and_leave_it_consistent(tmp_path):
    folder, cache = _project(tmp_path)
    barrier = tmp_path / "go"
    (folder / "racer.py").write_text(textwrap.dedent(f'''
        import os, pathlib, runpy, sys, time
        import model  # imported before the barrier: the four first calls start together
        pathlib.Path(r"{tmp_path}", "ready-" + sys.argv[1]).touch()
        while not os.path.exists(r"{barrier}"):
            time.sleep(0.001)
        sys.argv = [sys.argv[0]]
        runpy.run_path("driver.py", run_name="__main__")
    '''))
    racers = [subprocess.Popen([sys.executable, "racer.py", str(i)], cwd=folder,
                               env=_environment(cache, folder), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for i in range(4)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    barrier.touch()
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        report = json.loads(out.splitlines()[-1])
        assert report["sum"] == pytest.approx(_expected(), rel=1e-12)
    _assert_consistent(cache)
    after = _run(folder, cache, "--hit")
    assert (after["stats"]["disk_hits"], after["stats"]["compiles"]) == (1, 0)


def _assert_consistent(cache: Path) -> None:
    """Every entry verifies, and each version's code was compiled from its plan (thread
    entries, ``<key>.entries.cpu-<tag>``, have no plan: their key names their text)."""
    groups = disk_files.scan_groups(disk_files.layout_root(str(cache)))
    assert groups and not list(cache.rglob("*.tmp"))
    for group in groups:
        headers = {Path(p).name.split(".")[2]: disk_files.read_entry(p)[0]
                   for p, _, _ in group.files}
        if group.variant == disk_cache.EntryFiles.kind:
            assert all(kind.startswith("cpu-") for kind in headers)
            continue
        assert "plan" in headers
        assert {h["plan_id"] for h in headers.values()} == {headers["plan"]["plan_id"]}


# -- in-process: fresh dispatchers of the same code see the disk, not the memory cache ------
@pytest.fixture
def cache_dir(tmp_path):
    with autojit.config(cache_dir=str(tmp_path / "cache")):
        yield tmp_path / "cache"


def _fresh(fn, *args):
    """Return (result, stats) of a new dispatcher for ``fn`` called once on ``args``."""
    dispatcher = autoroute(fn)
    return dispatcher(*args), dispatcher.stats()


def test_lambdas_and_notebook_cells_are_keyed_by_code_not_path(cache_dir):
    x = np.arange(5.0)
    # two lambdas on two lines, same columns (columns are source locations, so hashed)
    first = _fresh(lambda a: a * 3.0 + 1.0, x)
    again = _fresh(lambda a: a * 3.0 + 1.0, x)
    assert first[1]["disk_misses"] == 1 and again[1]["disk_hits"] == 1
    np.testing.assert_array_equal(again[0], x * 3.0 + 1.0)
    cell = "import numpy as np\ndef g(a):\n    return np.sqrt(a) - 2.0\n"
    stats = []
    for number in (3, 17):    # the same cell run in two sessions has two file names
        namespace: dict = {}
        exec(compile(cell, f"<ipython-input-{number}-0>", "exec"), namespace)
        result, counters = _fresh(namespace["g"], x)
        np.testing.assert_array_equal(result, np.sqrt(x) - 2.0)
        stats.append((counters["disk_hits"], counters["disk_misses"]))
    assert stats == [(0, 1), (1, 0)]


def test_a_changed_closure_value_misses(cache_dir):
    def make(k):
        return lambda a: a * k

    x = np.arange(4.0)
    results = [_fresh(make(k), x) for k in (2.0, 5.0, 2.0)]
    assert [r[1]["disk_hits"] for r in results] == [0, 0, 1]
    for (result, _), k in zip(results, (2.0, 5.0, 2.0)):
        np.testing.assert_array_equal(result, x * k)


def _corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif how == "other-format":
        path.write_bytes(data[:8] + (99).to_bytes(4, "little") + data[12:])
    else:
        path.write_bytes(b"garbage")


@pytest.mark.parametrize("kind", ["plan", "cpu"])
@pytest.mark.parametrize("how", ["truncated", "flipped", "other-format", "garbage"])
def test_a_corrupt_entry_recompiles_with_one_warning(cache_dir, kind, how):
    def h(a):
        return np.sqrt(a) * 0.5 - a

    x = np.linspace(0.0, 2.0, 33)
    _fresh(h, x)
    (target,) = [p for p in cache_dir.rglob("*.*.*") if p.name.split(".")[2].startswith(kind)]
    _corrupt(target, how)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, stats = _fresh(h, x)
    np.testing.assert_array_equal(result, np.sqrt(x) * 0.5 - x)
    assert [type(w.message) for w in caught] == [CacheWarning], [str(w.message) for w in caught]
    assert str(target) in str(caught[0].message)
    assert stats["compiles"] == (1 if kind == "cpu" else 0)   # a good .cpu file is reused
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        again = _fresh(h, x)[1]       # rewritten: a clean hit
    assert (again["disk_hits"], again["compiles"]) == (1, 0)


def test_guarded_variants_are_stored_side_by_side(cache_dir):
    def by_size(a):
        return a * a.shape[0]

    for n in (3, 4):
        _fresh(by_size, np.ones(n))
    for n in (4, 3):
        result, stats = _fresh(by_size, np.ones(n))
        np.testing.assert_array_equal(result, np.ones(n) * n)
        assert (stats["disk_hits"], stats["compiles"]) == (1, 0)


class _Opaque:
    factor = 2.0


OPAQUE = _Opaque()


def test_a_global_without_a_faithful_digest_is_not_cached(cache_dir):
    def reads_object(a):
        return a * OPAQUE.factor

    result, stats = _fresh(reads_object, np.ones(3))
    np.testing.assert_array_equal(result, np.ones(3) * 2.0)
    assert (stats["disk_hits"], stats["disk_misses"]) == (0, 0)
    assert not cache_dir.exists()


def test_the_size_bound_evicts_least_recently_used_versions(tmp_path):
    cache = tmp_path / "cache"
    bound_mb = 0.06
    with autojit.config(cache_dir=str(cache), cache_max_mb=bound_mb):
        for offset in range(8):
            _fresh(eval(f"lambda a: (a + {offset}.0) * 3.0"), np.ones(4))
            disk_cache.wait_for_eviction()   # it runs on a background thread
            time.sleep(0.01)          # distinct modification times: a clear LRU order
        used = sum(g.size for g in disk_files.scan_groups(str(cache / "v1")))
        assert 0 < used <= bound_mb * 2**20
        assert _fresh(eval("lambda a: (a + 7.0) * 3.0"), np.ones(4))[1]["disk_hits"] == 1
        assert _fresh(eval("lambda a: (a + 0.0) * 3.0"), np.ones(4))[1]["disk_hits"] == 0


def test_an_unwritable_cache_warns_once_and_still_computes(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    disk_cache._UNWRITABLE.discard(str(blocker / "cache" / "v1"))
    with autojit.config(cache_dir=str(blocker / "cache")), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for scale in (2.0, 3.0):
            result, _ = _fresh(lambda a, s=scale: a * s, np.ones(3))
            np.testing.assert_array_equal(result, np.ones(3) * scale)
    assert [type(w.message) for w in caught] == [CacheWarning]


def test_gpu_binaries_round_trip_without_a_device(tmp_path, monkeypatch):
    from autojit.lower_gpu.compile import CudaBinary

    monkeypatch.setattr(disk_cache, "target_tag", lambda target: f"{target}-test")
    slot = disk_cache.DiskSlot(str(tmp_path / "v1"), "ab" * 20, "f", (), 1 << 20,
                               "base", "plan-1")
    binaries = [CudaBinary(b"\x7fELF cubin", ".version 9.0", "", "sm_90")]
    disk_cache.store_programs(slot, "gpu", binaries)
    assert disk_cache.load_programs(slot, "gpu") == binaries
    other = disk_cache.DiskSlot(**{**slot.__dict__, "plan_id": "plan-2"})
    assert disk_cache.load_programs(other, "gpu") is None   # another plan's code: a miss


def test_the_fast_loader_declines_what_it_does_not_know():
    from autojit.lower_cpu import elf_loader

    for blob in (b"not an object", b"\x7fELF" + bytes(60)):
        with pytest.raises(elf_loader.ObjectLoadError):
            elf_loader.load_function(blob, "f")


def test_cache_command_lists_summarises_and_clears(cache_dir, capsys):
    def listed(a):
        return a - 4.0

    _fresh(listed, np.ones(2))
    assert main(["cache", "ls", "--cache-dir", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert "listed" in out and "cpu,plan" in out
    assert main(["cache", "stats", "--cache-dir", str(cache_dir)]) == 0
    assert "versions: 1 (files: 1 cpu, 1 plan)" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(cache_dir)]) == 0
    assert "removed 1 compiled version(s)" in capsys.readouterr().out
    assert disk_files.scan_groups(str(cache_dir / "v1")) == []


def test_corpus_kernels_linked_from_the_cache_compute_the_same_bits(cache_dir, monkeypatch):
    from tests.support.corpus import all_cases

    from autojit.lower_cpu import engine

    families = ("-float64-", "-float32-", "-int32-", "-uint8-", "-bool-")
    cases = [c for c in all_cases() if c.id.endswith(("-contiguous", "float64-all_pairs"))
             and any(f in c.id for f in families)]
    compiled = [_fresh(case.fn, *case.args)[0] for case in cases]
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        def refuse(*args):
            raise AssertionError("the fast loader declined a kernel")
        monkeypatch.setattr(engine, "load_object", refuse)
    for case, expected in zip(cases, compiled):
        result, stats = _fresh(case.fn, *case.args)
        assert (stats["disk_hits"], stats["compiles"]) == (1, 0), case.id
        for got, want in zip(result, expected):
            np.testing.assert_array_equal(got, want, err_msg=case.id)


def test_cached_code_resolves_libm_as_the_jit_does_even_beside_numba(cache_dir):
    import numba  # in the test extra: its absence is a failure, not a skip
    numba.njit(lambda v: np.log(v).sum())(np.ones(2))  # installs Numba's log, log1p, ... in LLVM

    def logs(a):
        return np.log(a) + np.log1p(a) * np.expm1(a)

    x = np.linspace(-3.0, 3.0, 130)[::-2]          # strided: scalar libm calls, not libmvec
    with np.errstate(all="ignore"):
        fresh = _fresh(logs, x)[0]
        cached, stats = _fresh(logs, x)
    assert (stats["disk_hits"], stats["compiles"]) == (1, 0)
    assert fresh.tobytes() == cached.tobytes()     # NaN signs included


#: A full reduction split across threads: its partials and the team's loop are extra
#: entries; prints the result, the splits and whether llvmlite.binding was imported.
THREADED = textwrap.dedent('''
    import json, sys
    import numpy as np
    import autojit
    from autojit.lower_cpu import threads
    f = autojit.autoroute(lambda a: np.mean(np.sin(a) ** 2))
    x = np.linspace(0.0, 3.0, 300_001)
    with autojit.config(num_threads=2, thread_min_work=0):
        y = float(f(x))
    print(json.dumps({"y": y, "splits": dict(threads.SPLITS), "stats": f.stats(),
                      "binding": "llvmlite.binding" in sys.modules}, default=str))
''')


def test_thread_entries_link_from_disk_in_a_fresh_process(tmp_path):
    """The thread partials and the team's native loop are stored with the kernels: a
    second process splits the same call without compiling anything (nor, on x86-64 Linux,
    importing LLVM) and gets the same bits; ``cache ls`` lists the entries."""
    folder, cache = _project(tmp_path)
    (folder / "threaded.py").write_text(THREADED)

    def run() -> dict:
        done = subprocess.run([sys.executable, str(folder / "threaded.py")], cwd=folder,
                              env=_environment(cache, folder), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert cold["splits"].get("partials") and warm["splits"].get("partials")
    assert warm["y"] == cold["y"]
    assert warm["stats"]["disk_hits"] == 1 and warm["stats"]["compiles"] == 0
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        assert not warm["binding"], "linking cached entries must not import llvmlite.binding"
    rows = disk_cache.list_entries(str(cache))
    assert sum(row["function"] == "native entries" for row in rows) == 2   # team, partials
