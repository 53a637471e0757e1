"""Memory-layout test kernels: ranks 0-3, compile-time and runtime strides, negative
strides, broadcasting (stride 0, known or at run time), lower-rank inputs, strided outputs
inside a sentinel-filled base (catches stray writes), and empty loops.

Every kernel computes ``out = x * f64(y) + 1.5`` and ``out2 = y - 3`` (int32, wrapping).
"""

from __future__ import annotations

import numpy as np

from tests.support.cuda_cases import Case, OutputFactory

from autojit.fuse.builder import KernelBuilder
from autojit.ir.ops import Op

F64, I32 = np.dtype("float64"), np.dtype("int32")
SENTINEL = -12345


def _x(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(sum(shape) + len(shape))
    return np.asarray(rng.standard_normal(shape) * 100.0)


def _y(shape: tuple[int, ...]) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.int64) * 7919 - 2**31
    return values.astype(I32).reshape(shape)


def _inside(base_shape: tuple[int, ...], dtype: np.dtype,
            view: object = Ellipsis, transpose: tuple[int, ...] | None = None) -> OutputFactory:
    """Return a factory of (sentinel-filled base, the view of it the kernel writes)."""
    def make() -> tuple[np.ndarray, np.ndarray]:
        base = np.full(base_shape, SENTINEL, dtype=dtype)
        window = base[view]
        return base, window.transpose(transpose) if transpose else window
    return make


def _layout(name: str, loop: tuple[tuple[str, ...], ...],
            strides: tuple[tuple[int | None, ...], ...]) -> KernelBuilder:
    """Build the shared body over buffers x, y, out, out2 with the given strides."""
    kb = KernelBuilder(name, loop)
    x = kb.load(kb.add_buffer("x", F64, strides[0]))
    y = kb.load(kb.add_buffer("y", I32, strides[1]))
    product = kb.graph_op(Op.MUL, (x, kb.cast(y, F64)), F64)
    kb.store(kb.add_buffer("out", F64, strides[2], is_output=True),
             kb.graph_op(Op.ADD, (product, kb.const(1.5, F64)), F64))
    kb.store(kb.add_buffer("out2", I32, strides[3], is_output=True),
             kb.graph_op(Op.SUB, (y, kb.const(3, I32)), I32))
    return kb


def _case(name: str, loop: tuple[tuple[str, ...], ...], sizes: dict[str, int],
          strides: tuple[tuple[int | None, ...], ...], x: np.ndarray, y: np.ndarray,
          out: OutputFactory | None = None, out2: OutputFactory | None = None) -> Case:
    kb = _layout(name, loop, strides)
    outputs = {b: f for b, f in ((2, out), (3, out2)) if f is not None}
    return Case(kb.finish(), sizes, {0: x, 1: y}, outputs=outputs)


R = None   # a stride that arrives at run time


def layout_cases() -> list[Case]:
    """Return the layout cases (see the module docstring)."""
    n1 = (("n0",),)
    n2 = (("n0",), ("n1",))
    n3 = (("n0",), ("n1",), ("n2",))
    big = _x((12, 10, 40))
    return [
        _case("lay_r1_contig", n1, {"n0": 50}, ((1,), (1,), (1,), (1,)), _x((50,)), _y((50,))),
        _case("lay_r1_neg_bcast", n1, {"n0": 23}, ((R,), (0,), (R,), (1,)),
              _x((60,))[::-2][:23], _y((1,)), out=_inside((80,), F64, slice(None, 69, 3))),
        _case("lay_r2_strided", n2, {"n0": 5, "n1": 9}, ((R, 1), (R, R), (R, 1), (R, R)),
              big[0, 1:6, 2:11], _y((9, 5)).T,
              out=_inside((10, 12), F64, (slice(None, None, 2), slice(None, 9))),
              out2=_inside((7, 20), I32, (slice(4, None, -1), slice(17, None, -2)))),
        _case("lay_r2_bcast", n2, {"n0": 5, "n1": 9}, ((0, 1), (R, R), (9, 1), (R, 1)),
              _x((9,)), np.broadcast_to(_y((5, 1)), (5, 9))),
        _case("lay_r3_mixed", n3, {"n0": 3, "n1": 4, "n2": 6}, ((R, R, R), (R, R, R),
                                                                (R, R, R), (24, 6, 1)),
              big[::-2, 1:9:2, ::-3][:3, :4, :6], _y((4, 6)),
              out=_inside((6, 4, 3), F64, transpose=(2, 1, 0))),
        _case("lay_r2_empty", n2, {"n0": 0, "n1": 7}, ((R, 1),) * 4, _x((0, 7)), _y((0, 7))),
        _case("lay_r3_empty_mid", n3, {"n0": 3, "n1": 0, "n2": 5}, ((R, R, 1),) * 4,
              _x((3, 0, 5)), _y((3, 0, 5))),
        _case("lay_r1_empty", n1, {"n0": 0}, ((1,),) * 4, _x((0,)), _y((0,))),
        _case("lay_r0", (), {}, ((),) * 4, _x(()), _y(())),
        _case("lay_symbol_product", (("a", "b"),), {"a": 6, "b": 7}, ((1,),) * 4,
              _x((42,)), _y((42,))),
        _case("lay_r2_many", n2, {"n0": 37, "n1": 29}, ((29, 1),) * 4,
              _x((37, 29)), _y((37, 29))),
    ]
