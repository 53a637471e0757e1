"""Static arguments (``@autoroute(static_argnames=("steps",))``): values the trace sees as
plain Python objects, so ``for t in range(steps)`` unrolls and ``if mode == "fast"`` picks
a branch. Each distinct tuple of static values gets its own specialised function (contract
3: the values of declared static arguments are part of the signature); the other arguments
are traced and compiled as usual.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

#: more distinct static values than this per function is almost surely a mistake (a float
#: that changes every call): say so instead of compiling without end
MAX_SPECIALISATIONS = 64


def static_positions(signature: inspect.Signature, names: Iterable[str] | str,
                     numbers: Iterable[int] | int) -> tuple[int, ...]:
    """Return the sorted positions of the declared static parameters; TypeError for a name
    or number the function does not have, or a function taking ``*args``/``**kwargs``."""
    names = (names,) if isinstance(names, str) else tuple(names)
    numbers = (numbers,) if isinstance(numbers, int) else tuple(numbers)
    if not names and not numbers:
        return ()
    params = list(signature.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError("static_argnames/static_argnums need a function without *args/**kwargs")
    by_name = {p.name: i for i, p in enumerate(params)}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise TypeError(f"static_argnames: no parameter named {', '.join(unknown)}; "
                        f"parameters: {', '.join(by_name)}")
    bad = [n for n in numbers if not -len(params) <= n < len(params)]
    if bad:
        raise TypeError(f"static_argnums {bad} out of range for {len(params)} parameter(s)")
    return tuple(sorted({by_name[n] for n in names} | {n % len(params) for n in numbers}))


def split_call(signature: inspect.Signature, positions: tuple[int, ...], args: tuple,
               kwargs: dict[str, Any]) -> tuple[tuple, tuple]:
    """Return (static values, the other arguments in order) for one call."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    values = tuple(bound.arguments.values())
    static = tuple(values[i] for i in positions)
    try:
        hash(static)
    except TypeError:
        names = [list(signature.parameters)[i] for i in positions]
        raise TypeError(f"static arguments ({', '.join(names)}) must be hashable; got "
                        f"{', '.join(type(v).__name__ for v in static)}") from None
    return static, tuple(v for i, v in enumerate(values) if i not in positions)


def specialise(fn: Callable, signature: inspect.Signature, positions: tuple[int, ...],
               static: tuple) -> Callable:
    """Return ``fn`` with the static values bound: a function of the other parameters whose
    signature, name and closure (which the disk cache fingerprints) say which values."""
    def specialised(*dynamic: Any) -> Any:
        merged = list(dynamic)
        for position, value in zip(positions, static):
            merged.insert(position, value)
        return fn(*merged)

    functools.update_wrapper(specialised, fn)
    params = list(signature.parameters.values())
    specialised.__signature__ = signature.replace(   # type: ignore[attr-defined]
        parameters=[p for i, p in enumerate(params) if i not in positions])
    shown = ", ".join(f"{params[i].name}={v!r}" for i, v in zip(positions, static))
    specialised.__qualname__ = f"{fn.__qualname__}[{shown}]"
    del specialised.__wrapped__      # the signature above, not fn's, is the traced one
    return specialised
