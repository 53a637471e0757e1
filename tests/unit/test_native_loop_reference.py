"""The reference interpreter's meaning of a sequential kernel (``RECUR``/``RECUR_SET``,
``ir.kernel`` "Recurrences"): iterations one after another, a recurrence carried from one to
the next, stores seen by later loads; the compiled CPU kernel agrees bit for bit."""

from __future__ import annotations

import numpy as np

from autojit.fuse.builder import KernelBuilder
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.kernel import Level
from autojit.ir.ops import Op

F64 = np.dtype(np.float64)


def _recurrence_kernel():
    """acc = start; for r in range(n): acc = acc * 0.5 + x[r]; y[r] = acc; out = acc."""
    kb = KernelBuilder("seq_recur", (("n",),))
    kb.add_scalar("start", F64)
    x = kb.add_buffer("x", F64, (None,))
    y = kb.add_buffer("y", F64, (None,), is_output=True)
    acc = kb.recur(kb.load_scalar(0), F64)
    nxt = kb.graph_op(Op.ADD, (kb.graph_op(Op.MUL, (acc, kb.const(0.5, F64)), F64),
                              kb.load(x)), F64)
    kb.recur_set(acc, nxt)
    kb.store(y, nxt)
    kb.position(Level.OUTER, 0)
    kb.store(kb.add_buffer("out", F64, (0,), is_output=True), acc)
    return kb.finish((), 1)


def _python(x, start):
    acc, ys = np.float64(start), []
    for v in x:
        acc = acc * 0.5 + v
        ys.append(acc)
    return np.array(ys), acc


def test_reference_runs_the_recurrence_in_order() -> None:
    kernel = _recurrence_kernel()
    assert kernel.sequential and kernel.has_recurrence
    x = np.random.default_rng(0).standard_normal(50)
    y, out = np.zeros(50), np.zeros(1)
    evaluate_kernel(kernel, [x, y, out], [1.25])
    want_y, want = _python(x, 1.25)
    np.testing.assert_array_equal(y, want_y)
    assert out[0] == want


def test_an_empty_row_leaves_the_start() -> None:
    kernel = _recurrence_kernel()
    out = np.zeros(1)
    evaluate_kernel(kernel, [np.zeros(0), np.zeros(0), out], [3.5], rows=0)
    assert out[0] == 3.5


def test_compiled_recurrence_matches_the_reference() -> None:
    from autojit.runtime.targets import CpuTarget
    kernel = _recurrence_kernel()
    x = np.random.default_rng(1).standard_normal(1000)
    y, out = np.zeros(1000), np.zeros(())
    target = CpuTarget()
    target.launch(kernel, target.compile(kernel), [x, y, out], [0.75], {"n": 1000},
                  [1000, 1, 1])
    want_y, want = _python(x, 0.75)
    np.testing.assert_array_equal(y, want_y)
    assert out == want
