"""Every listed op × dtype family × layout, compiled with LLVM, against NumPy."""

import pytest

from tests.support.corpus import all_cases
from tests.support.oracle import assert_matches_numpy

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_numpy(case):
    assert_matches_numpy(case.fn, *case.args, ulps=case.ulps, labels=case.labels)
