"""``autojit inspect --stage ptx`` without NVRTC says why there is no PTX (it printed an
empty stage); the other stages are unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autojit.explain.cli import main
from autojit.lower_gpu.compile import nvrtc_unavailable

TARGET = f"{Path(__file__).with_name('inspect_programs.py')}:normalise_stack"
SPEC = "f32[B,H,W], B=4, H=32, W=32"


@pytest.fixture
def without_nvrtc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)   # import raises ImportError


def test_the_reason_names_the_missing_package(without_nvrtc) -> None:
    reason = nvrtc_unavailable()
    assert reason is not None and reason.startswith("NVRTC not installed (")
    assert "nvidia-cuda-nvrtc" in reason


def test_ptx_stage_says_nvrtc_is_not_installed(without_nvrtc,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", TARGET, "--args", SPEC, "--stage", "ptx"])
    out, err = capsys.readouterr()
    assert code == 0, err
    stage = out.split("=== ptx ===\n", 1)[1]
    assert stage.startswith("// no PTX: NVRTC not installed (")


def test_the_reason_is_none_with_nvrtc() -> None:
    pytest.importorskip("cuda.bindings")
    assert nvrtc_unavailable() is None
