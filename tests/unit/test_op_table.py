"""The op table is complete: every op is reachable, decomposable or rendered by both backends."""

import numpy as np
import pytest

from autojit.ir.decompose import DECOMPOSITIONS
from autojit.ir.ops import OP_TABLE, PRIMITIVES, UFUNC_OPS, Op, OpGroup
from autojit.lower_cpu import llvm_rule_gaps
from autojit.lower_gpu import cuda_rule_gaps

LISTED_UFUNCS = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "cbrt", "square", "reciprocal", "absolute", "sign", "floor", "ceil", "trunc",
    "rint", "hypot", "power", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
    "logical_not", "maximum", "minimum", "fmax", "fmin", "add", "subtract", "multiply",
    "true_divide", "floor_divide", "remainder", "negative", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
    "invert",
]


def test_every_listed_numpy_ufunc_maps_to_an_op():
    missing = [name for name in LISTED_UFUNCS if getattr(np, name) not in UFUNC_OPS]
    assert missing == []


def test_every_graph_op_is_a_primitive_or_decomposes():
    for op in UFUNC_OPS.values():
        assert OP_TABLE[op].is_primitive or op in DECOMPOSITIONS, op


def test_llvm_renderer_has_a_rule_for_every_primitive_and_kind():
    assert llvm_rule_gaps() == []


def test_cuda_renderer_has_a_rule_for_every_primitive_and_kind():
    assert cuda_rule_gaps() == []


@pytest.mark.parametrize("op", list(Op))
def test_table_rows_are_consistent(op):
    info = OP_TABLE[op]
    if info.group in (OpGroup.UNARY, OpGroup.BINARY, OpGroup.TERNARY):
        assert info.arity == {"unary": 1, "binary": 2, "ternary": 3}[info.group.value]
    if info.math_name:
        assert set(info.primitive_kinds) == {"f"}
    assert set(info.primitive_kinds) <= set("biuf")


def test_primitives_are_listed():
    assert Op.SIN in PRIMITIVES and Op.FLOOR_DIVIDE not in PRIMITIVES


def test_llvm_renderer_has_an_accumulator_for_every_reduction_and_kind():
    from autojit.lower_cpu.reduce import llvm_reduce_gaps
    assert llvm_reduce_gaps() == []


def test_both_renderers_combine_every_scan_and_kind():
    from autojit.lower_cpu.scan import llvm_scan_gaps
    from autojit.lower_gpu.render_scan import cuda_scan_gaps
    assert llvm_scan_gaps() == [] and cuda_scan_gaps() == []
