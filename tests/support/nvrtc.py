"""The ``nvrtc`` marker's rule: a test so marked compiles CUDA C with NVRTC and is skipped,
with the reason, where NVRTC does not load (``tests/conftest.py`` applies it). The tests in
``tests/cuda_compile`` need NVRTC throughout and are not marked: there its absence fails."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pytest

from autojit.lower_gpu.compile import nvrtc_version

SKIP_REASON = ("NVRTC is not installed (cuda.bindings.nvrtc does not import or its library "
               "does not load; the test extra installs cuda-bindings and nvidia-cuda-nvrtc)")

#: ``autojit inspect`` stages that compile with NVRTC
NVRTC_STAGES = frozenset({"ptx"})


@functools.cache
def nvrtc_available() -> bool:
    """Return True when NVRTC loads (asked once per session)."""
    return nvrtc_version() is not None


def stage_params(stages: Sequence[str]) -> list[Any]:
    """Return ``stages`` as parametrize values, those that need NVRTC marked ``nvrtc``."""
    return [pytest.param(s, marks=pytest.mark.nvrtc) if s in NVRTC_STAGES else s
            for s in stages]
