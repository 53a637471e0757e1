"""Big results of compiled calls come from the output pool (autojit/runtime/output_pool.py)
and still look like NumPy's: they own their memory, have no base, resize and pickle."""

import pickle

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_same_ownership, assert_same_value

import autojit
from autojit import autoroute
from autojit.runtime import output_pool

BIG = output_pool.MIN_BYTES // 8 + 3        # float64 elements: a result the pool serves

pytestmark = pytest.mark.skipif(output_pool._native is None,
                                reason="autojit._native.pool not built")


def _scaled(x):
    return np.sqrt(np.abs(x)) * 2.0 + x


def _two(x):
    return x * 2.0, x - 1.0


def test_big_results_own_their_memory_like_numpy_s():
    x = np.linspace(-3.0, 3.0, BIG)
    jitted = autoroute(_scaled, force="cpu")
    reused = output_pool.OUTPUT_POOL.reused
    for _ in range(3):
        result = jitted(x)
        assert_same_value(result, _scaled(x))
        assert_same_ownership(result, _scaled(x), "big result")
        assert np._core.multiarray.get_handler_name(result) == "autojit_output_pool"
        del result
    assert output_pool.OUTPUT_POOL.reused >= reused + 2      # the dropped blocks came back
    assert not jitted.stats()["fallbacks"]


def test_a_big_result_resizes_and_pickles_as_numpy_s_does():
    x = np.linspace(-3.0, 3.0, BIG)
    result, expected = autoroute(_scaled, force="cpu")(x), _scaled(x)
    result.resize((BIG + 5,))
    expected.resize((BIG + 5,))
    assert_same_value(result, expected)
    back = pickle.loads(pickle.dumps(result))
    assert_same_value(back, expected)
    assert_same_ownership(back, pickle.loads(pickle.dumps(expected)), "unpickled")


def test_several_big_outputs_and_changing_sizes():
    calls = [(np.linspace(-1.0, 1.0, n),) for n in (BIG, 1000, BIG + 4096, BIG)]
    assert_calls_match_numpy(_two, calls)
    first, second = autoroute(_two, force="cpu")(np.ones(BIG))
    assert_same_ownership((first, second), _two(np.ones(BIG)), "outputs")
    assert not np.shares_memory(first, second)


def test_the_calls_pool_setting_bounds_the_pool() -> None:
    """``config(output_pool_mb=0)`` reaches the pool through the call's CPU target (the
    pool reads no settings): a result dropped under it is not kept for reuse."""
    f = autoroute(lambda x: x * 2.0, force="cpu")
    x = np.ones(BIG)
    f(x)
    output_pool.OUTPUT_POOL.clear()
    with autojit.config(output_pool_mb=0):
        del_me = f(x)
        del del_me
        assert output_pool.OUTPUT_POOL.idle_bytes == 0
    kept = f(x)
    del kept
    assert output_pool.OUTPUT_POOL.idle_bytes > 0
