"""The backend-neutral semantics in ``autojit/ir/ops.py``: one combine spec per reduce and
scan kind, one conversion table for casts, one ``rule_kind`` and one cost column, each
rendered or read by both backends (LLVM and CUDA C) instead of being written twice."""

from __future__ import annotations

import numpy as np
import pytest

from autojit.ir.ops import (
    ARG_KINDS,
    COMBINES,
    CONVERSIONS,
    OP_TABLE,
    REDUCE_KINDS,
    SCAN_KINDS,
    Conversion,
    Op,
    Reduction,
    ZeroSign,
    rule_kind,
    zero_coded,
)
from autojit.lower_cpu import llvm_rules, threads
from autojit.lower_cpu import reduce as cpu_reduce
from autojit.lower_cpu import scan as cpu_scan
from autojit.lower_gpu import cuda_rules
from autojit.routing import costmodel


def test_every_reduction_and_scan_names_one_combine() -> None:
    assert set(COMBINES) == set(REDUCE_KINDS)
    assert all(info.combine is COMBINES[name] for name, info in REDUCE_KINDS.items())
    for name, info in SCAN_KINDS.items():   # a scan combines as the reduction of its name
        assert info.combine is COMBINES[Reduction(name)]
    assert {name for name, spec in COMBINES.items() if spec.position} == ARG_KINDS


def test_both_renderers_render_every_combine() -> None:
    assert cpu_reduce.llvm_reduce_gaps() == [] and cpu_scan.llvm_scan_gaps() == []
    assert cuda_rules.cuda_reduce_gaps() == []
    assert set(cpu_reduce.COMBINE) | set(cpu_reduce.ARG_COMPARE) == set(REDUCE_KINDS)


def test_reduce_kind_names_stay_the_strings_kernels_print() -> None:
    """StrEnum members equal, hash and format as today's strings: printed IR, cache keys
    and ``Instr.attr`` lookups with plain strings are unchanged."""
    for member in Reduction:
        assert member == member.value and f"{member}" == member.value
        assert REDUCE_KINDS[member.value] is REDUCE_KINDS[member]
    assert "argmax" in ARG_KINDS and "max" not in ARG_KINDS


def _last_zero_sign(row: np.ndarray) -> bool:
    return bool(np.signbit(row[row == 0][-1]))


@pytest.mark.parametrize("seed", range(5))
def test_the_last_zero_code_merges_in_any_grouping(seed: int) -> None:
    """``ops.zero_coded``'s code (2p+1 for -0, 2p+2 for +0, else 0) merged by max in any
    grouping of the row (thread chunks, warp trees) names the row's last zero's sign."""
    rng = np.random.default_rng(seed)
    row = np.where(rng.random(200) < 0.5, 0.0, -0.0)
    row[rng.random(200) < 0.3] = -1.0
    codes = np.where(row == 0, 2 * np.arange(row.size) + np.where(np.signbit(row), 1, 2), 0)
    merged = max(int(part.max()) for part in np.array_split(rng.permutation(codes), 7))
    assert bool(merged & 1) == _last_zero_sign(row)
    assert zero_coded("max", np.dtype("f4")) and zero_coded("min", np.dtype("f8"))
    assert not zero_coded("max", np.dtype("i8")) and not zero_coded("fmax", np.dtype("f8"))
    assert not zero_coded("max", np.dtype("f8"), sign_matters=False)
    assert {n for n, s in COMBINES.items() if s.zero_sign is ZeroSign.LAST_ZERO} == {"max",
                                                                                    "min"}


def test_casts_come_from_one_conversion_table() -> None:
    assert set(CONVERSIONS) == {(s, t) for s in "biuf" for t in "biuf"}
    assert set(llvm_rules.CAST_RULES) == set(CONVERSIONS)
    assert set(cuda_rules._CONVERSION_RULES) == set(Conversion)
    assert CONVERSIONS["f", "i"] is Conversion.SATURATE and CONVERSIONS["f", "b"] is (
        Conversion.NONZERO) and CONVERSIONS["i", "u"] is Conversion.WRAP
    f8, i4, b = np.dtype("f8"), np.dtype("i4"), np.dtype(bool)
    operands = cuda_rules.Operands(i4, f8, ("v1",))
    assert cuda_rules.CUDA_RULES[Op.CAST, rule_kind(Op.CAST, i4, f8)](operands).startswith(
        "aj_sat_cast<int32_t, double>(v1")
    assert cuda_rules.CUDA_RULES[Op.CAST, "f"](cuda_rules.Operands(b, f8, ("v1",))) == "(v1 != 0)"


def test_rule_kind_is_the_operand_s_for_comparisons_and_casts() -> None:
    f4, u2, b = np.dtype("f4"), np.dtype("u2"), np.dtype(bool)
    assert rule_kind(Op.LT, b, f4) == "f"
    assert rule_kind(Op.CAST, f4, u2) == "u"
    assert rule_kind(Op.ADD, f4, f4) == "f" and rule_kind(Op.SELECT, f4, b) == "f"
    assert rule_kind(Op.CONST, u2, None) == "u"


def test_one_cost_column_weighs_kernels_for_the_router_and_the_thread_splitter() -> None:
    for op, info in OP_TABLE.items():
        assert costmodel.flop_weight(op) == info.cost
        memory = 1.0 if op in (Op.LOAD, Op.STORE) else 0.0
        assert threads._instr_cost(op) == info.cost + memory
    assert OP_TABLE[Op.EXP].cost > OP_TABLE[Op.DIV].cost > OP_TABLE[Op.ADD].cost > 0
    assert OP_TABLE[Op.FABS].cost == OP_TABLE[Op.ADD].cost


def test_both_renderers_spell_constants_from_one_exact_value() -> None:
    """``ops.exact_constant``: bools are ``!= 0``, integers wrap into their dtype's range,
    floats round as NumPy's astype; LLVM and CUDA literals spell that one value."""
    from autojit.ir.ops import exact_constant
    u8, i8, f4, b = np.dtype("u8"), np.dtype("i1"), np.dtype("f4"), np.dtype(bool)
    assert exact_constant(2**64 - 1, u8) == 2**64 - 1 and exact_constant(200, i8) == -56
    assert exact_constant(2, b) is True and np.signbit(exact_constant(-0.0, f4))
    assert exact_constant(0.1, f4) == np.float32(0.1)
    assert str(llvm_rules.constant(u8, 2**64 - 1)) == "i64 -1"
    assert str(llvm_rules.constant(i8, 200)) == "i8 -56"
    assert str(llvm_rules.constant(b, 2)) == "i1 1"
    assert cuda_rules.int_literal(200, i8) == "(int8_t)-56LL"
    assert cuda_rules.float_literal(-0.0, f4) == "-0x0.0p+0f"
    assert cuda_rules.CUDA_RULES[Op.CONST, "b"](cuda_rules.Operands(b, b, (), 2)) == "true"
