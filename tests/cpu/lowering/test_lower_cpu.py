"""The CPU backend against the reference interpreter: every primitive at every dtype kind it
allows, casts, constants and the NumPy-level ops decomposed into primitives."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cpu_support import (
    ALL_DTYPES,
    BOOL,
    DTYPES_BY_KIND,
    assert_same,
    assert_within_ulp,
    domain_grid,
    edge_values,
    elementwise_kernel,
    pairs,
    run_both,
    wide_reference,
)

from autojit.fuse.builder import KernelBuilder
from autojit.ir.ops import OP_TABLE, PRIMITIVES, Op, OpGroup
from autojit.lower_cpu import llvm_rule_gaps

#: float primitives with an exactly specified result (everything else with a math_name is
#: a libm/libmvec transcendental, compared within MAX_ULP).
EXACT_FLOAT = {Op.FABS, Op.COPYSIGN, Op.FLOOR, Op.CEIL, Op.TRUNC, Op.RINT, Op.SQRT}
# Transcendentals are held to 4 ULP from a nearly correctly rounded result (computed in a
# wider type; measured worst case here: 4, float32 log). Against NumPy, whose own functions
# are up to 3 ULP off (float64 cbrt, float32 log), the two errors add up: 2 * MAX_ULP.
MAX_ULP = 4
_COMPUTE_GROUPS = (OpGroup.UNARY, OpGroup.BINARY, OpGroup.COMPARE, OpGroup.TERNARY)


def _primitive_cases() -> list[tuple[Op, np.dtype]]:
    return [(op, dtype) for op in PRIMITIVES if OP_TABLE[op].group in _COMPUTE_GROUPS
            for kind in OP_TABLE[op].primitive_kinds for dtype in DTYPES_BY_KIND[kind]]


def _is_transcendental(op: Op) -> bool:
    return bool(OP_TABLE[op].math_name) and op not in EXACT_FLOAT


def _operands(op: Op, dtype: np.dtype) -> list[np.ndarray]:
    """Return input arrays: edge values (pairs of them for binary ops), plus ordinary
    arguments for math functions; integer DIV/REM only get the divisors they are
    guaranteed (non-zero, never MIN / -1)."""
    values = edge_values(dtype)
    if _is_transcendental(op):
        values = np.concatenate([values, domain_grid(dtype, 241 if OP_TABLE[op].arity == 1
                                                     else 15)])
    if op is Op.SELECT:
        a, b = pairs(values, values)
        return [np.arange(a.size) % 3 == 1, a, b]
    if OP_TABLE[op].arity == 1:
        return [values]
    a, b = pairs(values, values)
    if op in (Op.DIV, Op.REM) and dtype.kind in "iu":
        unsafe = (b == 0)
        if dtype.kind == "i":
            unsafe |= (a == np.iinfo(dtype).min) & (b == -1)
        a, b = a[~unsafe], b[~unsafe]
    return [a, b]


def test_every_primitive_has_an_llvm_rule() -> None:
    assert llvm_rule_gaps() == []


@pytest.mark.parametrize(("op", "dtype"), _primitive_cases(),
                         ids=[f"{o.value}-{d}" for o, d in _primitive_cases()])
def test_primitive_matches_reference(op: Op, dtype: np.dtype) -> None:
    inputs = _operands(op, dtype)
    out_dtype = BOOL if OP_TABLE[op].group is OpGroup.COMPARE else dtype
    kernel = elementwise_kernel(
        f"p_{op.value}", [a.dtype for a in inputs], out_dtype,
        lambda kb, *xs: kb.emit(op, tuple(xs), out_dtype))
    (actual,), (expected,) = run_both(kernel, inputs, inputs[-1].shape)
    context = f"{op.value} on {dtype}"
    if _is_transcendental(op):
        assert_within_ulp(actual, expected, 2 * MAX_ULP, context + " vs evaluate_kernel")
        wide = wide_reference(OP_TABLE[op].numpy_ref, inputs)
        assert_within_ulp(actual, wide, MAX_ULP, context + " vs wide reference")
    else:
        assert_same(actual, expected, context)


def _cast_inputs(source: np.dtype, target: np.dtype) -> np.ndarray:
    """Return values whose cast NumPy defines: a float goes to an integer type only when
    its truncation is in range (C leaves the rest undefined; NumPy warns)."""
    values = edge_values(source)
    if source.kind != "f" or target.kind not in "iu":
        return values
    extra = np.array([2.7, -2.7, 0.9, -0.9, 126.5, -127.9, 255.5], dtype=source)
    values = np.concatenate([values, extra])
    info = np.iinfo(target)
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(values.astype(np.float64))
        # the bounds as float64: exact for 2**63 and 2**64, unlike the integers' maxima
        keep = (truncated >= float(info.min)) & (truncated < float(info.max) + 1.0)
    return values[keep]


@pytest.mark.parametrize("target", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("source", ALL_DTYPES, ids=str)
def test_cast_matches_numpy(source: np.dtype, target: np.dtype) -> None:
    values = _cast_inputs(source, target)
    kernel = elementwise_kernel("cast", [source], target,
                                lambda kb, x: kb.emit(Op.CAST, (x,), target))
    (actual,), (expected,) = run_both(kernel, [values], values.shape)
    assert_same(actual, expected, f"{source} -> {target}")
    with np.errstate(over="ignore"):
        numpy_result = values.astype(target)
    assert_same(actual, numpy_result, f"{source} -> {target} (NumPy astype)")


@pytest.mark.parametrize("target", DTYPES_BY_KIND["i"] + DTYPES_BY_KIND["u"], ids=str)
def test_float_to_int_out_of_range_saturates(target: np.dtype) -> None:
    """Where C (and so NumPy) is undefined, the CPU backend saturates and maps NaN to 0
    (``llvm.fptosi.sat``): never poison, never a trap."""
    info = np.iinfo(target)
    values = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300])
    kernel = elementwise_kernel("sat", [values.dtype], target,
                                lambda kb, x: kb.emit(Op.CAST, (x,), target))
    (actual,), _ = run_both(kernel, [values], values.shape)
    np.testing.assert_array_equal(actual, [0, info.max, info.min, info.max, info.min])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_constants_are_exact(dtype: np.dtype) -> None:
    values = edge_values(dtype)
    kb = KernelBuilder("consts", loop_sizes=(("n0",),))
    for i, value in enumerate(values.tolist()):
        kb.store(kb.add_buffer(f"out{i}", dtype, (1,), is_output=True), kb.const(value, dtype))
    actual, expected = run_both(kb.finish(), [], (5,))
    for value, got, want in zip(values.tolist(), actual, expected, strict=True):
        assert_same(got, want, f"constant {value!r} of {dtype}")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_scalar_parameters(dtype: np.dtype) -> None:
    """LOAD_SCALAR reads each runtime scalar through its pointer in ``data``."""
    values = edge_values(dtype)
    kb = KernelBuilder("scalars", loop_sizes=(("n0",),))
    x = kb.load(kb.add_buffer("in0", dtype, (1,)))
    s = kb.load_scalar(kb.add_scalar("s0", dtype))
    op = Op.XOR if dtype.kind == "b" else Op.ADD
    kb.store(kb.add_buffer("out0", dtype, (1,), is_output=True), kb.emit(op, (x, s), dtype))
    kb.store(kb.add_buffer("out1", dtype, (1,), is_output=True), s)
    kernel = kb.finish()
    for scalar in values[:: max(1, values.size // 4)].tolist():
        actual, expected = run_both(kernel, [values], values.shape, scalars=[scalar])
        for got, want in zip(actual, expected, strict=True):
            assert_same(got, want, f"scalar {scalar!r} of {dtype}")


# -- NumPy-level ops through their decompositions -------------------------------------------
_NUMERIC = DTYPES_BY_KIND["i"] + DTYPES_BY_KIND["u"] + DTYPES_BY_KIND["f"]
_GRAPH_BINARY = [Op.FLOOR_DIVIDE, Op.REMAINDER, Op.FMOD, Op.MAXIMUM, Op.MINIMUM]
_GRAPH_CASES = (
    [(op, d) for op in _GRAPH_BINARY for d in _NUMERIC]
    + [(op, d) for op in (Op.MAXIMUM, Op.MINIMUM) for d in DTYPES_BY_KIND["b"]]
    + [(op, d) for op in (Op.FMAX, Op.FMIN) for d in DTYPES_BY_KIND["f"]]
    + [(op, d) for op in (Op.SIGN, Op.ABSOLUTE, Op.SQUARE, Op.POSITIVE) for d in _NUMERIC]
    + [(op, d) for op in (Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.LOGICAL_NOT) for d in ALL_DTYPES]
    + [(op, d) for op in (Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR) for d in ALL_DTYPES]
    + [(Op.RECIPROCAL, d) for d in _NUMERIC]
    + [(op, d) for op in (Op.FLOOR, Op.CEIL, Op.TRUNC) for d in _NUMERIC]
)
_BOOL_RESULT = {Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.LOGICAL_NOT, Op.LOGICAL_AND,
                Op.LOGICAL_OR, Op.LOGICAL_XOR}


@pytest.mark.parametrize(("op", "dtype"), _GRAPH_CASES,
                         ids=[f"{o.value}-{d}" for o, d in _GRAPH_CASES])
def test_graph_op_matches_numpy(op: Op, dtype: np.dtype) -> None:
    values = edge_values(dtype)
    inputs = list(pairs(values, values)) if OP_TABLE[op].arity == 2 else [values]
    out_dtype = BOOL if op in _BOOL_RESULT else dtype
    kernel = elementwise_kernel(f"g_{op.value}", [dtype] * len(inputs), out_dtype,
                                lambda kb, *xs: kb.graph_op(op, tuple(xs), out_dtype))
    (actual,), (expected,) = run_both(kernel, inputs, inputs[0].shape)
    assert_same(actual, expected, f"{op.value} on {dtype} vs evaluate_kernel")
    with np.errstate(all="ignore"):
        numpy_result = np.asarray(OP_TABLE[op].numpy_ref(*inputs)).astype(out_dtype)
    assert_same(actual, numpy_result, f"{op.value} on {dtype} vs NumPy")


_INT_EXPONENTS = [0, 1, 2, 3, 5, 7]
_FLOAT_EXPONENTS = [2.0, 0.5, -1.0, 3.0, 2.5, -0.5, 0.0]


@pytest.mark.parametrize("dtype", _NUMERIC, ids=str)
def test_power_with_constant_exponent(dtype: np.dtype) -> None:
    values = edge_values(dtype)
    exponents = _FLOAT_EXPONENTS if dtype.kind == "f" else _INT_EXPONENTS
    for exponent in exponents:
        kernel = elementwise_kernel(
            "pow", [dtype], dtype,
            lambda kb, x, e=exponent: kb.graph_op(Op.POWER, (x, kb.const(e, dtype)), dtype))
        (actual,), (expected,) = run_both(kernel, [values], values.shape)
        with np.errstate(all="ignore"):
            numpy_result = np.power(values, np.array(exponent, dtype=dtype))
        context = f"power(x, {exponent}) on {dtype}"
        if dtype.kind == "f" and exponent not in (2.0, 0.5, -1.0):
            assert_within_ulp(actual, expected, 2 * MAX_ULP, context)
            assert_within_ulp(actual, numpy_result, 2 * MAX_ULP, context + " vs NumPy")
        else:
            assert_same(actual, expected, context)
            assert_same(actual, numpy_result, context + " vs NumPy")


@pytest.mark.parametrize("dtype", _NUMERIC, ids=str)
def test_clip(dtype: np.dtype) -> None:
    values = edge_values(dtype)
    low, high = (values[values.size // 3], values[2 * values.size // 3])
    if dtype.kind == "f":
        low, high = dtype.type(-1.5), dtype.type(100.0)
    kernel = elementwise_kernel(
        "clip", [dtype], dtype,
        lambda kb, x: kb.graph_op(Op.CLIP, (x, kb.const(low, dtype), kb.const(high, dtype)),
                                  dtype))
    (actual,), (expected,) = run_both(kernel, [values], values.shape)
    assert_same(actual, expected, f"clip on {dtype}")
    assert_same(actual, np.clip(values, low, high), f"clip on {dtype} vs NumPy")
