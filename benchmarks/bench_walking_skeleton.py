"""Walking-skeleton benchmarks: NumPy vs autojit on a long chain and a tiny add.

Run:  .venv/bin/python -m pytest benchmarks/bench_walking_skeleton.py
(not part of the default test run: ``testpaths = ["tests"]``). Compare the two rows of a
group from the same run only; these machines are noisy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from autojit import autoroute


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def add(a, b):
    return a + b


def _implementation(func, impl: str):
    """Return ``func`` itself for "numpy", or a decorated copy warmed up by the caller."""
    return func if impl == "numpy" else autoroute(func)


@pytest.fixture(scope="module")
def x10m() -> np.ndarray:
    return np.random.default_rng(0).uniform(-3.0, 3.0, 10_000_000)


@pytest.fixture(scope="module")
def pair100() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.standard_normal(100), rng.standard_normal(100)


@pytest.mark.benchmark(group="chain tanh(cos(exp(sin x))) f64[10M]")
@pytest.mark.parametrize("impl", ["numpy", "autojit"])
def test_chain_10m(benchmark, impl: str, x10m: np.ndarray) -> None:
    fn = _implementation(chain, impl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback would make this row meaningless
        fn(x10m)  # compile outside the timed calls
    result = benchmark.pedantic(fn, args=(x10m,), rounds=5, warmup_rounds=1)
    np.testing.assert_allclose(result, chain(x10m), rtol=1e-10, atol=1e-12)


@pytest.mark.benchmark(group="add a + b f64[100]")
@pytest.mark.parametrize("impl", ["numpy", "autojit"])
def test_add_100(benchmark, impl: str, pair100: tuple[np.ndarray, np.ndarray]) -> None:
    fn = _implementation(add, impl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(*pair100)
    result = benchmark(fn, *pair100)
    np.testing.assert_array_equal(result, add(*pair100))
