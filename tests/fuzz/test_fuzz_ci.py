"""A fixed-seed differential fuzzing budget of at least 2 minutes: 10,500 programs, about
150 s on an idle 2-core machine (scaled from 3000 in 43 s there; later seeds cost about
the same per program), ~67% of the calls falling back (slower as fewer do). Every
generated program must agree with NumPy on every call. A failure is reported in full (its
shrunk, runnable repro); nothing is skipped or expected to fail, and no clock decides
which seeds run.

    AUTOJIT_FUZZ_PROGRAMS=200 AUTOJIT_FUZZ_SEED=ci PYTHONPATH=. python -m pytest \
        tests/fuzz/test_fuzz_ci.py -q
"""

from __future__ import annotations

import os

import pytest

from tests.fuzz.pool import Pool, signature, summary

#: the budget: programs of seeds SEED:0 ... SEED:PROGRAMS-1, on JOBS worker processes
PROGRAMS = 10500
SEED = "ci-20261201"
JOBS = 2
TIMEOUT_S = 60.0
SHRINK_S = 10.0
#: failures shrunk at most; later ones are reported as found (keeps a failing run short)
MAX_SHRINKS = 20


def _budget() -> tuple[int, str]:
    return (int(os.environ.get("AUTOJIT_FUZZ_PROGRAMS", PROGRAMS)),
            os.environ.get("AUTOJIT_FUZZ_SEED", SEED))


@pytest.mark.slow
def test_generated_programs_match_numpy() -> None:
    count, seed = _budget()
    pool = Pool(JOBS, TIMEOUT_S, SHRINK_S, max_shrinks=MAX_SHRINKS)
    results = pool.run(f"{seed}:{i}" for i in range(count))
    report = [summary(results)]
    for failure in results.failures:
        report.append(f"\n----- {signature(failure)}\n{failure['repro']}")
    assert results.programs == count, "\n".join(report)
    assert not results.harness_errors, "\n".join(report + results.harness_errors)
    assert not results.failures, "\n".join(report)
