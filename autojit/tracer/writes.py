"""Writes: ``a[1:-1] = expr``, ``out[...] = expr``, ``a += expr``, ``np.add(a, b, out=c)``.

NumPy evaluates the right side completely, then writes it into the target. A write into
an argument is a WRITE node: its inputs are the target (a VIEW of the argument's current
version, or the argument itself) and the value; the node *is* the argument's next version,
so later reads see the written values and kernels are ordered after it. The caller's
array receives the write. A view of the argument taken before the write, read after it,
is the same view of the new version (NumPy shows the new values through it); a copy taken
before (a scalar ``a[i]``, a reshape that may copy) is refused, not guessed.

A write into an array computed inside the function (a scratch array: ``np.zeros``,
``a.copy()``, ``y = a + 1``) is the same WRITE node with attribute ``root`` (the computed
node whose memory it is) instead of ``param``: the buffer plan keeps that value in a buffer
of its own for the whole call and writes each version there, in place (every later read of
the array in the trace reads its latest version, so no old values are needed; a value that
is also another variable's, one node for two equal computations, is copied first). Updating
such a value that no view shares (``y = x + 1; y *= 2``) rebinds it to the result cast and
broadcast into its shape, which lets it fuse; with views, it is a write.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.errors import BroadcastError, TraceError, UnsupportedError
from autojit.ir.ops import Op
from autojit.ir.types import TensorType, broadcast_dims
from autojit.tracer.host import HostScalar
from autojit.tracer.proxy import Proxy
from autojit.tracer.state import aliases_base, current_trace, user_location


def written_param(state: Any, node_id: int) -> int | None:
    """Return the argument index whose memory ``node_id`` is (or views), else None."""
    return state.memory_of.get(node_id)     # indexed as nodes are added: chains grow long


def _assigned(value: Any, dtype: np.dtype) -> Any:
    """Return ``value`` as NumPy's ``a[...] = value`` stores it into ``dtype`` (a Python or
    NumPy scalar goes through Python: 300 into int8 or NaN into an integer raises)."""
    cell = np.ndarray((), dtype)   # not np.empty: creation functions are traced now
    try:
        cell[...] = value
    except (OverflowError, ValueError, TypeError) as exc:
        raise TraceError(f"{type(exc).__name__}: {exc}", user_location(5)) from None
    return cell.item()


def _value_proxy(value: Any, dtype: np.dtype) -> Proxy:
    if isinstance(value, HostScalar):   # converted per call as NumPy converts it
        node = current_trace().host_input(value.ref, dtype, value.python_type,
                                          ufunc_operand=False)
        return Proxy(node, TensorType(dtype, ()), is_scalar=True)
    if isinstance(value, Proxy):
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, np.ndarray) and value.ndim:
        raise UnsupportedError("writing an array constant is not supported", user_location(4))
    from autojit.tracer.creation import _filled
    return _filled((), _assigned(value, dtype), dtype)


def write(target: Proxy, key: Any, value: Any) -> None:
    """Record ``target[key] = value`` (``key`` None: the whole array) into an argument, or
    into an array computed inside the function (a scratch array, ``_scratch_memory``)."""
    state = current_trace()
    target.node = state.rebase(target.node, user_location(3))   # its memory now
    param = written_param(state, target.node)
    if param is None or target.is_scalar or target.weak is not None:
        raise UnsupportedError("writing into a constant or a NumPy scalar is not supported",
                               user_location(3))
    if param >= 0 and state.params_kind[param] != "array":
        raise UnsupportedError("writing into a scalar argument", user_location(3))
    if not _aliases_argument(state, target.node):
        raise UnsupportedError("writing into a reshape (NumPy may write into a copy) is not "
                               "supported", user_location(3))
    if param < 0:
        param = _scratch_memory(state, target)
    from autojit.tracer.views import getitem
    if isinstance(key, Proxy) and key.dtype == np.bool_:
        same_shape = tuple(map(state.find, key.type.shape)) == tuple(
            map(state.find, target.type.shape))
        scalar = isinstance(value, HostScalar) or (
            np.ndim(value) == 0 and getattr(value, "ndim", 0) == 0)
        if not same_shape or not scalar:
            raise UnsupportedError("masked assignment of arrays (or with a mask of another "
                                   "shape) is not supported yet", user_location(3))
        # a[mask] = scalar is a[...] = where(mask, scalar, a): no gather or scatter; the
        # scalar is stored as a[...] = scalar stores it (300 into int8 raises)
        if not isinstance(value, Proxy):
            value = _value_proxy(value, target.dtype)
        return write(target, None, np.where(key, value, target))
    region = target if key is None else getitem(target, key)
    _check_stored_value(region, value)
    source = _value_proxy(value, target.dtype)
    if source.node == region.node and state.nodes[state.current_version(param)].op is Op.WRITE:
        # ``x[k] = x[k]`` (Python's store after ``x[k] += v``): no value changes, and the
        # write before it already stands for NumPy's read-only check; no copy kernel
        return
    # a[...] = a changes no value but is still a write: NumPy refuses a read-only a
    if source.node != region.node and written_param(state, source.node) == param:
        # the value is the target's own memory seen otherwise (a[::-1] = a, a[1:] = a[:-1]):
        # NumPy evaluates the right side first, so it is copied before the write
        from autojit.tracer.numpy_map import astype
        source = astype(source, source.dtype)
    extra = source.ndim - region.ndim
    if extra > 0 and all(state.as_one(d) for d in source.type.shape[:extra]):
        source = getitem(source, (0,) * extra)   # NumPy drops leading size-1 dimensions
    shape = broadcast_dims([region.type.shape, source.type.shape], state.broadcast)
    if len(shape) == region.ndim:   # a derived size 1 written into a size 1 stays 1
        for dim, want in zip(shape, region.type.shape):
            if state.find(want) == 1:
                state.as_one(dim)
    if tuple(map(state.find, shape)) != tuple(map(state.find, region.type.shape)):
        # sizes decide this (a view's may differ next call): not cached as a fallback
        raise BroadcastError(f"could not broadcast input array from shape "
                             f"{source.type.shape} into shape {region.type.shape}",
                             user_location(3))
    source = predicated(state, source, region)
    readers = tuple(sorted(state.readers_of_param(param)))
    version = state.nodes[state.current_version(param)].type   # the whole array
    where = ("param", param) if param >= 0 else ("root", -1 - param)
    node = state.add_node(Op.WRITE, (region.node, source.node), version,
                          (("after", readers), where), user_location(3))
    state.retire(param)
    # the caller's variable now names the new version (a view: the same view of it)
    target.node = state.rebase(target.node) if state.nodes[target.node].op is Op.VIEW else node


def _scratch_memory(state: Any, target: Proxy) -> int:
    """Return the memory key a write into computed ``target`` writes into. Each write is
    the array's next version (a WRITE node the buffer plan runs in place, in the array's
    own buffer); the array's views taken before it see it (``TraceState.rebase``), as
    NumPy's do. Before the first write, an array that is also another value (the tracer
    made one node of two equal computations, ``x = a.copy(); y = a.copy()``) or a constant
    gets a copy of its own to write into; with views of it taken already, which of the two
    each view shows is not known: that runs as Python."""
    node = state.nodes[target.node]
    while node.op is Op.VIEW:
        if node.id in state.view_copies:
            raise UnsupportedError("writing into a reshape (NumPy may write into a copy) is "
                                   "not supported", user_location(4))
        node = state.nodes[node.inputs[0]]
    memory = state.memory_of[node.id]
    if node.op is Op.WRITE or node.id in state.view_copies or node.id not in state.reused:
        if node.id in state.view_copies:
            raise UnsupportedError("writing into a reshape (NumPy may write into a copy) is "
                                   "not supported", user_location(4))
        return memory
    if target.node != node.id or len(state.param_memory.get(memory, ())) > 1:
        raise UnsupportedError("writing into an array that is also another value (the same "
                               "computation twice) after views of it were taken is not "
                               "supported", user_location(4))
    from autojit.tracer.creation import copied
    target.node = copied(target, False, "scratch_copy").node
    return state.memory_of[target.node]


def _check_stored_value(region: Proxy, value: Any) -> None:
    """What NumPy's ``a[...] = value`` refuses or converts otherwise than an array cast:
    an array into one element (``a[0] = a + a``: ValueError, whatever its size), and a
    NumPy scalar into a signed integer array (converted through Python: ``np.int64(300)``
    into int8 raises OverflowError, NaN ValueError; measured on NumPy 2.4: unsigned and
    float targets, and safe casts, store as the array cast does)."""
    ndim = value.ndim if isinstance(value, Proxy) else (
        0 if isinstance(value, HostScalar) else np.ndim(value))
    if region.is_scalar and ndim > 0:
        raise TraceError("ValueError: setting an array element with a sequence.",
                         user_location(4))
    if isinstance(value, Proxy) and value.is_scalar and region.dtype.kind == "i" and \
            not np.can_cast(value.dtype, region.dtype, casting="safe"):
        raise UnsupportedError(f"storing a NumPy {value.dtype} scalar into a "
                               f"{region.dtype} array (NumPy converts it through Python: "
                               "out-of-range values and NaN raise)", user_location(4))


def _aliases_argument(state: Any, node_id: int) -> bool:
    """Return True when ``node_id`` is an argument's memory through views only."""
    node = state.nodes[node_id]
    while node.op is Op.VIEW:
        base = state.nodes[node.inputs[0]]
        if not aliases_base(node.attr("step"), base.type.ndim):
            return False
        node = base
    return True


