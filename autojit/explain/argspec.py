"""Example arguments from a short text spec, for ``autojit inspect --args``.

A spec is a comma-separated list of entries::

    f64[1000], f32[4,5], i64, f32[n,3], f64[100]:F, bool[8], u8[2,3]:strided, n=1000,
    i64=1000, f64=0.5, bool=True, i64=n

* ``DTYPE[d0,d1,...]`` is an array; each size is an integer or a name. A name is a
  symbolic size: every use of it gets the same value, 16 unless an entry ``name=VALUE``
  in the same spec says otherwise. ``DTYPE[]`` is a 0-d array.
* ``:C`` (default), ``:F`` (Fortran order) or ``:strided`` (a view of every other
  element along the last axis, so neither C- nor F-contiguous) picks the layout.
* ``DTYPE`` alone is a scalar: ``f64`` → ``float``, ``i64`` → ``int``, ``bool`` → ``bool``
  (Python scalars, as users pass them); other dtypes give a NumPy scalar of that dtype.
  Its contents are random (below) unless ``DTYPE=VALUE`` gives the value: ``i64=1000`` (a
  loop bound or a size), ``f64=0.5``, ``bool=True``, ``i32=7`` (a NumPy scalar); an integer
  may be a size name (``i64=n``: the value of ``n``, so a size argument matches an array's).

Contents are deterministic for a given ``seed`` and sensible for the dtype: floats are
standard normal, signed integers lie in [-100, 100), unsigned ones in [0, 100), booleans
are fair coin flips. Errors raise :class:`ArgSpecError` naming the bad entry and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from autojit.errors import AutojitError

__all__ = ["ArgSpecError", "DEFAULT_SIZE", "DTYPES", "parse_args_spec", "spec_size_names"]

#: Value of a symbolic size that the spec does not bind.
DEFAULT_SIZE = 16

#: Short dtype names the spec accepts (the ones autojit compiles).
DTYPES: dict[str, np.dtype] = {
    name: np.dtype(full)
    for name, full in (
        ("bool", "bool"), ("i8", "int8"), ("i16", "int16"), ("i32", "int32"),
        ("i64", "int64"), ("u8", "uint8"), ("u16", "uint16"), ("u32", "uint32"),
        ("u64", "uint64"), ("f32", "float32"), ("f64", "float64"),
    )
}

_LAYOUTS = {"c": "C", "f": "F", "strided": "strided"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ENTRY = re.compile(
    r"(?P<dtype>[A-Za-z_][A-Za-z0-9_]*)\s*"
    r"(?:\[(?P<dims>[^\[\]]*)\])?\s*"
    r"(?::\s*(?P<layout>[A-Za-z_]+))?\Z"
)


class ArgSpecError(AutojitError):
    """An ``--args`` spec cannot be parsed; ``token`` and ``column`` (0-based) locate it."""

    def __init__(self, message: str, spec: str, token: str, column: int) -> None:
        self.spec, self.token, self.column = spec, token, column
        super().__init__(f"bad argument spec at column {column + 1} ({token!r}): {message}")


@dataclass(frozen=True)
class _Entry:
    """One top-level entry of the spec: its stripped text and its column in the spec."""

    text: str
    column: int


def parse_args_spec(spec: str, seed: int = 0) -> list[object]:
    """Return the example arguments ``spec`` describes, in order.

    Size bindings (``n=1000``) may appear anywhere in the spec and produce no argument.
    Raises :class:`ArgSpecError` on an unknown dtype, a malformed entry, a bad size or
    layout, or a size name bound twice.
    """
    entries = _split_entries(spec)
    sizes, arg_entries = _collect_bindings(spec, entries)
    rng = np.random.default_rng(seed)
    return [_make_argument(spec, entry, sizes, rng) for entry in arg_entries]


def spec_size_names(spec: str) -> list[tuple[str | None, ...] | None]:
    """Return, per argument, the name of each symbolic size (None for a number), or None
    for a scalar: ``"f32[B,3], i64"`` gives ``[("B", None), None]``. The report prints
    sizes with these names."""
    entries = _collect_bindings(spec, _split_entries(spec))[1]
    result: list[tuple[str | None, ...] | None] = []
    for entry in entries:
        match = _ENTRY.match(entry.text)
        if match is None or match["dims"] is None:
            result.append(None)
            continue
        dims = [d.strip() for d in match["dims"].split(",")] if match["dims"].strip() else []
        result.append(tuple(d if _NAME.match(d) else None for d in dims))
    return result


def _split_entries(spec: str) -> list[_Entry]:
    """Return the comma-separated entries of ``spec``; commas inside ``[...]`` do not split.

    An empty spec gives no entries; an empty entry (``a,,b`` or a trailing comma) is an error.
    """
    if not spec.strip():
        return []
    pieces: list[tuple[str, int]] = []
    depth, start = 0, 0
    for i, ch in enumerate(spec):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ArgSpecError("unbalanced ']'", spec, "]", i)
        elif ch == "," and depth == 0:
            pieces.append((spec[start:i], start))
            start = i + 1
    if depth:
        raise ArgSpecError("unclosed '['", spec, spec[start:].strip(), start)
    pieces.append((spec[start:], start))
    entries = []
    for raw, offset in pieces:
        text = raw.strip()
        column = offset + (len(raw) - len(raw.lstrip()))
        if not text:
            raise ArgSpecError("empty entry (stray comma?)", spec, "", column)
        entries.append(_Entry(text, column))
    return entries


def _collect_bindings(spec: str, entries: list[_Entry]) -> tuple[dict[str, int], list[_Entry]]:
    """Split ``name=VALUE`` entries from argument entries.

    Returns the bound sizes and the remaining (argument) entries in order.
    """
    sizes: dict[str, int] = {}
    args: list[_Entry] = []
    for entry in entries:
        if "=" not in entry.text:
            args.append(entry)
            continue
        name, _, value = (part.strip() for part in entry.text.partition("="))
        if name in DTYPES or "[" in name:   # a scalar argument with its value (i64=1000)
            args.append(entry)
            continue
        if not _NAME.match(name):
            raise ArgSpecError(f"{name!r} is not a size name", spec, entry.text, entry.column)
        if name in sizes:
            raise ArgSpecError(f"size {name!r} is bound twice", spec, entry.text, entry.column)
        sizes[name] = _parse_int(spec, entry, value)
    return sizes, args


def _parse_int(spec: str, entry: _Entry, text: str) -> int:
    """Return ``text`` as a non-negative integer size (``1_000`` allowed), else raise."""
    try:
        value = int(text.replace("_", ""), 10)
    except ValueError:
        raise ArgSpecError(f"size {text!r} is not an integer", spec, entry.text,
                           entry.column) from None
    if value < 0:
        raise ArgSpecError(f"size {value} is negative", spec, entry.text, entry.column)
    return value


def _make_argument(spec: str, entry: _Entry, sizes: dict[str, int],
                   rng: np.random.Generator) -> object:
    """Return the scalar or array one argument entry describes."""
    if "=" in entry.text:
        return _scalar_with_value(spec, entry, sizes)
    match = _ENTRY.match(entry.text)
    if match is None:
        raise ArgSpecError("expected DTYPE, DTYPE[d0,d1,...] or DTYPE[...]:LAYOUT "
                           "(e.g. f64[1000]:F)", spec, entry.text, entry.column)
    name = match["dtype"]
    if name not in DTYPES:
        known = ", ".join(DTYPES)
        raise ArgSpecError(f"unknown dtype {name!r}; known: {known}", spec, entry.text,
                           entry.column)
    dtype = DTYPES[name]
    if match["dims"] is None:
        if match["layout"] is not None:
            raise ArgSpecError("a scalar has no layout", spec, entry.text, entry.column)
        return _make_scalar(dtype, rng)
    shape = _parse_shape(spec, entry, match["dims"], sizes)
    layout = _parse_layout(spec, entry, match["layout"], len(shape))
    return _make_array(dtype, shape, layout, rng)


#: how a scalar entry's value is read, by dtype kind ("i64=1000", "f64=0.5", "bool=True")
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def _scalar_with_value(spec: str, entry: _Entry, sizes: dict[str, int]) -> object:
    """Return the scalar ``DTYPE=VALUE`` gives: a Python int/float/bool for i64/f64/bool
    (as users pass them), else a NumPy scalar of the dtype; an int may name a size."""
    name, _, text = (part.strip() for part in entry.text.partition("="))
    if name not in DTYPES:
        raise ArgSpecError("only a scalar takes a value: DTYPE=VALUE (e.g. i64=1000, "
                           "f64=0.5, bool=True); an array's sizes go in [...]", spec,
                           entry.text, entry.column)
    dtype = DTYPES[name]
    value: object
    if not text:
        raise ArgSpecError(f"{name}= needs a value (e.g. {name}={_EXAMPLE[dtype.kind]})",
                           spec, entry.text, entry.column)
    if dtype.kind == "b":
        if text.lower() not in _BOOLS:
            raise ArgSpecError(f"{text!r} is not a bool: use True or False", spec,
                               entry.text, entry.column)
        value = _BOOLS[text.lower()]
    elif dtype.kind == "f":
        try:
            value = float(text.replace("_", ""))
        except ValueError:
            raise ArgSpecError(f"{text!r} is not a number", spec, entry.text,
                               entry.column) from None
    elif _NAME.match(text):
        value = sizes.get(text, DEFAULT_SIZE)   # i64=n: the size n's value
    else:
        try:
            value = int(text.replace("_", ""), 10)
        except ValueError:
            raise ArgSpecError(f"{text!r} is not an integer or a size name", spec,
                               entry.text, entry.column) from None
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ArgSpecError(f"{value} does not fit {name} ({info.min} to {info.max})",
                               spec, entry.text, entry.column)
    python_types = {np.dtype("float64"): float, np.dtype("int64"): int,
                    np.dtype("bool"): bool}
    return python_types[dtype](value) if dtype in python_types else dtype.type(value)


_EXAMPLE = {"b": "True", "f": "0.5", "i": "1000", "u": "1000"}


def _parse_shape(spec: str, entry: _Entry, dims: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """Return the concrete shape of ``[dims]``; names resolve through ``sizes``."""
    if not dims.strip():
        return ()
    shape = []
    for dim in (d.strip() for d in dims.split(",")):
        if not dim:
            raise ArgSpecError("empty dimension", spec, entry.text, entry.column)
        if _NAME.match(dim):
            shape.append(sizes.get(dim, DEFAULT_SIZE))
        else:
            shape.append(_parse_int(spec, entry, dim))
    return tuple(shape)


def _parse_layout(spec: str, entry: _Entry, layout: str | None, ndim: int) -> str:
    """Return ``'C'``, ``'F'`` or ``'strided'`` for the ``:LAYOUT`` suffix (default C)."""
    if layout is None:
        return "C"
    key = layout.lower()
    if key not in _LAYOUTS:
        raise ArgSpecError(f"unknown layout {layout!r}; use :C, :F or :strided", spec,
                           entry.text, entry.column)
    if key == "strided" and ndim == 0:
        raise ArgSpecError("a 0-d array cannot be strided", spec, entry.text, entry.column)
    return _LAYOUTS[key]


def _random_values(dtype: np.dtype, shape: tuple[int, ...],
                   rng: np.random.Generator) -> np.ndarray:
    """Return a C-ordered array of ``dtype`` with contents sensible for the dtype."""
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    low = -100 if dtype.kind == "i" else 0
    return rng.integers(low, 100, size=shape).astype(dtype)


def _make_array(dtype: np.dtype, shape: tuple[int, ...], layout: str,
                rng: np.random.Generator) -> np.ndarray:
    """Return an array of ``shape`` in the requested layout."""
    if layout == "strided":
        # Double the last axis and take every other element: a view whose innermost
        # stride is two items, which defeats contiguous fast paths (the point of asking).
        base = _random_values(dtype, (*shape[:-1], 2 * shape[-1]), rng)
        return base[..., ::2]
    values = _random_values(dtype, shape, rng)
    return np.asfortranarray(values) if layout == "F" else values


def _make_scalar(dtype: np.dtype, rng: np.random.Generator) -> object:
    """Return a scalar: a Python float/int/bool for f64/i64/bool, else a NumPy scalar."""
    value = _random_values(dtype, (), rng)[()]
    python_types = {np.dtype("float64"): float, np.dtype("int64"): int,
                    np.dtype("bool"): bool}
    if dtype in python_types:
        return python_types[dtype](value)
    return value
