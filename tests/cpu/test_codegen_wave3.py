"""The CPU kernels' code for stencils and strided elementwise work (issue 15, wave 3): their
results stay NumPy's bit for bit on overlapping views of one array, strided views and rows
whose length is no multiple of the vector width (the vectoriser's remainder loop); and a
process's first compile pays only for the math functions its kernels call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy


def heat(u, steps, alpha):
    for _ in range(steps):
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                  + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def stencil_step(u, alpha):
    """One step written out of the loop: a 2-d stencil over views of one array."""
    return u[1:-1, 1:-1] + alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                    + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])


def strided_sum(a, b):
    return a[::2, 1:] * 3.0 - b[1::3, :-1]


def _grid(rows: int, cols: int, dtype: str = "f8", seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal((rows, cols))
    values[0, 0], values[-1, -1] = -0.0, 1e-310   # a zero sign and a subnormal on the edge
    return values.astype(dtype)


@pytest.mark.parametrize("cols", [3, 10, 17, 37, 150])
def test_heat_in_place_is_numpys_bits_at_every_row_length(cols: int) -> None:
    # rows of 1..148 interior elements: the vector loop, its remainder, or only the remainder
    assert_calls_match_numpy(heat, [(_grid(12, cols), 5, 0.1), (_grid(9, cols, seed=1), 3,
                                                                  0.25)])


def test_heat_compiles_once_across_sizes_and_trip_counts() -> None:
    jitted = assert_calls_match_numpy(heat, [(_grid(10, 10), 3, 0.1), (_grid(150, 150), 50, 0.1),
                                             (_grid(31, 45), 1000, 0.05)])
    stats = jitted.stats()
    assert stats["routes"].get("python", 0) == 0
    assert stats["compiles"] == 1


@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_stencil_over_views_of_one_array_is_numpys_bits(dtype: str) -> None:
    assert_matches_numpy(stencil_step, _grid(41, 29, dtype), np.float32(0.3) if dtype == "f4"
                         else 0.3)


def test_stencil_over_a_non_contiguous_array_is_numpys_bits() -> None:
    base = _grid(60, 90)
    assert_matches_numpy(stencil_step, base[::2, ::3], 0.1)
    assert_matches_numpy(stencil_step, np.asfortranarray(base), 0.1)


def test_strided_elementwise_is_numpys_bits() -> None:
    assert_matches_numpy(strided_sum, _grid(40, 23), _grid(60, 23, seed=2))
    assert_matches_numpy(strided_sum, _grid(40, 23, "i8"), _grid(60, 23, "i8", seed=2))


_FIRST_COMPILE = """
import numpy as np
import autojit
from autojit.lower_cpu import svml
autojit.autoroute(lambda x: x + 1.0, force="cpu", cache_max_mb=0)(np.ones(10))
print(svml.routine.cache_info().currsize)
autojit.autoroute(lambda x: np.sin(x) * 2.0, force="cpu", cache_max_mb=0)(np.ones(10))
print(svml.routine.cache_info().currsize)
"""


def test_first_compile_probes_only_the_math_functions_kernels_call() -> None:
    # the reuse key held every function's SVML probe: ~0.2-0.4 s of a process's first call
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", _FIRST_COMPILE], capture_output=True,
                         text=True, env=env, cwd=root, timeout=120, check=True).stdout.split()
    without_math, with_sin = int(out[-2]), int(out[-1])
    assert without_math == 0
    assert with_sin <= 2   # sin at float64 (and float32 at most)
