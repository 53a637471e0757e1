"""Let the GPU tests reuse the kernel catalogue of ``tests/cuda_compile``."""

from __future__ import annotations

import sys
from pathlib import Path

_CATALOGUE = str(Path(__file__).resolve().parents[1] / "cuda_compile")
if _CATALOGUE not in sys.path:
    sys.path.insert(0, _CATALOGUE)
