"""NVRTC compiles every generated kernel to a cubin for sm_80 and sm_90 (no GPU needed)."""

from __future__ import annotations

import pytest

from tests.support.cuda_cases import Case, operation_cases
from tests.support.cuda_layouts import layout_cases

from autojit.errors import CompileError
from autojit.lower_gpu import CudaBinary, compile_cuda, nvrtc_version, render_cuda

pytestmark = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC is not installed")

CASES = operation_cases() + layout_cases()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_nvrtc_compiles_kernel(case: Case, arch: str) -> None:
    binary = compile_cuda(render_cuda(case.kernel), case.name, arch)
    assert binary.arch == arch
    assert binary.cubin[:4] == b"\x7fELF"          # SASS for the device, not PTX
    assert case.name.encode() in binary.cubin       # extern "C": the unmangled symbol
    assert f".target {arch}" in binary.ptx
    assert f".entry {case.name}(" in binary.ptx
    assert "warning" not in binary.log


def test_compile_is_cached_per_source_and_arch() -> None:
    source = render_cuda(CASES[0].kernel)
    first = compile_cuda(source, CASES[0].name, "sm_90")
    assert compile_cuda(source, CASES[0].name, "sm_90") is first
    assert compile_cuda(source, CASES[0].name, "sm_80") is not first


def test_compile_error_carries_numbered_source_and_log() -> None:
    source = 'extern "C" __global__ void broken(float *x) {\n  x[0] = no_such_function();\n}\n'
    with pytest.raises(CompileError) as info:
        compile_cuda(source, "broken")
    error = info.value
    assert "no_such_function" in error.log and "error" in error.log
    assert error.source == source
    assert "    2    x[0] = no_such_function();" in str(error)
    assert "broken" in str(error) and "sm_90" in str(error)


def test_unknown_architecture_is_a_compile_error() -> None:
    with pytest.raises(CompileError):
        compile_cuda(render_cuda(CASES[0].kernel), CASES[0].name, "sm_1")


def test_nvrtc_version_is_a_pair() -> None:
    version = nvrtc_version()
    assert isinstance(version, tuple) and len(version) == 2 and version[0] >= 12
    assert CudaBinary.__dataclass_fields__.keys() == {"cubin", "ptx", "log", "arch"}
