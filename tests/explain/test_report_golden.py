"""Golden ``-m -m`` reports (LLVM and ptxas facts left out: they vary by toolchain).

Regenerate after an intended change with ``AUTOJIT_UPDATE_GOLDEN=1 pytest tests/explain``
and review the diff: each line is one decision of the buffer plan.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.explain.inspect_programs import PROGRAMS

from autojit import autoroute

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_golden(name: str) -> None:
    fn, make_args, _ = PROGRAMS[name]
    text = autoroute(fn).inspect(*make_args()).report(verbosity=2, toolchain=False)
    path = GOLDEN / f"report_{name}.txt"
    if os.environ.get("AUTOJIT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"report of {name} changed; see {path}"


def test_report_m_is_the_decisions_of_m_m() -> None:
    fn, make_args, _ = PROGRAMS["normalise_stack"]
    ins = autoroute(fn).inspect(*make_args())
    short, long = ins.report(1, toolchain=False), ins.report(2, toolchain=False)
    assert all(line in long.splitlines() for line in short.splitlines())
    assert "why:" not in short and "flow:" not in short
    assert "  why: " in long and "  flow: " in long
