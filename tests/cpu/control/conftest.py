"""Fixtures shared by the loop-region tests."""

from __future__ import annotations

import pytest

import autojit.runtime.native_region as native_region


@pytest.fixture
def driver_runs():
    """The number of loops the native driver ran since the test began (a callable)."""
    if native_region._native_run is None:
        pytest.skip("autojit._native.loops is not built (python setup.py build_ext --inplace)")
    start = native_region.RUNS[0]
    return lambda: native_region.RUNS[0] - start
