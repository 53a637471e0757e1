"""How far two correct backends may differ, and how far they did: per output of a graph.

Outputs made only of integer and IEEE basic ops must match exactly (NaN positions and signed
zeros included). Each op with a rule in :data:`ERROR_RULES` on the way to an output
(transcendental functions: their measured CPU bound from
:mod:`autojit.lower_cpu.ulp_bounds`, at least :data:`TRANSCENDENTAL_ULPS`; float reductions:
a pairwise-summation bound) adds its ULPs to that output's allowance. Because cancellation
(``cos(x)`` near its zeros) and ill-conditioned ops downstream (``sqrt`` near 0) make any
fixed ULP count wrong, an output also passes within an absolute allowance measured on the
reference interpreter: each inexact op's result is moved by its bound, the changes of the
outputs add up, times :data:`SENSITIVITY_FACTOR`. Add a rule for a new inexact op with
:func:`register_error_rule`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autojit.ir.graph import Graph, Node
from autojit.ir.ops import Op
from autojit.lower_cpu.ulp_bounds import numpy_extra_ulps, ulp_bound

#: least allowance of each transcendental function, in units in the last place of its result:
#: the GPU's (CUDA's math library: at most 4 for these) is not measured; the CPU's is
#: (docs/ulp.md), and where it is larger, the measured bound is used instead
TRANSCENDENTAL_ULPS = 4


# -- error bounds: one rule per inexact op ----------------------------------------------------
@dataclass(frozen=True)
class OpError:
    """How far two correct backends may differ on one op's result: ``ulps`` units in the last
    place of ``magnitude`` (elementwise, or one number)."""

    ulps: float
    magnitude: np.ndarray


ErrorRule = Callable[[Node, Sequence[np.ndarray], np.ndarray], "OpError | None"]


def transcendental_ulps(op: Op, dtype: np.dtype) -> float:
    """Return the ULPs one ``op`` at ``dtype`` may be off by: its measured CPU bound against
    NumPy (e.g. 7 for float32 ``log`` with libmvec), never less than TRANSCENDENTAL_ULPS,
    plus what NumPy's AVX-512 loops add where this NumPy runs them (``numpy_extra_ulps``)."""
    return max(TRANSCENDENTAL_ULPS, ulp_bound(op, dtype) or 0.0) + numpy_extra_ulps(op, dtype)


def _transcendental(node: Node, inputs: Sequence[np.ndarray], result: np.ndarray) -> OpError:
    return OpError(transcendental_ulps(node.op, node.type.dtype), np.abs(result))


def _reduction(node: Node, inputs: Sequence[np.ndarray], result: np.ndarray) -> OpError | None:
    """Sums: NumPy's pairwise summation errs by about (log2 n + 8)·eps·Σ|x| (8-way unrolled
    blocks), and so may the other side; products by n·eps relative; max/min/arg*: exact."""
    kind, axes = node.attr("kind"), node.attr("axes")
    length = math.prod(np.shape(inputs[0])[a] for a in axes) if axes is not None else (
        np.size(inputs[0]))
    if kind == "add":
        magnitude = np.abs(np.asarray(inputs[0], np.float64)).sum(
            axis=axes, keepdims=bool(node.attr("keepdims")))
        return OpError(2 * (math.ceil(math.log2(max(length, 1))) + 8), magnitude)
    if kind == "mul":
        return OpError(2 * max(length, 1), np.abs(result))
    return None


def _scan(node: Node, inputs: Sequence[np.ndarray], result: np.ndarray) -> OpError | None:
    """cumsum: NumPy adds in order (n deep), a GPU row in chunks then a tree, so each may
    err by about n·eps·Σ|x| over the prefix; cumprod by n·eps relative. A CPU scan is
    sequential, hence exact against NumPy: this bound only covers other orders."""
    from autojit.ir.evaluate import scan_array
    kind, axes = node.attr("kind"), node.attr("axes")
    length = math.prod(np.shape(inputs[0])[a] for a in axes)
    if kind == "add":
        magnitude = scan_array("add", np.abs(np.asarray(inputs[0], np.float64)), axes)
        return OpError(length + 32, magnitude)
    if kind == "mul":
        return OpError(length + 32, np.abs(result))
    return None


#: op -> rule; ops not listed (integer ops, IEEE basic float ops) must agree exactly
ERROR_RULES: dict[Op, ErrorRule] = {
    op: _transcendental for op in (
        Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.SINH, Op.COSH, Op.TANH,
        Op.ASINH, Op.ACOSH, Op.ATANH, Op.EXP, Op.EXP2, Op.EXPM1, Op.LOG, Op.LOG2, Op.LOG10,
        Op.LOG1P, Op.CBRT, Op.ATAN2, Op.HYPOT, Op.POW, Op.POWER)
}
ERROR_RULES[Op.REDUCE] = _reduction
ERROR_RULES[Op.SCAN] = _scan


