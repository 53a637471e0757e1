"""The CPU renderer's reduce and scan combine tables (``lower_cpu/reduce.py`` COMBINE,
ARG_COMPARE, ZERO_CODED; ``lower_cpu/scan.py`` SCAN_COMBINE): a missing entry is autojit's
bug, so it is an ``InternalError`` naming the reduction in the CUDA renderer's words (never
a KeyError), and a call that meets one runs as plain Python with that reason."""

from __future__ import annotations

import numpy as np
import pytest

import autojit
from autojit.errors import InternalError
from autojit.lower_cpu import jit
from autojit.lower_cpu import reduce as cpu_reduce
from autojit.lower_cpu import scan as cpu_scan

F64 = np.dtype(np.float64)

#: (table, entry, a function reducing or scanning through it, the op name in the message)
_CASES = {
    "sum": (cpu_reduce.COMBINE, "add", lambda a: np.sum(a * 2.0), "reduce.add"),
    "max": (cpu_reduce.COMBINE, "max", lambda a: np.max(a * 2.0), "reduce.max"),
    "argmax": (cpu_reduce.ARG_COMPARE, "argmax", lambda a: np.argmax(a * 2.0),
               "reduce.argmax"),
    "max_zero_sign": (cpu_reduce.ZERO_CODED, "max", lambda a: np.max(a * 2.0, axis=-1),
                      "reduce.max"),
    "cumsum": (cpu_scan.SCAN_COMBINE, "add", lambda a: np.cumsum(a * 2.0), "scan.add"),
}


def test_the_lookups_name_the_missing_reduction_or_scan() -> None:
    checks = [(cpu_reduce.combine_rule, "reduce.nope"), (cpu_reduce.arg_compare, "reduce.nope"),
              (cpu_reduce.zero_coded_rule, "reduce.nope"), (cpu_scan.scan_combine, "scan.nope")]
    for lookup, name in checks:
        with pytest.raises(InternalError, match=f"no LLVM rule for {name} on float64") as caught:
            lookup("nope", F64)
        assert caught.value.op == name and caught.value.dtype == F64
        assert "please report it" in str(caught.value)


def test_the_lookups_return_the_table_entries() -> None:
    assert cpu_reduce.combine_rule("add", F64) is cpu_reduce.COMBINE["add"]
    assert cpu_reduce.arg_compare("argmin", F64) == cpu_reduce.ARG_COMPARE["argmin"]
    assert cpu_reduce.zero_coded_rule("min", F64) is cpu_reduce.ZERO_CODED["min"]
    assert callable(cpu_scan.scan_combine("mul", F64))


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_call_meeting_a_missing_combine_runs_as_python(case, monkeypatch) -> None:
    table, entry, fn, name = _CASES[case]
    monkeypatch.delitem(table, entry)
    jit.forget_kernels()    # a kernel compiled earlier would be reused without rendering
    x = np.array([[3.0, -0.0, 0.0, 7.5], [1.0, 2.0, -4.0, 0.0]])
    jitted = autojit.autoroute(fn, force="cpu")
    with pytest.warns(autojit.FallbackWarning, match=f"no LLVM rule for {name}"):
        got = jitted(x)
    expected = fn(x)
    assert type(got) is type(expected) and np.asarray(got).tobytes() == expected.tobytes()
    (reason,) = jitted.stats()["fallbacks"]
    assert reason.startswith(f"internal error while compiling (InternalError: no LLVM rule "
                             f"for {name}")
    jit.forget_kernels()
