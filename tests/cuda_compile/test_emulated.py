"""The generated CUDA C, run on the CPU through g++ emulation, matches ``evaluate_kernel``.

All kernels go into one translation unit, so g++ runs once for the whole module.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cuda_cases import (
    Case,
    assert_group_covered,
    assert_outputs_match,
    operation_cases,
)
from tests.support.cuda_layouts import layout_cases

from autojit.lower_gpu import render_cuda, run_emulated

OPERATIONS = operation_cases()
LAYOUTS = layout_cases()
CASES = OPERATIONS + LAYOUTS


@pytest.fixture(scope="module")
def source() -> str:
    return "\n".join(render_cuda(case.kernel) for case in CASES)


def _run(case: Case, source: str, grid: int = 3, block: int = 7) -> None:
    got = case.fresh_outputs()
    run_emulated(case.kernel, source, case.arrays(got), case.scalars, case.sizes,
                 grid=grid, block=block)
    assert_outputs_match(case, got, case.reference())


def test_cases_cover_every_primitive_and_kind() -> None:
    assert_group_covered(OPERATIONS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_emulation_matches_reference(case: Case, source: str) -> None:
    _run(case, source)


@pytest.mark.parametrize("grid, block", [(1, 1), (2, 64), (40, 32)])
@pytest.mark.parametrize("name", ["lay_r3_mixed", "lay_r2_many", "lay_r1_neg_bcast"])
def test_any_launch_shape_covers_every_element(name: str, grid: int, block: int,
                                               source: str) -> None:
    _run(next(c for c in LAYOUTS if c.name == name), source, grid, block)


def test_strided_output_leaves_the_rest_of_its_base_alone(source: str) -> None:
    case = next(c for c in LAYOUTS if c.name == "lay_r2_strided")
    got = case.fresh_outputs()
    run_emulated(case.kernel, source, case.arrays(got), case.scalars, case.sizes)
    base, view = got[2]
    assert np.count_nonzero(base != -12345) == view.size


def test_layout_contradicting_a_compile_time_stride_is_refused(source: str) -> None:
    case = next(c for c in LAYOUTS if c.name == "lay_r1_contig")
    arrays = case.arrays(case.fresh_outputs())
    arrays[0] = np.zeros(100)[::2]
    with pytest.raises(ValueError, match="stride"):
        run_emulated(case.kernel, source, arrays, case.scalars, case.sizes)
