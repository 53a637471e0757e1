"""A cache miss says which argument changed and how, in ``AUTOJIT_LOG=debug`` and in
``.stats()['recompiles']``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from autojit import autoroute


def test_stats_name_the_changed_argument() -> None:
    @autoroute
    def scale(x, y):
        return x * 2.0 + y

    a = np.ones(10)
    scale(a, a)
    scale(a.astype(np.float32), a)
    scale(a.astype(np.float32), np.ones((10, 2))[:, 0])
    scale(a.astype(np.float32), np.ones((10, 2))[:, 0])   # a hit: no new explanation
    assert scale.stats()["recompiles"] == [
        "x: float64[1d,C] -> float32[1d,C]",
        "y: float64[1d,C] -> float64[1d,C-strided]",
    ]


def test_debug_log_explains_the_miss() -> None:
    script = textwrap.dedent("""
        import numpy as np
        from autojit import autoroute

        @autoroute
        def double(x):
            return x * 2.0

        double(np.ones(8))
        double(np.ones(8, np.float32))
    """)
    env = {**os.environ, "AUTOJIT_LOG": "debug", "AUTOJIT_STATS": "0"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "double recompiles: x: float64[1d,C] -> float32[1d,C]" in proc.stderr
