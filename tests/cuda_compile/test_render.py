"""The CUDA renderer's text: rule table completeness, loop structure, literals, names."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from autojit.errors import InternalError
from autojit.fuse.builder import KernelBuilder
from autojit.ir.kernel import Kernel
from autojit.ir.ops import OP_TABLE, PRIMITIVES, Op
from autojit.lower_gpu import cuda_rule_gaps, cuda_rules, render_cuda
from autojit.lower_gpu.cuda_rules import float_literal, int_literal

F64, F32 = np.dtype("float64"), np.dtype("float32")


def _kernel(strides: tuple[int | None, ...], name: str = "k", buffer: str = "x") -> Kernel:
    loop = tuple((f"n{d}",) for d in range(len(strides)))
    kb = KernelBuilder(name, loop)
    x = kb.load(kb.add_buffer(buffer, F64, strides))
    y = kb.graph_op(Op.SIN, (x,), F64)
    kb.store(kb.add_buffer("out", F64, strides, is_output=True), y)
    return kb.finish()


def test_every_primitive_and_kind_has_a_cuda_rule() -> None:
    assert cuda_rule_gaps() == []


def test_a_missing_rule_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(cuda_rules.CUDA_RULES, (Op.SIN, "f"))
    assert cuda_rule_gaps() == [(Op.SIN, "f")]
    with pytest.raises(InternalError, match="no CUDA rule for sin"):
        render_cuda(_kernel((1,)))


def test_rule_table_has_no_rows_outside_the_op_table() -> None:
    for op, kind in cuda_rules.CUDA_RULES:
        assert op in PRIMITIVES and kind in OP_TABLE[op].primitive_kinds


def test_rank1_kernel_skips_index_decoding() -> None:
    source = render_cuda(_kernel((1,)))
    assert 'extern "C" __global__ void k(' in source
    assert "const double *__restrict__ x" in source and "double *__restrict__ out" in source
    assert "i += step" in source and "(long long)blockIdx.x * blockDim.x" in source
    assert "long long rest" not in source and "%" not in source
    assert "x[i]" in source and "out[i] = " in source
    assert "sin(v0)" in source


def test_rank3_kernel_decodes_and_uses_runtime_strides() -> None:
    source = render_cuda(_kernel((None, 0, 1)))
    assert "long long size0,\n    long long size1,\n    long long size2" in source
    assert "long long st0_0" in source and "long long st1_0" in source
    assert "const long long i2 = rest % size2; rest /= size2;" in source
    assert "x[i0 * st0_0 + i2]" in source      # stride 0: dimension 1 does not appear


def test_float32_math_uses_the_f_suffix() -> None:
    kb = KernelBuilder("k32", (("n",),))
    x = kb.load(kb.add_buffer("x", F32, (1,)))
    kb.store(kb.add_buffer("y", F32, (1,), is_output=True), kb.emit(Op.ATAN2, (x, x), F32))
    assert "atan2f(v0, v0)" in render_cuda(kb.finish())


def test_emulation_entry_is_guarded() -> None:
    source = render_cuda(_kernel((1,)))
    guarded = source.split("#ifdef AUTOJIT_EMULATE", 1)[1]
    assert 'extern "C" void k_emulate(void **data, const long long *meta,' in guarded
    assert "k((const double *)data[0], (double *)data[1], meta[0]);" in guarded


@pytest.mark.parametrize("value, dtype, text", [
    (1.5, F64, "0x1.8000000000000p+0"),
    (-0.0, F64, "-0x0.0p+0"),
    (-0.0, F32, "-0x0.0p+0f"),
    (float("inf"), F64, "aj_f64_bits(0x7ff0000000000000ULL)"),
    (float("-inf"), F32, "aj_f32_bits(0xff800000U)"),
    (float("nan"), F64, "aj_f64_bits(0x7ff8000000000000ULL)"),
    (0.1, F32, "0x1.99999a0000000p-4f"),
    (1e-45, F32, "0x1.0000000000000p-149f"),
])
def test_float_literals_are_exact(value: float, dtype: np.dtype, text: str) -> None:
    assert float_literal(value, dtype) == text


@pytest.mark.parametrize("value, dtype, text", [
    (-(2**63), "int64", "(int64_t)(-9223372036854775807LL - 1)"),
    (2**64 - 1, "uint64", "(uint64_t)18446744073709551615ULL"),
    (-128, "int8", "(int8_t)-128LL"),
    (7, "uint16", "(uint16_t)7ULL"),
])
def test_int_literals_have_the_exact_type(value: int, dtype: str, text: str) -> None:
    assert int_literal(value, np.dtype(dtype)) == text


@pytest.mark.parametrize("name", ["n", "i0", "v3", "fmod", "sinf", "int", "and", "st0_0"])
def test_parameter_names_that_would_clash_are_renamed(name: str) -> None:
    source = render_cuda(_kernel((1,), buffer=name))
    assert "const double *__restrict__ aj_buf0" in source


def test_kernel_name_must_be_an_identifier() -> None:
    with pytest.raises(ValueError, match="identifier"):
        render_cuda(_kernel((1,), name="k-0"))


def test_importing_autojit_imports_neither_cuda_nor_cupy() -> None:
    code = ("import sys, autojit, autojit.lower_gpu; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('cupy', 'cuda')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
