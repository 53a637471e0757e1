"""View steps (``("getitem", key)``, ``("transpose", axes)``, ``("reshape", shape)``,
``("ravel", None)``), applied with the array library itself so indexing follows NumPy's
rules exactly. A reshape views its base whenever the strides allow; a ravel only when the
base is C-contiguous (else it copies, as ``np.ravel`` does).

An index or slice bound of a getitem key may be a :class:`ScalarRef`: a Python int the
call passes (an argument, or a host prologue value, ``x[i:j]``, ``x[n - 2]``), read at
each call (:func:`resolve_step`), so Python's rules for negatives and clamping are
NumPy's own, per call; so may a size of a reshape (``x.reshape(n, -1)``, NumPy's errors
for sizes that do not fit, per call)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ScalarRef:
    """Call argument ``index`` (an exact Python int) as an index or slice bound."""

    index: int

    def __repr__(self) -> str:
        return f"@{self.index}"   # call argument `index` (the graph's params, in order)


def _resolved(part: Any, values: Any) -> Any:
    if part.__class__ is ScalarRef:
        return values[part.index]
    if part.__class__ is slice and (part.start.__class__ is ScalarRef
                                    or part.stop.__class__ is ScalarRef
                                    or part.step.__class__ is ScalarRef):
        return slice(*(_resolved(v, values) for v in (part.start, part.stop, part.step)))
    return part


def step_refs(step: tuple[str, Any]) -> tuple[int, ...]:
    """Return the call arguments a view step reads (its ScalarRefs), in key order."""
    name, argument = step
    if name == "reshape":
        return tuple(p.index for p in argument if p.__class__ is ScalarRef)
    if name != "getitem":
        return ()
    found: list[int] = []
    for part in argument if isinstance(argument, tuple) else (argument,):
        bounds = (part.start, part.stop, part.step) if part.__class__ is slice else (part,)
        found += [b.index for b in bounds if b.__class__ is ScalarRef]
    return tuple(found)


def resolve_step(step: tuple[str, Any], values: Any) -> tuple[str, Any]:
    """Return ``step`` with each ScalarRef replaced by the call's value of it (a loop body
    resolves its views at every iteration: each step's resolver is made once)."""
    held = _RESOLVERS.get(id(step))
    if held is None or held[0] is not step:
        if len(_RESOLVERS) >= _MAX_RESOLVERS:
            _RESOLVERS.clear()
        held = _RESOLVERS[id(step)] = (step, _resolver(step))
    return held[1](values)


#: id(step) -> (step, its resolver): the step is held, so its id stays its own
_RESOLVERS: dict[int, tuple[tuple[str, Any], Any]] = {}
_MAX_RESOLVERS = 4096


def _resolver(step: tuple[str, Any]) -> Any:
    """Return ``values -> step resolved``: the key's parts that are ScalarRefs (or slices
    with one) rebuilt from ``values``, the others as they are."""
    name, argument = step
    if not step_refs(step):
        return lambda values: step
    if name == "reshape":
        return lambda values: (name, tuple(values[p.index] if p.__class__ is ScalarRef else p
                                           for p in argument))
    key = argument if isinstance(argument, tuple) else (argument,)
    constants: list[Any] = []

    def source(part: Any) -> str:   # the expression of one part, over ``v`` and ``c``
        if part.__class__ is ScalarRef:
            return f"v[{int(part.index)}]"
        if part.__class__ is slice:
            return f"slice({source(part.start)}, {source(part.stop)}, {source(part.step)})"
        constants.append(part)
        return f"c[{len(constants) - 1}]"

    text = f"lambda v: (n, ({''.join(source(part) + ', ' for part in key)}))"
    return eval(text, {"n": name, "c": constants, "slice": slice})   # noqa: S307


def apply_view(array: Any, step: tuple[str, Any]) -> Any:
    """Return ``array`` seen through one view step (NumPy or CuPy arrays alike).

    A key without ``...`` gets one at its end: the same elements, but an all-integer key
    gives a 0-d view of the memory rather than a NumPy scalar copied out of it (the plan
    takes views before its kernels fill the memory they look at)."""
    name, argument = step
    if name == "getitem":   # with an Ellipsis, integers alone still give a (0-d) view, not
        key = argument if isinstance(argument, tuple) else (argument,)   # a scalar copy
        if not any(k is Ellipsis for k in key):
            key = (*key, Ellipsis)
        return array[key]
    if name == "reshape":
        return array.reshape(argument)
    if name == "ravel":
        return array.ravel()
    return array.transpose(argument)


def reshaped(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """Return the shape NumPy's ``reshape(target)`` gives an array of ``shape``; raise
    ValueError as NumPy does when the element count does not fit."""
    total, known = math.prod(shape), math.prod(s for s in target if s != -1)
    if sum(s == -1 for s in target) > 1 or any(s < -1 for s in target):
        raise ValueError("can only specify one unknown dimension")
    if -1 in target:
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape array of size {total} into shape {target}")
        return tuple(total // known if s == -1 else s for s in target)
    if known != total:
        raise ValueError(f"cannot reshape array of size {total} into shape {target}")
    return tuple(target)


def view_shape(shape: tuple[int, ...], step: tuple[str, Any]) -> tuple[int, ...]:
    """Return the shape of a view step applied to an array of ``shape``, without memory
    (NumPy's reshape of a stand-in would copy); raise NumPy's errors."""
    name, argument = step
    if name == "reshape":
        return reshaped(tuple(shape), tuple(argument))
    if name == "ravel":
        return (math.prod(shape),)
    one = np.array([0], dtype=np.uint8)       # (np.zeros is traced inside a trace)
    stand_in = np.lib.stride_tricks.as_strided(one, shape, (0,) * len(shape))
    return apply_view(stand_in, step).shape
