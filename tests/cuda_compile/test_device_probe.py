"""Device probing and launch-argument packing, checked without a GPU."""

from __future__ import annotations

import ctypes
import sys
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from autojit.errors import DeviceUnavailableError
from autojit.fuse.builder import KernelBuilder
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.lower_gpu import CudaBinary, device, device_arch, gpu_available, launch, render_cuda
from autojit.lower_gpu.device import launch_args
from autojit.lower_gpu.emulate import build_emulation


def _kernel() -> Kernel:
    kb = KernelBuilder("k_axpy", (("n0",), ("n1",)))
    x = kb.load(kb.add_buffer("x", np.float32, (None, 1)))
    a = kb.load_scalar(kb.add_scalar("a", np.float32))
    flag = kb.load_scalar(kb.add_scalar("flag", np.bool_))
    y = kb.emit(Op.SELECT, (flag, kb.emit(Op.MUL, (a, x), np.float32), x), np.float32)
    kb.store(kb.add_buffer("y", np.float32, (None, None), is_output=True), y)
    return kb.finish()


def test_gpu_available_is_a_cached_bool() -> None:
    first = gpu_available()
    assert isinstance(first, bool)
    start = time.perf_counter()
    for _ in range(1000):
        assert gpu_available() is first
    assert time.perf_counter() - start < 0.05


def test_launch_args_follow_the_kernel_signature() -> None:
    x = np.zeros((4, 10), np.float32)[:, :6]
    y = np.zeros((6, 4), np.float32).T
    args = launch_args(_kernel(), [x, y], [2.0, True], {"n0": 4, "n1": 6})
    assert args[0] is x and args[1] is y
    assert type(args[2]) is np.float32 and type(args[3]) is np.bool_
    assert [type(a) for a in args[4:]] == [np.int64] * 5
    assert [int(a) for a in args[4:]] == [4, 6, 10, 1, 4]   # sizes, st0_0, st1_0, st1_1


@pytest.mark.skipif(gpu_available(), reason="a GPU is present")
def test_launch_without_a_gpu_raises_device_unavailable() -> None:
    binary = CudaBinary(b"", "", "", "sm_90")
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(DeviceUnavailableError):
        launch(_kernel(), binary, [x, x.copy()], [1.0, True], {"n0": 2, "n1": 3})


class _FakeCuda:
    """Just enough of ``cupy`` for ``launch``: one device with 2 SMs whose kernels run in
    the g++ emulation, with the grid and block ``launch`` chose."""

    def __init__(self, source: str) -> None:
        self.source, self.launches, self.loaded = source, [], []
        self.cuda = SimpleNamespace(runtime=SimpleNamespace(
            getDeviceCount=lambda: 1, getDevice=lambda: 0,
            getDeviceProperties=lambda dev: {"major": 9, "minor": 0, "multiProcessorCount": 2}))

    def RawModule(self, path: str) -> SimpleNamespace:  # noqa: N802 - CuPy's name
        self.loaded.append(Path(path).read_bytes())
        return SimpleNamespace(get_function=lambda name: partial(self._run, name))

    def _run(self, name: str, grid: tuple, block: tuple, args: tuple) -> None:
        self.launches.append((grid, block))
        kernel = self.kernel
        nb, ns = len(kernel.buffers), len(kernel.scalars)
        boxes = [np.array([s]) for s in args[nb:nb + ns]]
        data = (ctypes.c_void_p * (nb + ns))(*[a.ctypes.data for a in args[:nb]],
                                             *[b.ctypes.data for b in boxes])
        meta = np.array(args[nb + ns:], dtype=np.int64)
        entry = getattr(build_emulation(self.source), f"{name}_emulate")
        entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        entry(ctypes.cast(data, ctypes.c_void_p), meta.ctypes.data, grid[0], block[0])


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch):
    kernel = _kernel()
    fake = _FakeCuda(render_cuda(kernel))
    fake.kernel = kernel
    for clear in (gpu_available.cache_clear, device._device_properties.cache_clear,
                  device._FUNCTIONS.clear):
        clear()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    yield fake
    for clear in (gpu_available.cache_clear, device._device_properties.cache_clear,
                  device._FUNCTIONS.clear):
        clear()


def test_launch_runs_every_element_with_a_bounded_grid(fake_cupy: _FakeCuda) -> None:
    kernel = fake_cupy.kernel
    binary = CudaBinary(b"\x7fELF fake cubin", "", "", "sm_90")
    assert gpu_available() and device_arch() == "sm_90"
    x = np.random.default_rng(1).standard_normal((80, 500)).astype(np.float32)[::-1, 100:350]
    y, want = np.zeros((250, 80), np.float32).T, np.zeros((80, 250), np.float32)
    for _ in range(2):
        launch(kernel, binary, [x, y], [np.float32(3.0), True], {"n0": 80, "n1": 250})
    evaluate_kernel(kernel, [x, want], [np.float32(3.0), True])
    assert np.array_equal(y, want)
    assert fake_cupy.launches == [((64,), (256,))] * 2      # 2 SMs x 32 blocks < 79 needed
    assert fake_cupy.loaded == [binary.cubin]                # module loaded once
    launch(kernel, binary, [x[:0], y[:0]], [1.0, True], {"n0": 0, "n1": 250})
    assert len(fake_cupy.launches) == 2                      # empty loop: no launch