def register_error_rule(op: Op, rule: ErrorRule) -> None:
    """Declare ``op`` inexact: ``rule(node, input values, result)`` returns its OpError (or
    None when exact for these values). Used by default tolerances from then on."""
    ERROR_RULES[op] = rule


@dataclass(frozen=True)
class Tolerance:
    """What one output may differ by: exact (``ulps`` 0); ``ulps`` ULP or ``slack`` absolute
    (elementwise); or the caller's ``rtol``/``atol``."""

    ulps: float = 0.0
    slack: np.ndarray | None = None
    rtol: float | None = None
    atol: float | None = None
    inexact_ops: int = 0

    @property
    def user(self) -> bool:
        return self.rtol is not None or self.atol is not None

    def describe(self) -> str:
        """Return the allowance in words: ``exact``, ``16 ULP, or ...``, ``rtol=..., atol=...``."""
        if self.user:
            return f"rtol={self.rtol or 0.0:g}, atol={self.atol or 0.0:g}"
        if not self.ulps:
            return "exact"
        return (f"{self.ulps:g} ULP, or {SENSITIVITY_FACTOR:g}x the error that "
                f"{self.inexact_ops} inexact op(s) at their bounds cause")


#: the absolute allowance is this many times the output's measured first-order sensitivity
SENSITIVITY_FACTOR = 2.0


def _cone(graph: Graph, output: int) -> set[int]:
    """Return the ids of the nodes ``output`` depends on, itself included."""
    seen, stack = set(), [output]
    while stack:
        node_id = stack.pop()
        if node_id not in seen:
            seen.add(node_id)
            stack.extend(graph.node(node_id).inputs)
    return seen


def _finite_abs(value: Any) -> np.ndarray:
    with np.errstate(all="ignore"):
        magnitude = np.abs(np.asarray(value, dtype=np.float64))
    return np.where(np.isfinite(magnitude), magnitude, 0.0)


def _evaluate(graph: Graph, args: Sequence[Any], outputs: Sequence[int],
              replace: tuple[int, np.ndarray] | None = None) -> list[np.ndarray]:
    """Return the values of nodes ``outputs`` by the reference interpreter, with node
    ``replace[0]``'s value replaced by ``replace[1]`` (it becomes an extra argument)."""
    from autojit.ir.evaluate import evaluate_graph
    nodes = graph.nodes
    if replace is not None:
        index = len(args)
        nodes = tuple(Node(n.id, Op.ARG, (), n.type, n.loc, (("index", index),))
                      if n.id == replace[0] else n for n in nodes)
        args = (*args, replace[1])
    changed = dataclasses.replace(graph, nodes=nodes, outputs=tuple(outputs),
                                  output_tuple=True, scalar_outputs=(False,) * len(outputs),
                                  _by_id={})
    return [np.asarray(v) for v in evaluate_graph(changed, args)]


def _op_errors(graph: Graph, values: dict[int, np.ndarray]) -> dict[int, OpError]:
    """Return the OpError of every inexact node among ``values``."""
    errors = {}
    for node in graph.nodes:
        rule = ERROR_RULES.get(node.op)
        if node.id in values and rule is not None and node.type.dtype.kind == "f":
            error = rule(node, [values[i] for i in node.inputs], values[node.id])
            if error is not None:
                errors[node.id] = error
    return errors


def default_tolerances(graph: Graph | None, args: Sequence[Any]) -> list[Tolerance]:
    """Return one Tolerance per output of ``graph`` for ``args``.

    Exact where no inexact op leads to the output. Otherwise the sum of those ops' ULPs, or
    an absolute error measured on the reference interpreter: each inexact op's result is
    moved by its bound and the outputs' changes add up (cancellation, or an ill-conditioned
    op downstream as in ``sqrt`` near 0, make any fixed ULP count wrong).
    """
    if graph is None:
        return []
    cones = [_cone(graph, o) for o in graph.outputs]
    if not any(ERROR_RULES.get(graph.node(i).op) for cone in cones for i in cone):
        return [Tolerance() for _ in graph.outputs]
    ids = sorted(set().union(*cones))
    values = dict(zip(ids, _evaluate(graph, args, ids)))
    errors = _op_errors(graph, values)
    reference = [values[o] for o in graph.outputs]
    slack = [np.zeros(np.shape(r)) for r in reference]
    for node_id, error in errors.items():
        value = values[node_id]
        eps = float(np.finfo(value.dtype).eps)
        with np.errstate(all="ignore"):
            moved = (value + error.ulps * eps * _finite_abs(error.magnitude)).astype(value.dtype)
        moved = np.where(np.isfinite(value), moved, value)
        outputs = _evaluate(graph, args, graph.outputs, (node_id, moved))
        for i, (out, ref) in enumerate(zip(outputs, reference)):
            if node_id in cones[i]:
                with np.errstate(all="ignore"):
                    slack[i] = slack[i] + _finite_abs(out.astype(np.float64) - ref)
    tolerances = []
    for i, cone in enumerate(cones):
        mine = [errors[k] for k in cone if k in errors]
        ulps = sum(e.ulps for e in mine)
        tolerances.append(Tolerance(ulps, SENSITIVITY_FACTOR * slack[i], inexact_ops=len(mine))
                          if ulps else Tolerance())
    return tolerances