def predicated(state: Any, new: Proxy, old: Proxy) -> Proxy:
    """``new`` as stored in a branch of an ``if`` on a traced value (``state.predicate()``):
    the new values where the branch runs, the old ones (bit for bit) where it does not;
    ``new`` itself outside such a branch."""
    if state.predicate is None:
        return new
    from autojit.tracer.numpy_map import make_elementwise
    dtype = old.dtype
    return make_elementwise(Op.SELECT, (state.predicate(), new, old),
                            (np.dtype(bool), dtype, dtype), dtype, is_scalar=False)


def immutable(state: Any, target: Proxy) -> bool:
    """Whether ``target op= v`` rebinds the name (a NumPy scalar, a Python number, a scalar
    argument) instead of writing into an array."""
    param = written_param(state, target.node)
    return target.is_scalar or target.weak is not None or (
        param is not None and param >= 0 and state.params_kind[param] != "array")


def augmented(target: Proxy, ufunc: np.ufunc, other: Any) -> Proxy:
    """``target op= other``: NumPy's ``ufunc(target, other, out=target)`` (same_kind)."""
    return augmented_into(target, ufunc(target, other))


def augmented_into(target: Proxy, result: Proxy) -> Proxy:
    """Store ``result`` into ``target`` as a ufunc's ``out=`` does; return ``target``.

    NumPy scalars (and Python numbers) are immutable: ``s += 1.5`` just rebinds ``s``."""
    state = current_trace()
    param = written_param(state, target.node)
    if immutable(state, target):
        target.node, target.type = result.node, result.type
        target.weak, target.is_scalar = result.weak, result.is_scalar
        return target
    if not np.can_cast(result.dtype, target.dtype, casting="same_kind"):
        raise TraceError(f"Cannot cast ufunc output from {result.dtype} to {target.dtype} "
                         "with casting rule 'same_kind'", user_location(3))
    _check_output_shape(state, target.type, result.type)
    if param is None or (param < 0 and not _shared_local(state, target.node)):
        dtype, stored = target.dtype, result
        if tuple(map(state.find, result.type.shape)) != tuple(map(state.find, target.type.shape)):
            from autojit.tracer.numpy_map import make_elementwise
            # broadcast into the local array's own shape (a SELECT of a constant True:
            # no arithmetic touches the values, zero signs and NaNs stay)
            stored = make_elementwise(Op.SELECT, (np.True_, result, target),
                                      (np.dtype(bool), dtype, dtype), dtype, is_scalar=False)
        elif stored.dtype != dtype:
            stored = stored.astype(dtype)
        stored = predicated(state, stored, target)
        target.node = stored.node       # a local value nothing else sees: rebind it
        return target
    write(target, None, result)
    return target


