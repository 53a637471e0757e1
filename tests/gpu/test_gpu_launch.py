"""Every catalogue kernel launched on a real GPU matches ``evaluate_kernel``.

Skipped (cleanly, at collection) where ``gpu_available()`` is False. Device arrays keep the
host layout exactly (same strides, same offset inside a copied byte span), so negative,
zero and runtime strides reach the kernel as the tests meant them.

ULP bounds are twice the emulation's (8): CUDA's math library is documented within 1-4 ULP
per function (e.g. ``powf``, ``acoshf``: 4) and NumPy's own result is itself 1-2 ULP off.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.support.cuda_cases import Case, assert_outputs_match, operation_cases
from tests.support.cuda_layouts import layout_cases

from autojit.fuse.builder import KernelBuilder
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.ops import Op
from autojit.lower_gpu import compile_cuda, device_arch, gpu_available, launch, render_cuda
from autojit.lower_gpu import device as gpu_device

_NO_GPU = pytest.mark.skipif(not gpu_available(), reason="no usable CUDA device")


def needs_gpu(test: Callable) -> Callable:
    """Mark ``test`` as a GPU test, skipped where no usable device exists."""
    return pytest.mark.gpu(_NO_GPU(test))


CASES = operation_cases() + layout_cases()

MakeView = Callable[[Any, int, np.ndarray], Any]


def mirror(host: np.ndarray, owner: np.ndarray, upload: Callable[[np.ndarray], Any],
           make_view: MakeView) -> tuple[Any, Any]:
    """Return (device copy of ``owner``'s bytes, view with ``host``'s offset and strides)."""
    low, high = np.lib.array_utils.byte_bounds(owner)
    raw = (ctypes.c_uint8 * (high - low)).from_address(low) if high > low else []
    span = upload(np.array(raw, dtype=np.uint8))
    return span, make_view(span, host.ctypes.data - low, host)


def _numpy_view(span: np.ndarray, offset: int, like: np.ndarray) -> np.ndarray:
    return np.ndarray(like.shape, like.dtype, buffer=span, offset=offset, strides=like.strides)


def _cupy_view(span: Any, offset: int, like: np.ndarray) -> Any:
    import cupy
    return cupy.ndarray(like.shape, like.dtype, memptr=span.data + offset, strides=like.strides)


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("lay_")],
                         ids=lambda c: c.name)
def test_mirror_keeps_layout(case: Case) -> None:
    """The host-side twin of the device copy: runs without a GPU."""
    for array in case.inputs.values():
        _, view = mirror(array, array, np.copy, _numpy_view)
        assert view.strides == array.strides and np.array_equal(view, array)


def run_on_gpu(case: Case) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Return the case's outputs (host base, view) after one launch on the device."""
    import cupy
    binary = compile_cuda(render_cuda(case.kernel), case.name, device_arch())
    got = case.fresh_outputs()
    spans = {b: mirror(view, base, cupy.asarray, _cupy_view) for b, (base, view) in got.items()}
    inputs = {b: mirror(a, a, cupy.asarray, _cupy_view)[1] for b, a in case.inputs.items()}
    arrays = [spans[b][1] if b in spans else inputs[b] for b in range(len(case.kernel.buffers))]
    launch(case.kernel, binary, arrays, case.scalars, case.sizes)
    cupy.cuda.get_current_stream().synchronize()
    for b, (base, _) in got.items():
        base[...] = spans[b][0].get().view(base.dtype).reshape(base.shape)
    return got


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gpu_matches_reference(case: Case) -> None:
    assert_outputs_match(case, run_on_gpu(case), case.reference(), scale=2)


@needs_gpu
def test_device_arch_names_an_sm() -> None:
    assert re.fullmatch(r"sm_\d+", device_arch())


@needs_gpu
def test_large_launch_uses_grid_stride_and_caches_the_module() -> None:
    """More elements than the bounded grid has threads: the grid-stride loop must cover
    them; a second launch reuses the loaded module."""
    import cupy
    kb = KernelBuilder("gpu_big_axpy", (("n",),))
    x = kb.load(kb.add_buffer("x", np.float64, (1,)))
    a = kb.load_scalar(kb.add_scalar("a", np.float64))
    kb.store(kb.add_buffer("y", np.float64, (1,), is_output=True),
             kb.emit(Op.ADD, (kb.emit(Op.MUL, (a, x), np.float64), x), np.float64))
    kernel = kb.finish()
    binary = compile_cuda(render_cuda(kernel), kernel.name, device_arch())
    host = np.random.default_rng(0).standard_normal(5_000_003)
    x_dev, y_dev = cupy.asarray(host), cupy.zeros_like(cupy.asarray(host))
    for _ in range(2):
        launch(kernel, binary, [x_dev, y_dev], [2.5], {"n": host.size})
    cached = len(gpu_device._FUNCTIONS)
    launch(kernel, binary, [x_dev, y_dev], [2.5], {"n": host.size})
    assert len(gpu_device._FUNCTIONS) == cached
    want = np.zeros_like(host)
    evaluate_kernel(kernel, [host, want], [2.5])
    assert np.array_equal(y_dev.get(), want)

