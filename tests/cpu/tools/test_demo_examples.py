"""The demo tour and the example scripts run and agree with NumPy (at small sizes)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from autojit.demo import run_demo

ROOT = Path(__file__).resolve().parents[3]


def test_run_demo_small() -> None:
    out = io.StringIO()
    rows = run_demo(scale=0.01, out=out)
    assert [row["workload"].split()[0] for row in rows] == ["chain", "image", "gbm"]
    for row in rows:
        assert row["matches"], row
        assert row["route"] in ("cpu", "gpu"), row  # these workloads must compile
        assert row["fallback"] is None, row
        assert row["kernels"] >= 1, row
        assert row["numpy_ms"] > 0 and row["autojit_ms"] > 0 and row["first_call_ms"] > 0
    text = out.getvalue()
    assert "matches NumPy" in text
    assert text.count(" yes") == 3


def test_chain_fuses_into_one_kernel() -> None:
    rows = run_demo(scale=0.001, out=io.StringIO())
    assert rows[0]["kernels"] == 1


@pytest.mark.parametrize(
    "script, size",
    [("chain.py", "10000"), ("image_normalise.py", "8"), ("gbm.py", "1000")],
)
def test_example_script(script: str, size: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), size],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "matches NumPy: yes" in proc.stdout, proc.stdout
    assert "stats:" in proc.stdout
    assert "FallbackWarning" not in proc.stderr, proc.stderr
