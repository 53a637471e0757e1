"""Random inputs for the fuzzer, and their rendering as Python source.

Every argument of every call is *source text* (``np.array([...], dtype=np.int8)[::-1]``), so
a failing program prints as a runnable repro, and the runner builds the inputs it tests by
evaluating exactly that text. Nothing here knows what autojit supports.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

#: every dtype a generated array or NumPy scalar may have
ARRAY_DTYPES: tuple[str, ...] = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
)
#: weights: floats and int64 are what programs mostly see; the rest keep edges covered
DTYPE_WEIGHTS: tuple[float, ...] = (1.2, 0.6, 0.5, 0.8, 1.5, 0.6, 0.4, 0.5, 0.6, 1.6, 2.4)

#: Python scalar kinds a parameter may be (``np.<dtype>`` scalars use ARRAY_DTYPES)
PY_KINDS: tuple[str, ...] = ("int", "float", "bool")

#: memory layouts of an array argument: how its expression builds it
LAYOUTS: tuple[str, ...] = ("C", "C", "C", "F", "rev", "step", "T", "bcast")


def float_specials(dtype: str) -> list[float]:
    """Edge values of a float dtype: NaN, ±inf, ±0, subnormals, extremes, ±1."""
    info = np.finfo(dtype)
    tiny_sub = float(info.smallest_subnormal)
    return [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, tiny_sub, -tiny_sub,
            float(info.tiny), float(info.max), -float(info.max), 1.0, -1.0, 0.5,
            float(info.eps), 3 * tiny_sub]


def int_specials(dtype: str) -> list[int]:
    """Edge values of an integer dtype: extremes and their neighbours, 0, ±1."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    out = [lo, lo + 1, hi, hi - 1, 0, 1, 2, hi // 2 + 1]
    if lo < 0:
        out += [-1, -2]
    return out


def random_values(rng: random.Random, dtype: str, count: int) -> list[Any]:
    """``count`` Python values for ``dtype``: a per-array mix of small, random and edge
    values (the density of edge values is itself random, often 0)."""
    special_rate = rng.choice((0.0, 0.0, 0.05, 0.2, 0.6))
    style = rng.choice(("small", "small", "wide", "unit"))
    out: list[Any] = []
    for _ in range(count):
        out.append(one_value(rng, dtype, special_rate, style))
    return out


def one_value(rng: random.Random, dtype: str, special_rate: float = 0.1,
              style: str = "small") -> Any:
    """One Python value for ``dtype`` (``int``/``float``/``bool`` for Python kinds)."""
    if dtype in ("bool",):
        return rng.random() < 0.5
    if dtype in ("int", "float"):
        return one_python(rng, dtype)
    kind = np.dtype(dtype).kind
    if kind == "f":
        if rng.random() < special_rate:
            return rng.choice(float_specials(dtype))
        if style == "small":
            return float(rng.randint(-8, 8)) / rng.choice((1, 1, 2, 4))
        if style == "unit":
            return float(np.asarray(rng.uniform(-1, 1), dtype))
        return float(np.asarray(rng.gauss(0, 1) * 10 ** rng.randint(-5, 6), dtype))
    if rng.random() < special_rate:
        return rng.choice(int_specials(dtype))
    info = np.iinfo(dtype)
    if style == "wide":
        return rng.randint(int(info.min), int(info.max))
    return max(int(info.min), min(int(info.max), rng.randint(-9, 9)))


def one_python(rng: random.Random, kind: str) -> Any:
    """A Python int/float/bool, edge values included (2**63, -0.0, nan, inf)."""
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice((0, 1, -1, 2, 3, -3, 7, 100, 255, 256, -129, 2 ** 31, 2 ** 40,
                           2 ** 63 - 1, 2 ** 63, -2 ** 63, 2 ** 64 - 1)) \
            if rng.random() < 0.25 else rng.randint(-5, 9)
    if rng.random() < 0.3:
        return rng.choice((float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-310,
                           1e308, -1.5, 0.5, 1e-7))
    return rng.randint(-8, 8) / rng.choice((1, 2, 4, 3))


def py_literal(value: Any) -> str:
    """Source text of a Python scalar (``nan``/``inf`` through ``float(...)``)."""
    if isinstance(value, float):
        if value != value:
            return "float('nan')"
        if value in (float("inf"), -float("inf")):
            return "float('inf')" if value > 0 else "-float('inf')"
        return repr(value)
    return repr(value)


def np_scalar_literal(value: Any, dtype: str) -> str:
    """Source text of a NumPy scalar such as ``np.float32(-0.0)``."""
    return f"np.{dtype if dtype != 'bool' else 'bool_'}({py_literal(value)})"


@dataclass(frozen=True)
class ArgSpec:
    """One argument of one call.

    ``kind``: ``array`` (values are C-order logical contents), ``scalar`` (Python value, or a
    NumPy scalar when ``npscalar``), ``alias`` (a view ``view`` of argument ``alias_of``).
    """

    kind: str
    dtype: str = "float64"
    shape: tuple[int, ...] = ()
    values: tuple[Any, ...] = ()
    layout: str = "C"
    npscalar: bool = False
    alias_of: int = -1
    view: str = "same"
    bcast_axis: int = -1
    filler: tuple[Any, ...] = field(default=())

    def with_(self, **changes: Any) -> ArgSpec:
        """Return a copy with ``changes`` (for the shrinker)."""
        return replace(self, **changes)


