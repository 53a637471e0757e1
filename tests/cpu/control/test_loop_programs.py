"""Loop programs people write (``tests/support/loop_programs.py``: issue 15's seven and more)
agree with NumPy through the oracle: one compiled function called at two sizes and several
trip counts, then the first call again (results, types, dtypes, shapes, the arguments after
the call). Programs named in ``EXPECTED_TO_COMPILE`` must also never run as Python and
compile once across all those calls (the table is in ``tests/support/loop_programs.py``,
filled in as they start compiling).
"""

from __future__ import annotations

import warnings

import pytest

from tests.support.loop_programs import EXPECTED_TO_COMPILE, LOOP_PROGRAMS, LoopCase, calls
from tests.support.oracle import assert_calls_match_numpy


def test_expected_names_exist() -> None:
    assert {case.name for case in LOOP_PROGRAMS} >= EXPECTED_TO_COMPILE


def test_corpus_has_issue_programs() -> None:
    names = {case.name for case in LOOP_PROGRAMS}
    assert {"heat", "lower_solve", "trace_tanh", "distances", "relax", "step",
            "lu_inplace"} <= names
    assert len(names) == len(LOOP_PROGRAMS) >= 27


@pytest.mark.parametrize("case", LOOP_PROGRAMS, ids=lambda case: case.name)
def test_loop_program_matches_numpy(case: LoopCase) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted = assert_calls_match_numpy(case.fn, calls(case), rtol=case.rtol,
                                          atol=case.atol)
    stats = jitted.stats()
    if case.name in EXPECTED_TO_COMPILE:
        assert stats["routes"]["python"] == 0, f"fell back: {stats['fallbacks']}"
        assert stats["compiles"] == 1, (f"{stats['compiles']} compiles; recompiles: "
                                        f"{stats['recompiles']}")
