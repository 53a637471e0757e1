"""Routing on a real GPU: calibration, the cost model choosing the GPU for big calls, CuPy
inputs staying on the device, residency, NVML load sampling. Skipped without a device."""

from __future__ import annotations

import numpy as np
import pytest

from autojit import autoroute
from autojit.lower_gpu import gpu_available
from autojit.routing.calibration import calibrate
from autojit.routing.route import Router, use_router
from autojit.runtime.devices import CudaDevice, HostDevice

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no usable CUDA device")]


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


@pytest.fixture(scope="module")
def router():
    router = Router({"cpu": HostDevice(), "gpu": CudaDevice()})
    router.set_params(calibrate(list(router.devices.values())), "test calibration")
    with use_router(router):
        yield router


def test_calibration_measures_a_gpu_faster_than_the_cpu(router):
    cpu, gpu = router.params["cpu"], router.params["gpu"]
    assert gpu.bandwidth > cpu.bandwidth and gpu.flop_rate > cpu.flop_rate
    assert 0 < gpu.launch_s < 1e-3 and 1e8 < gpu.transfer < 1e12


def test_the_model_sends_big_calls_to_the_gpu_and_small_ones_to_the_cpu(router):
    f = autoroute(chain)
    big, small = np.linspace(-3, 3, 1 << 24), np.linspace(-3, 3, 64)
    np.testing.assert_allclose(f(big), chain(big), rtol=1e-12, atol=1e-15)
    assert f.stats()["decisions"][-1]["ran_on"] == "gpu"
    np.testing.assert_allclose(f(small), chain(small), rtol=1e-12, atol=1e-15)
    assert f.stats()["decisions"][-1]["ran_on"] == "cpu"
    assert f.stats()["bytes_moved"]["host_to_device"] == big.nbytes


def test_cupy_inputs_run_on_the_gpu_and_results_stay_there(router):
    import cupy
    f = autoroute(chain)
    x = cupy.linspace(-3, 3, 1000)
    y = f(x)
    assert isinstance(y, cupy.ndarray)
    assert f.stats()["residency_ratio"] == 1.0
    assert f.stats()["decisions"][-1]["reason"] == "CuPy arguments live on the GPU"
    host = autoroute(chain, residency="host")(x)
    assert isinstance(host, np.ndarray)


def test_nvml_load_sample(router):
    load = router.devices["gpu"].sample_load()
    assert 0.0 <= load.utilisation <= 1.0 and 0 < load.free_bytes <= load.total_bytes
