"""Deep loop nests: the compile budget charges a kernel's loop depth (LLVM's time grows with
its cube), so a 32-deep nest runs as Python instead of stalling the first call for ~17 s."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_matches_numpy

from autojit import autoroute
from autojit.config import current_settings
from autojit.fuse.plan import plan_kernels
from autojit.lower_cpu.budget import CompileBudgetError, check_budget, estimate_seconds
from autojit.tracer import trace_function


def _kernels(fn, x, contiguous):
    graph = trace_function(fn, (x,), "fn")
    return plan_kernels(graph, [contiguous], current_settings().fusion_max_ops).kernels


def test_a_nest_that_stays_deep_is_over_the_compile_budget():
    """A transposed (strided) 32-dimensional array keeps a loop per axis: the budget
    predicts LLVM's time for that depth, so the call would run as Python; a shallow nest of
    the same body is cheap."""
    deep = np.broadcast_to(np.ones(1), (2,) * 32)       # no memory: strides of 0
    kernels = _kernels(lambda x: x.T.max(), deep, False)
    assert max(k.rank for k in kernels) == 32
    with pytest.raises(CompileBudgetError, match="too large to compile in time"):
        check_budget(kernels)
    assert estimate_seconds(_kernels(lambda x: x.T.max(), np.ones((2, 3)), True))[0] < 0.1


@pytest.mark.parametrize("reduce", [lambda x: x.max(), lambda x: x.sum(),
                                    lambda x: x.sum(axis=5), lambda x: x.min(axis=(0, -1))])
def test_reductions_of_a_32_dimensional_array_give_numpys_answer(reduce):
    """Whether compiled or refused by the budget, the answer is NumPy's (the budget's
    refusal is a fallback with its reason, never a stall or an error)."""
    x = np.arange(3.0 * 2).reshape((1,) * 30 + (3, 2)) - 2.5
    assert_matches_numpy(reduce, x, allowed_fallbacks=("too large to compile in time",))


def test_a_deep_nest_falls_back_before_llvm():
    """The 32-deep full max is refused by the budget's estimate (made before LLVM runs)."""
    jitted = autoroute(lambda x: x.max(), force="cpu")
    x = np.ones((1,) * 31 + (3,))
    assert jitted(x) == 1.0
    assert jitted.stats()["fallbacks"], jitted.stats()
