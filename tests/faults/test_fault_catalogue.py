"""Runs the fault catalogue (catalogue.py): one test per named fault, each asserting its
stated contract. A row with ``xfail`` set is a known autojit bug (strict: fixing it fails
the row until the mark is removed)."""

from __future__ import annotations

import pytest

from tests.faults.catalogue import FAULTS, Fault

KINDS = {"bad input", "cache damage", "signal", "thread", "shutdown", "resource"}


def _param(row: Fault):
    marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(row) for row in FAULTS])
def test_fault(row: Fault) -> None:
    row.check()


def test_catalogue_is_well_formed() -> None:
    """Unique ids, known classes, several rows in each, every row saying what must hold."""
    ids = [row.id for row in FAULTS]
    assert len(ids) == len(set(ids))
    assert {row.kind for row in FAULTS} == KINDS
    assert all(sum(row.kind == kind for row in FAULTS) >= 3 for kind in KINDS)
    assert all(row.done and row.holds and callable(row.check) for row in FAULTS)
