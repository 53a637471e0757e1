"""autojit in a test suite: backend agreement, per-backend tests, strict mode.

Run:  pytest examples/test_with_autojit.py                 (the plugin loads by itself)
      pytest examples/test_with_autojit.py --autojit-strict      (a fallback fails its test)
      pytest examples/test_with_autojit.py --autojit-backend=cpu (every call on the CPU)
"""

import numpy as np
import pytest

from autojit import autoroute
from autojit.testing import assert_backends_agree


@autoroute
def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


@autoroute
def normalise(img, mean, inv_std):
    return np.clip((img - mean) * inv_std * 1.0123 - 0.02, 0.0, None) ** 1.8


@autoroute
def gbm_step(S, Z, drift, scale):
    return S * np.exp(drift + scale * Z)


@autoroute
def blend(pixels, gains, offsets):
    # uint8 pixels times float32 gains (one per column) plus int16 offsets (one per row):
    # NumPy's promotion gives float32, and autojit must give the same
    return gains * pixels + offsets


RNG = np.random.default_rng(0)


def test_chain_agrees_on_every_backend():
    # python, cpu and gpu (skipped, and reported so, without a GPU); tolerances come from
    # the traced ops: four transcendental functions allow 16 ULP
    assert_backends_agree(chain, np.linspace(-3.0, 3.0, 10_001))


def test_normalise_agrees_including_the_cuda_code_emulated_on_the_cpu():
    img = RNG.random((2, 64, 96), dtype=np.float32) * np.float32(255.0)
    report = assert_backends_agree(normalise, img, 127.5, 1 / 64,
                                   backends=("python", "cpu", "gpu", "cuda-emulated"))
    assert "cpu" in report.ran


def test_mixed_dtypes_and_broadcasting_agree_exactly():
    pixels = RNG.integers(0, 256, (48, 64), dtype=np.uint8)
    gains = RNG.random(64, dtype=np.float32)
    offsets = RNG.integers(-100, 100, (48, 1), dtype=np.int16)
    report = assert_backends_agree(blend, pixels, gains, offsets)
    assert [check.allowed for check in report.checks] == ["exact"]  # no inexact op


def test_gbm_step_runs_on_each_backend(autojit_backend):
    # once per backend: python, cpu, gpu (skipped without a device); calls are forced there
    S = np.full(1000, 100.0)
    Z = RNG.standard_normal(1000)
    out = gbm_step(S, Z, 0.0001, 0.01)
    assert out.dtype == np.float64 and out.shape == S.shape
    assert np.all(out > 0)


@pytest.mark.autojit_backends("cpu", "gpu")
def test_chain_is_bounded_on_compiled_backends():
    y = chain(np.linspace(-10.0, 10.0, 1000))
    assert np.all(np.abs(y) <= 1.0)