def _element_copy(step: tuple[str, Any], base: Any) -> bool:
    """Whether NumPy's ``step`` of ``base`` is a scalar copy (``v[0]`` of a 1-D ``v``), not
    a view: it keeps the values it had."""
    return step[0] == "getitem" and not aliases_base(step, base.type.ndim)


def _check_output_shape(state: Any, out: TensorType, result: TensorType) -> None:
    """A ufunc's ``out=`` (and ``a += b``) must hold the broadcast result as it is: its
    shape is the broadcast of the inputs with it (no leading size-1 axis dropped, unlike
    ``a[...] = b``), else NumPy's ValueError (non-broadcastable output operand)."""
    problem = result.ndim > out.ndim
    if not problem:
        shape = broadcast_dims([out.shape, result.shape], state.broadcast)
        for dim, want in zip(shape, out.shape):
            if state.find(want) == 1:
                state.as_one(dim)
        problem = tuple(map(state.find, shape)) != tuple(map(state.find, out.shape))
    if problem:   # sizes decide this: not cached as a fallback
        raise BroadcastError(f"non-broadcastable output operand with shape {out.shape} "
                             f"doesn't match the broadcast shape {result.shape}",
                             user_location(4))


def _shared_local(state: Any, node_id: int) -> bool:
    """An in-place update of a computed array is modelled as rebinding its variable to the
    new values when no view shares the array's memory, nor did before (the array itself,
    never written, with no view taken but scalar copies); otherwise (``w = v.T; v += 1``
    must show the new values in ``w``, ``w += 1`` must change ``v``) it is a write."""
    node = state.nodes[node_id]
    if node.op in (Op.VIEW, Op.WRITE) or node_id in state.view_copies:
        return True
    others = (state.nodes[n] for n in state.param_memory.get(state.memory_of[node_id], ())
              if n != node_id)
    return any(n.op is not Op.VIEW or not _element_copy(n.attr("step"),
                                                        state.nodes[n.inputs[0]])
               for n in others)
