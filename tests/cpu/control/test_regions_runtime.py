"""Loop regions through the rest of the pipeline: the disk cache stores and loads plans
with regions, the emulated CUDA target runs a region's body kernels (the GPU's host loop),
and ``AUTOJIT_CHECKS`` verification accepts region nodes (on in the test suite)."""

from __future__ import annotations

import pickle

import numpy as np

from tests.cpu.control.test_regions_loops import heat, nested, relax, trace_sum

import autojit
from autojit import autoroute
from autojit.testing import assert_backends_agree


def test_plans_with_regions_are_stored_and_loaded_from_the_disk_cache(tmp_path):
    u = np.random.default_rng(0).random((9, 9))
    with autojit.config(cache_dir=str(tmp_path / "cache")):
        first = autoroute(heat)
        expected = first(u.copy(), 7, 0.1)
        assert first.stats()["disk_misses"] == 1
        again = autoroute(heat)
        result = again(u.copy(), 7, 0.1)
        stats = again.stats()
    assert stats["disk_hits"] == 1 and stats["compiles"] == 0, stats
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(result, heat(u.copy(), 7, 0.1))


def test_a_plan_with_nested_regions_pickles():
    jitted = autoroute(nested, force="cpu")
    plan = jitted.inspect(np.linspace(0, 1, 6), 2, 3).plan
    assert plan.regions and plan.regions[0].body.regions
    again = pickle.loads(pickle.dumps(plan))
    assert len(again.kernels) == len(plan.kernels)


def test_region_bodies_run_on_the_emulated_cuda_target():
    u = np.random.default_rng(1).random((7, 6))
    report = assert_backends_agree(heat, u, 4, 0.1, backends=["python", "cuda-emulated"])
    assert report.ok
    report = assert_backends_agree(trace_sum, np.arange(6.0), 3,
                                   backends=["python", "cuda-emulated"])
    assert report.ok
    report = assert_backends_agree(relax, np.linspace(0, 1, 8) ** 2, 1e-2,
                                   backends=["python", "cuda-emulated"])
    assert report.ok


def test_a_disk_cached_peeled_loop_answers_only_its_path(tmp_path):
    a = np.arange(4.0)
    with autojit.config(cache_dir=str(tmp_path / "cache")):
        autoroute(trace_sum)(a, 3)
        warm = autoroute(trace_sum)
        assert warm(a, 5).tolist() == trace_sum(a, 5).tolist()
        assert warm.stats()["disk_hits"] == 1
        cold = autoroute(trace_sum)   # no iteration: the stored plan (it ran) does not fit
        result = cold(a, 0)
    assert result.tolist() == trace_sum(a, 0).tolist()
    assert cold.stats()["routes"]["python"] == 0
