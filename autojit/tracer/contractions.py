"""Matrix products: ``@``, ``np.matmul``, ``np.dot``, ``np.inner``, ``np.outer``, and
``np.einsum`` for the contractions those spell. A product is one MATMUL node, run by the
array library's own BLAS (NumPy: OpenBLAS; CuPy: cuBLAS) into a buffer the plan owns; the
elementwise work after it (bias, activation, scaling) fuses into one pass over it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autojit.errors import TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import Dim, TensorType, broadcast_dims
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import current_trace, user_location


def _as_proxy(value: Any) -> Proxy:
    if not isinstance(value, Proxy):
        raise UnsupportedError("matrix products with constant arrays are not supported",
                               user_location(4))
    return value


def _result_shape(state: Any, a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """np.matmul's shape rule on symbolic shapes (contracted sizes must be equal)."""
    if not a or not b:
        raise TraceError("matmul: input operand does not have enough dimensions",
                         user_location(4))
    if len(a) == 1 and len(b) == 1:
        state.unify(a[0], b[0])
        return ()
    if len(a) == 1:
        state.unify(a[0], b[-2])
        return b[:-2] + (b[-1],)
    if len(b) == 1:
        state.unify(a[-1], b[0])
        return a[:-1]
    state.unify(a[-1], b[-2])
    return broadcast_dims([a[:-2], b[:-2]], state.broadcast) + (a[-2], b[-1])


def matmul(a: Any, b: Any) -> Proxy:
    """Record ``a @ b``; return the product's proxy."""
    a, b = _as_proxy(a), _as_proxy(b)
    state = current_trace()
    if a.ndim == 0 or b.ndim == 0:
        raise TraceError("matmul: input operand does not have enough dimensions",
                         user_location(3))
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype.kind not in "biuf":
        raise UnsupportedError(f"matmul of {dtype}", user_location(3))
    a_cast = a if a.dtype == dtype else a.astype(dtype)
    b_cast = b if b.dtype == dtype else b.astype(dtype)
    shape = _result_shape(state, a.type.shape, b.type.shape)
    type_ = TensorType(dtype, shape)
    node = state.add_node(Op.MATMUL, (a_cast.node, b_cast.node), type_, (), user_location(3))
    return Proxy(node, type_, is_scalar=not shape)


def _dot(a: Any, b: Any, out: Any = None) -> Proxy:
    if out is not None:
        raise UnsupportedError("np.dot(..., out=...) is not supported", user_location(3))
    if isinstance(a, Proxy) and isinstance(b, Proxy) and a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b)
    raise UnsupportedError("np.dot beyond 2-D (or with scalars) is not supported",
                           user_location(3))


def _inner(a: Any, b: Any) -> Proxy:
    """``np.inner`` contracts the last axes: a matmul with ``b`` transposed up to 2-D; of a
    0-d operand a product; beyond 2-D a tensordot (shape ``a.shape[:-1] + b.shape[:-1]``,
    not matmul's batch broadcasting), which is not compiled."""
    ndims = tuple(getattr(x, "ndim", None) for x in (a, b))
    ndims = tuple(np.ndim(x) if n is None else n for x, n in zip((a, b), ndims))
    if 0 in ndims:
        return np.multiply(a, b)
    if max(ndims) > 2:
        raise UnsupportedError("np.inner of arrays with more than 2 dimensions",
                               user_location(3))
    if ndims[1] == 2:
        return matmul(a, np.swapaxes(b, -1, -2))
    return matmul(a, b)


def _outer(a: Any, b: Any, out: Any = None) -> Proxy:
    if out is not None:
        raise UnsupportedError("np.outer(..., out=...) is not supported", user_location(3))
    return np.ravel(a)[:, None] * np.ravel(b)[None, :]


_EINSUM_MATMULS = {"ij,jk->ik": lambda a, b: matmul(a, b),
                   "ij,kj->ik": lambda a, b: matmul(a, np.swapaxes(b, 0, 1)),
                   "ji,jk->ik": lambda a, b: matmul(np.swapaxes(a, 0, 1), b),
                   "bij,bjk->bik": lambda a, b: matmul(a, b),
                   "i,i->": lambda a, b: matmul(a, b),
                   "ij,j->i": lambda a, b: matmul(a, b),
                   "i,j->ij": lambda a, b: _outer(a, b)}


def _einsum(subscripts: Any, *operands: Any, **kwargs: Any) -> Proxy:
    rule = _EINSUM_MATMULS.get(str(subscripts).replace(" ", ""))
    if rule is None or len(operands) != 2 or kwargs:
        raise UnsupportedError(f"np.einsum({subscripts!r}) is not supported yet",
                               user_location(3))
    return rule(*operands)


CONTRACTION_HANDLERS: dict[Callable, Callable[..., Proxy]] = {
    np.dot: _dot, np.inner: _inner, np.outer: _outer, np.einsum: _einsum,
}
