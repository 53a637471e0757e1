"""benchmarks/compare.py's loops section and benchmarks/loop_corpus.py run and agree with NumPy.

Tiny sizes, NumPy and autojit only (Numba and JAX compile for seconds each: they are left to
the scripts themselves). No speed is asserted: only that every cell was checked against
NumPy and timed, and that an autojit cell says how it ran (compiled, or python and why).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _load(file: str, name: str) -> ModuleType:
    """Load a benchmarks/ script by path (benchmarks/ is not a package)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_loops_section_agrees_with_numpy_and_says_how_autojit_ran() -> None:
    compare = _load("compare.py", "autojit_bench_compare")
    table = compare.run(peers=["numpy", "autojit"], repeat=1, scale=0.02, settle_s=0.0,
                        section="loops")
    assert set(table) == {w.name for w in compare.SECTIONS["loops"].workloads}
    for name, row in table.items():
        assert list(row) == ["numpy", "autojit"]
        for peer, cell in row.items():
            assert cell.status == "ok", (name, peer, cell.error)
            assert cell.median_s is not None and cell.median_s > 0
        note = row["autojit"].note
        assert note and (note.startswith("compiled") or note.startswith("python: ")), note
    assert table["scalar_update"]["numpy"].iterations == 2000
    text = compare.format_table(table, 1, 0.02, "loops")
    assert "autojit ran heat:" in text and "ns/iter" in text and "FAILED" not in text


def test_loops_section_peer_aliases_expand_in_place() -> None:
    compare = _load("compare.py", "autojit_bench_compare")
    loops = compare.SECTIONS["loops"]
    assert compare.section_peers(loops, ["numpy", "numba", "autojit"]) == [
        "numpy", "numba-array", "numba-loops", "autojit"]
    assert compare.section_peers(loops, ["numexpr", "numpy"]) == ["numpy"]
    assert compare.section_peers(compare.SECTIONS["arrays"], None) == list(compare.PEERS)


def test_in_place_programs_get_fresh_copies_for_every_call() -> None:
    loops = _load("compare.py", "autojit_bench_compare").load_loops()
    work = loops.LOOPS_BY_NAME["lu"]
    (a,) = work.make_inputs(0.02)
    before = a.copy()
    first, second = work.reference(a), work.reference(a)
    assert (a == before).all() and (first == second).all() and first is not a


def test_loop_corpus_quick_agrees_with_numpy() -> None:
    corpus = _load("loop_corpus.py", "autojit_bench_loop_corpus")
    assert len(corpus.PROGRAMS) >= 25
    rows = corpus.run(quick=True, peers=("numpy", "autojit"), settle_s=0.0)
    assert [r.name for r in rows] == [p.name for p in corpus.PROGRAMS]
    for row in rows:
        assert not row.errors, (row.name, row.errors)
        assert set(row.steady_ms) == {"numpy", "autojit"}, row.name
        assert row.compiled or row.fallback, row.name   # a fallback always says why
    text = corpus.format_rows(rows, "quick", 1)
    assert "compiled (routes['python'] == 0)" in text and "ERROR" not in text