def _list_text(values: tuple[Any, ...]) -> str:
    return "[" + ", ".join(py_literal(v) for v in values) + "]"


def _c_array(values: tuple[Any, ...], dtype: str, shape: tuple[int, ...]) -> str:
    text = f"np.array({_list_text(values)}, dtype=np.{dtype})"
    if len(shape) != 1 or len(values) != shape[0]:
        text += f".reshape({shape!r})"
    return text


def _flat(values: tuple[Any, ...], dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.array(list(values), dtype=dtype).reshape(shape)


def array_text(spec: ArgSpec) -> str:
    """Source text building the array ``spec`` describes, in its layout."""
    shape, dtype = spec.shape, spec.dtype
    layout = spec.layout if spec.shape else "C"
    if layout == "F":
        return f"np.asfortranarray({_c_array(spec.values, dtype, shape)})"
    if layout == "rev":
        flipped = _flat(spec.values, dtype, shape)[::-1]
        return f"{_c_array(tuple(flipped.ravel().tolist()), dtype, shape)}[::-1]"
    if layout == "T":
        transposed = _flat(spec.values, dtype, shape).T
        return f"{_c_array(tuple(transposed.ravel().tolist()), dtype, transposed.shape)}.T"
    if layout == "step":
        logical = _flat(spec.values, dtype, shape)
        wide = np.empty(shape[:-1] + (2 * shape[-1],), dtype=dtype)
        wide[..., ::2] = logical
        fill = spec.filler or (0,)
        wide[..., 1::2] = np.array(fill[0], dtype=dtype)
        return f"{_c_array(tuple(wide.ravel().tolist()), dtype, wide.shape)}[..., ::2]"
    if layout == "bcast" and 0 <= spec.bcast_axis < len(shape):
        logical = _flat(spec.values, dtype, shape)
        small = np.take(logical, [0], axis=spec.bcast_axis) if shape[spec.bcast_axis] else \
            np.zeros(shape[:spec.bcast_axis] + (1,) + shape[spec.bcast_axis + 1:], dtype)
        return (f"np.broadcast_to({_c_array(tuple(small.ravel().tolist()), dtype, small.shape)}"
                f", {shape!r})")
    return _c_array(spec.values, dtype, shape)


ALIAS_VIEWS: dict[str, str] = {"same": "{}", "rev": "{}[::-1]", "T": "{}.T"}


def arg_text(spec: ArgSpec, names: list[str]) -> str:
    """Source text of one argument (``names``: the earlier arguments' local names)."""
    if spec.kind == "alias":
        return ALIAS_VIEWS[spec.view].format(names[spec.alias_of])
    if spec.kind == "scalar":
        value = spec.values[0]
        return np_scalar_literal(value, spec.dtype) if spec.npscalar else py_literal(value)
    return array_text(spec)


def call_text(specs: list[ArgSpec], name: str) -> str:
    """A function ``name()`` returning one call's arguments, built fresh each time."""
    names = [f"x{i}" for i in range(len(specs))]
    lines = [f"def {name}():"]
    for i, spec in enumerate(specs):
        lines.append(f"    {names[i]} = {arg_text(spec, names)}")
    lines.append(f"    return ({''.join(n + ', ' for n in names)})")
    return "\n".join(lines)


def bcast_values(rng: random.Random, dtype: str, shape: tuple[int, ...],
                 axis: int) -> tuple[Any, ...]:
    """Values constant along ``axis`` (what ``np.broadcast_to`` of a size-1 axis gives)."""
    small_shape = shape[:axis] + (1,) + shape[axis + 1:]
    small = np.array(random_values(rng, dtype, int(np.prod(small_shape))), dtype=dtype)
    return tuple(np.broadcast_to(small.reshape(small_shape), shape).ravel().tolist())


def random_array_spec(rng: random.Random, dtype: str, shape: tuple[int, ...],
                      layout: str | None = None) -> ArgSpec:
    """An array argument of ``dtype`` and ``shape`` with random values and layout."""
    layout = layout or rng.choice(LAYOUTS)
    size = int(np.prod(shape)) if shape else 1
    if not shape or (layout in ("step", "rev", "T") and size == 0):
        layout = "C"
    axis = -1
    if layout == "bcast":
        axes = [i for i, n in enumerate(shape) if n > 1]
        if not axes:
            layout = "C"
        else:
            axis = rng.choice(axes)
    if layout == "bcast":
        values = bcast_values(rng, dtype, shape, axis)
    else:
        values = tuple(random_values(rng, dtype, size))
    filler = (one_value(rng, dtype, 0.5),)
    return ArgSpec("array", dtype, tuple(shape), values, layout, bcast_axis=axis,
                   filler=filler)
