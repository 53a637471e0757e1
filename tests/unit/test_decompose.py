"""Decompositions reproduce NumPy exactly, checked with the reference interpreter (no compiler)."""

import numpy as np
import pytest

from autojit.fuse.builder import KernelBuilder
from autojit.ir.evaluate import evaluate_kernel
from autojit.ir.ops import OP_TABLE, Op
from autojit.ir.verify import verify_kernel


def values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -7.25, 3.0,
                         1e-300, 1e300, 0.5], dtype)
    if dtype.kind == "b":
        return np.array([True, False])
    info = np.iinfo(dtype)
    vals = [info.min, info.max, 0, 1, 2, 7, info.max - 1]
    if dtype.kind == "i":
        vals += [-1, -2, -7, info.min + 1]
    return np.array(vals, dtype)


def run_decomposed(op, dtype, *operands, out_dtype=None):
    kb = KernelBuilder("k", (("n0",),))
    loaded = [kb.load(kb.add_buffer(f"in{i}", dtype, (1,))) for i in range(len(operands))]
    out_dtype = np.dtype(out_dtype or dtype)
    result = kb.graph_op(op, tuple(loaded), out_dtype)
    kb.store(kb.add_buffer("out0", out_dtype, (1,), is_output=True), result)
    kernel = kb.finish()
    verify_kernel(kernel)
    out = np.empty(operands[0].shape, out_dtype)
    evaluate_kernel(kernel, [*operands, out])
    return out


BINARY = [Op.FLOOR_DIVIDE, Op.REMAINDER, Op.FMOD, Op.MAXIMUM, Op.MINIMUM, Op.FMAX, Op.FMIN]
DTYPES = ["int8", "int64", "uint8", "uint64", "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.value)
def test_binary_decompositions_match_numpy_on_all_edge_pairs(op, dtype):
    v = values(dtype)
    a, b = (x.ravel() for x in np.meshgrid(v, v))
    got = run_decomposed(op, dtype, a, b)
    with np.errstate(all="ignore"):
        expected = OP_TABLE[op].numpy_ref(a, b)
    np.testing.assert_array_equal(got, expected)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("dtype", DTYPES + ["int32"])
@pytest.mark.parametrize("op", [Op.SIGN, Op.ABSOLUTE, Op.RECIPROCAL, Op.SQUARE],
                         ids=lambda o: o.value)
def test_unary_decompositions_match_numpy(op, dtype):
    v = values(dtype)
    got = run_decomposed(op, dtype, v)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, OP_TABLE[op].numpy_ref(v))


@pytest.mark.parametrize("op", [Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.LOGICAL_NOT])
@pytest.mark.parametrize("dtype", ["int16", "float32", "float64", "bool"])
def test_predicates_match_numpy(op, dtype):
    v = values(dtype)
    np.testing.assert_array_equal(run_decomposed(op, dtype, v, out_dtype=bool),
                                  OP_TABLE[op].numpy_ref(v))


def test_constants_fold_and_dead_code_is_removed():
    kb = KernelBuilder("k", (("n0",),))
    x = kb.load(kb.add_buffer("in0", np.float64, (1,)))
    two = kb.graph_op(Op.ADD, (kb.const(1.0, np.float64), kb.const(1.0, np.float64)), np.float64)
    kb.graph_op(Op.SIN, (x,), np.float64)       # unused
    product = kb.graph_op(Op.MUL, (x, two), np.float64)
    kb.store(kb.add_buffer("out0", np.float64, (1,), True), product)
    kernel = kb.finish()
    assert [i.op for i in kernel.body] == [Op.LOAD, Op.CONST, Op.MUL, Op.STORE]
    assert kernel.body[1].attr == 2.0