# -- comparing one output ---------------------------------------------------------------------
def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the elementwise distance of two float arrays in units in the last place."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    lowest = np.iinfo(ints).min
    x, y = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    x = np.where(x < 0, lowest - x, x)   # sign-magnitude onto one monotonic integer line
    y = np.where(y < 0, lowest - y, y)
    return np.abs((x - y).astype(np.float64))


def _bad_positions(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Return the mask of positions outside ``tol``."""
    if got.dtype.kind == "b" or (got.dtype.kind != "f" and not tol.user):
        return got != want
    if tol.user:
        return ~np.isclose(got, want, rtol=tol.rtol or 0.0, atol=tol.atol or 0.0,
                           equal_nan=True)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if not tol.ulps:
        same = (got == want) & (np.signbit(got) == np.signbit(want))
        return ~(same | (nan_got & nan_want))
    close = ulp_distance(got, want) <= tol.ulps
    if tol.slack is not None:
        close |= np.abs(got.astype(np.float64) - want) <= tol.slack
    return (nan_got != nan_want) | ~(close | (nan_got & nan_want))


@dataclass
class OutputCheck:
    """One output of one backend against the reference backend: what was allowed and seen.

    ``max_abs``/``max_rel`` are the L∞ errors (over positions where neither is NaN);
    ``first_index`` is the first position outside the allowance, ``got``/``want`` its values.
    """

    output: int
    backend: str
    reference: str
    allowed: str = "exact"
    problem: str = ""
    size: int = 0
    mismatches: int = 0
    nan_mismatches: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ulps: float = 0.0
    first_index: tuple[int, ...] | None = None
    got: Any = None
    want: Any = None

    @property
    def ok(self) -> bool:
        return not self.problem and not self.mismatches

    def format(self) -> str:
        """Return the failure text (two or three indented lines)."""
        head = f"  output {self.output}: {self.backend} vs {self.reference}: "
        if self.problem:
            return head + self.problem
        ulps = f", {self.max_ulps:.3g} ULP" if self.max_ulps else ""
        nans = f"; NaN at different positions: {self.nan_mismatches}" if self.nan_mismatches else ""
        linf = f"max abs {self.max_abs:.6g}, max rel {self.max_rel:.6g}{ulps}{nans}"
        return (f"{head}{self.mismatches} of {self.size} values differ (allowed: {self.allowed})\n"
                f"    L∞ error: {linf}\n"
                f"    first difference at index {self.first_index}: {self.backend} "
                f"{self.got}, {self.reference} {self.want}")


def _measure(check: OutputCheck, got: np.ndarray, want: np.ndarray, tol: Tolerance) -> None:
    """Fill ``check``'s counts, L∞ errors and first difference."""
    bad = _bad_positions(got, want, tol)
    check.size, check.mismatches = int(got.size), int(np.count_nonzero(bad))
    g, w = got.astype(np.float64), want.astype(np.float64)
    both = ~(np.isnan(g) | np.isnan(w))
    check.nan_mismatches = int(np.count_nonzero(np.isnan(g) != np.isnan(w)))
    diff = np.where(both & (g != w), np.abs(g - w), 0.0)
    rel = np.divide(diff, np.abs(w), out=np.where(diff > 0, np.inf, 0.0), where=w != 0)
    check.max_abs = float(diff.max(initial=0.0))
    check.max_rel = float(rel.max(initial=0.0))
    if got.dtype.kind == "f":
        check.max_ulps = float(np.where(both, ulp_distance(got, want), 0.0).max(initial=0.0))
    if check.mismatches:
        check.first_index = tuple(int(i) for i in np.argwhere(bad)[0])
        check.got, check.want = got[check.first_index], want[check.first_index]


def compare_output(index: int, got: Any, want: Any, tol: Tolerance, backend: str,
                   reference: str) -> OutputCheck:
    """Return the OutputCheck of one output: kind, dtype, shape, then values within ``tol``."""
    check = OutputCheck(index, backend, reference, tol.describe())
    if isinstance(got, np.ndarray) != isinstance(want, np.ndarray):
        check.problem = f"result kind {type(got).__name__} vs {type(want).__name__}"
        return check
    a, e = np.asarray(got), np.asarray(want)
    if a.dtype != e.dtype or a.shape != e.shape:
        check.problem = f"{a.dtype}{list(a.shape)} vs {e.dtype}{list(e.shape)}"
        return check
    with np.errstate(all="ignore"):
        _measure(check, a, e, tol)
    return check
