"""Loop nests and layouts (runtime, negative, static and broadcast strides; rank 1-3; empty
loops), vectorisation with libmvec, the JIT's program object, errors, and Numba beside us."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from tests.support.cpu_support import assert_same, run_both

from autojit.errors import CompileError, InternalError
from autojit.fuse.builder import KernelBuilder
from autojit.ir import verify
from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op
from autojit.lower_cpu import CpuProgram, compile_kernel, jit
from autojit.lower_cpu.mathlib import host_vector_isas, svml_routine, vector_variants

F64, BOOL = np.dtype(np.float64), np.dtype(bool)
Strides = tuple[int | None, ...]


def _layout_kernel(rank: int, a: Strides, b: Strides, c: Strides, out: Strides) -> Kernel:
    """``out0 = a * b + c`` (no FMA contraction: must be exact) and ``out1 = a < c``."""
    kb = KernelBuilder(f"layout{rank}", loop_sizes=tuple((f"n{d}",) for d in range(rank)))
    x, y, z = (kb.load(kb.add_buffer(name, F64, s)) for name, s in (("a", a), ("b", b), ("c", c)))
    total = kb.graph_op(Op.ADD, (kb.graph_op(Op.MUL, (x, y), F64), z), F64)
    kb.store(kb.add_buffer("out0", F64, out, is_output=True), total)
    kb.store(kb.add_buffer("out1", BOOL, out, is_output=True), kb.graph_op(Op.LT, (x, z), BOOL))
    return kb.finish()


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    values = np.asarray(np.random.default_rng(seed).normal(size=shape) * 1e3)
    values.flat[3::7] = np.nan   # some NaN, but never in a broadcast scalar
    return values


# Each case: (shape, kernel strides for a, b, c, out, and a function making a, b, c).
Case = tuple[tuple[int, ...], Strides, Strides, Strides, Strides,
             Callable[[tuple[int, ...]], list[np.ndarray]]]
LAYOUTS: dict[str, Case] = {
    "rank1-contiguous": ((1001,), (1,), (1,), (0,), (1,),
                         lambda s: [_data(s, 1), _data(s, 2), _data((1,), 3)]),
    "rank1-runtime-and-negative": ((333,), (None,), (None,), (None,), (None,),
                                   lambda s: [_data((999,), 1)[::3], _data((666,), 2)[::-2],
                                              np.broadcast_to(_data((1,), 3), s)]),
    "rank1-static-stride-2": ((257,), (2,), (-1,), (0,), (1,),
                              lambda s: [_data((514,), 1)[::2], _data((257,), 2)[::-1],
                                         _data((), 3)]),
    "rank2-transposed-and-row": ((7, 33), (None, 1), (None, None), (0, 1), (None, 1),
                                 lambda s: [_data(s, 1), _data(s[::-1], 2).T,
                                            _data(s[1:], 3)]),
    "rank3-mixed": ((3, 5, 17), (None, None, 1), (None, None, None), (None, 0, 1),
                    (None, None, 1),
                    lambda s: [_data(s, 1), _data((3, 5, 34), 2)[::-1, :, ::2],
                               _data((3, 1, 17), 3)]),
    "rank3-broadcast-outer": ((4, 3, 9), (0, None, 1), (None, 0, None), (0, 0, 0),
                              (None, None, 1),
                              lambda s: [_data(s[1:], 1), _data((4, 1, 18), 2)[:, :, ::2],
                                         _data((), 3)]),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layouts_match_reference(name: str) -> None:
    shape, a, b, c, out, make = LAYOUTS[name]
    kernel = _layout_kernel(len(shape), a, b, c, out)
    actual, expected = run_both(kernel, make(shape), shape)
    for got, want in zip(actual, expected, strict=True):
        assert_same(got, want, name)


def test_strided_output_leaves_gaps_untouched() -> None:
    shape = (4, 6, 11)
    kernel = _layout_kernel(3, (None, None, 1), (None, None, 1), (0, 0, 1), (None, None, None))
    backing = [np.full((4, 6, 22), -7.0), np.ones((4, 6, 22), dtype=bool)]
    outputs = [backing[0][:, ::-1, ::2], backing[1][:, :, 1::2]]
    inputs = [_data(shape, 1), _data(shape, 2), _data((11,), 3)]
    actual, expected = run_both(kernel, inputs, shape, outputs=outputs)
    for got, want in zip(actual, expected, strict=True):
        assert_same(got, want, "strided output")
    assert (backing[0][:, ::-1, 1::2] == -7.0).all()
    assert backing[1][:, :, ::2].all()


@pytest.mark.parametrize("shape", [(0,), (0, 4), (4, 0), (0, 3, 5), (2, 0, 5), (2, 3, 0)],
                         ids=str)
def test_empty_loops_run_zero_times(shape: tuple[int, ...]) -> None:
    """Zero-size loops must not touch memory: every buffer is a view of a sentinel array,
    so one stray iteration would change it."""
    rank = len(shape)
    static = (None,) * (rank - 1) + (1,)
    kernel = _layout_kernel(rank, static, static, static, static)
    backing = [np.full(16, 5.0), np.full(16, 6.0), np.full(16, 7.0), np.full(16, -1.0),
               np.zeros(16, dtype=bool)]
    views = [np.lib.stride_tricks.as_strided(b, shape, (b.itemsize,) * rank)
             for b in backing]
    run_both(kernel, views[:3], shape, outputs=views[3:])
    assert (backing[3] == -1.0).all() and not backing[4].any()


def _chain_kernel(dtype: np.dtype) -> Kernel:
    kb = KernelBuilder(f"chain_{np.dtype(dtype).name}", loop_sizes=(("n0",),))
    x = kb.load(kb.add_buffer("in0", dtype, (1,)))
    for op in (Op.SIN, Op.EXP, Op.COS, Op.TANH):
        x = kb.graph_op(op, (x,), dtype)
    kb.store(kb.add_buffer("out0", dtype, (1,), is_output=True), x)
    return kb.finish()


_HAS_AVX2_LIBMVEC = any(letter in "de" for letter, _ in host_vector_isas()) \
    and bool(vector_variants("sin", 8, 1))


@pytest.mark.skipif(not _HAS_AVX2_LIBMVEC, reason="needs AVX2 and glibc's libmvec")
@pytest.mark.parametrize(("dtype", "scalar", "min_lanes"), [(F64, "double", 4),
                                                            (np.dtype("f4"), "float", 8)])
def test_math_chain_vectorises_with_libmvec(dtype: np.dtype, scalar: str,
                                            min_lanes: int) -> None:
    program = compile_kernel(_chain_kernel(dtype))
    ir = program.llvm_ir_optimized
    lanes = {int(n) for n in re.findall(rf"<(\d+) x {scalar}>", ir)}
    assert lanes and max(lanes) >= min_lanes, f"no <{min_lanes} x {scalar}> vector loop"
    suffix = "f" if scalar == "float" else ""
    calls = re.findall(rf"call <(\d+) x {scalar}> @_ZGV([de])N\d+v_(sin|exp|cos|tanh){suffix}\(",
                       ir)
    # where NumPy computes one with its SVML routine, kernels call that (lower_cpu/svml.py)
    svml = {name for name in ("sin", "exp", "cos", "tanh")
            if svml_routine(name, dtype.itemsize)}
    assert {name for _, _, name in calls} == {"sin", "exp", "cos", "tanh"} - svml
    assert all(int(n) >= min_lanes for n, _, _ in calls)
    for name in svml:
        assert f"@autojit_svml_{svml_routine(name, dtype.itemsize)}(" in ir
    x = np.linspace(-4, 4, 10_007).astype(dtype)
    (actual,), _ = run_both(_chain_kernel(dtype), [x], x.shape)
    # Composition amplifies each call's few-ULP error (cos near its zeros); per-function
    # ULP bounds are tested in test_lower_cpu.py, this only checks the wiring.
    tolerance = 1e-13 if dtype == F64 else 1e-5
    np.testing.assert_allclose(actual, np.tanh(np.cos(np.exp(np.sin(x)))),
                               rtol=tolerance, atol=tolerance)


def test_program_object() -> None:
    jit.forget_kernels()   # identical kernels compiled by earlier tests would lend their code
    program = compile_kernel(_chain_kernel(F64))
    assert isinstance(program, CpuProgram)
    assert program.name == "chain_float64" and program.symbol.startswith("chain_float64")
    assert isinstance(program.address, int) and program.address
    assert f'define void @"{program.symbol}"(ptr %"data", ptr %"meta")' in program.llvm_ir
    assert "alwaysinline" in program.llvm_ir and "noalias" in program.llvm_ir
    assert program.symbol in program.asm
    again = compile_kernel(_chain_kernel(F64))   # the same kernel: its code is reused
    assert (again.symbol, again.address) == (program.symbol, program.address)
    kb = KernelBuilder("chain_float64", loop_sizes=(("n0",),))   # same name, other body
    kb.store(kb.add_buffer("out0", F64, (1,), is_output=True),
             kb.graph_op(Op.SIN, (kb.load(kb.add_buffer("in0", F64, (1,))),), F64))
    other = compile_kernel(kb.finish())
    assert other.symbol != program.symbol and other.address != program.address


def test_missing_rule_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "_checks", False)   # else verify refuses sin on int32 first
    kb = KernelBuilder("bad", loop_sizes=(("n0",),))
    x = kb.load(kb.add_buffer("in0", np.int32, (1,)))
    kb.store(kb.add_buffer("out0", np.int32, (1,), is_output=True),
             kb.emit(Op.SIN, (x,), np.int32))
    with pytest.raises(InternalError, match="no LLVM rule for sin on int32"):
        compile_kernel(kb.finish())


def test_llvm_rejection_carries_numbered_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "render_llvm", lambda kernel, symbol: "define void @f() {\n}\n")
    jit.forget_kernels()   # an identical kernel compiled earlier would be reused unrendered
    with pytest.raises(CompileError) as info:
        compile_kernel(_chain_kernel(F64))
    message = str(info.value)
    assert "    1  define void @f() {" in message and "compiler log" in message


def test_coexists_with_numba() -> None:
    import numba  # in the test extra: its absence is a failure, not a skip

    @numba.njit(cache=False)
    def total(values: np.ndarray) -> float:
        return np.sin(values).sum()

    x = np.linspace(0.0, 1.0, 1000)
    before = total(x)
    (actual,), (expected,) = run_both(_chain_kernel(F64), [x], x.shape)
    np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=1e-13)

    @numba.njit(cache=False)
    def later(values: np.ndarray) -> float:
        return np.cos(values).sum()

    assert total(x) == before
    np.testing.assert_allclose(later(x), np.cos(x).sum(), rtol=1e-12)


def test_without_libmvec_scalar_libm_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing vector variant leaves the plain libm call: slower, same answers."""
    from autojit.lower_cpu import mathlib
    monkeypatch.setattr(mathlib, "vector_variants", lambda name, itemsize, arity: ())
    # and no NumPy SVML (AVX-512 machines call it for exp: lower_cpu/svml.py)
    monkeypatch.setattr(mathlib, "svml_routine", lambda name, itemsize: None)
    program = compile_kernel(_chain_kernel(F64))
    assert "_ZGV" not in program.llvm_ir and "vector-function-abi-variant" not in program.llvm_ir
    assert "call double @autojit_libm_sin(" in program.llvm_ir_optimized
    x = np.linspace(-4, 4, 1001)
    (actual,), _ = run_both(_chain_kernel(F64), [x], x.shape)
    np.testing.assert_allclose(actual, np.tanh(np.cos(np.exp(np.sin(x)))), rtol=1e-13,
                               atol=1e-13)
