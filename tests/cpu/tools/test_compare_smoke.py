"""benchmarks/compare.py: its workloads agree with NumPy under autojit (small inputs).

Only NumPy and autojit always run; numexpr runs where installed (the ``bench`` extra) and
is skipped otherwise. JAX (seconds to import), Numba and torch.compile (tens of seconds to
compile) are left to ``python benchmarks/compare.py`` itself, to keep this test fast.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCALE = 1e-3


def _compare() -> ModuleType:
    """Load benchmarks/compare.py by path (benchmarks/ is not a package)."""
    name = "autojit_bench_compare"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "compare.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_every_workload_agrees_with_numpy_under_autojit() -> None:
    compare = _compare()
    table = compare.run(peers=["numpy", "autojit"], repeat=1, scale=SCALE, settle_s=0.0)
    assert set(table) == {w.name for w in compare.WORKLOADS}
    for name, row in table.items():
        for peer, cell in row.items():
            assert cell.status == "ok", (name, peer, cell.error)
            assert cell.median_s is not None and cell.median_s > 0
    text = compare.format_table(table, 1, SCALE)
    assert "autojit" in text and "command:" in text and "machine:" in text
    assert "FAILED" not in text


@pytest.mark.parametrize("peer", ["numexpr"])
def test_installed_peer_agrees_with_numpy(peer: str) -> None:
    pytest.importorskip(peer)
    compare = _compare()
    table = compare.run(peers=[peer], repeat=1, scale=SCALE, settle_s=0.0)
    for name, row in table.items():
        assert row[peer].status in ("ok", "n/a"), (name, row[peer].error)
    assert any(row[peer].status == "ok" for row in table.values())


def test_a_wrong_result_is_a_failure_not_a_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    compare = _compare()
    work = compare.WORKLOADS[0]
    (x,) = work.make_inputs(SCALE)
    want = work.reference(x)
    assert compare.check(work, want, want) is None
    assert "max abs difference" in compare.check(work, want * 1.001, want)
    assert compare.check(work, want.astype("float32"), want).startswith("got float32")
    wrong = compare.Impl(lambda x: x)
    monkeypatch.setitem(compare.BUILDERS, "numpy", lambda w: wrong)
    cell = compare.measure(work, "numpy", (x,), want, repeat=3)
    assert cell.status == "failed" and cell.median_s is None and "differs" in cell.error
