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


def callable_name(fn: Any) -> str:
    """Return the name to show for ``fn``: its qualified name, or for a callable without
    one (a ``functools.partial``, an instance with ``__call__``) a readable stand-in."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(fn, functools.partial):
        return f"partial({callable_name(fn.func)})"
    return type(fn).__qualname__


def typed_key(value: Any) -> Any:
    """Return ``value`` as a dict key that also tells its type: ``2``, ``2.0`` and ``True``
    are equal and hash alike, yet trace differently (NEP 50 dtypes), and so do ``0.0`` and
    ``-0.0`` (signs of zero); floats are keyed by their bits (``hex``: NaN finds itself)."""
    kind = type(value)
    if kind is tuple or kind is frozenset:
        items = tuple(map(typed_key, value))
        return kind, items if kind is tuple else frozenset(items)
    if isinstance(value, float):
        return kind, value.hex()
    if isinstance(value, complex):
        return kind, value.real.hex(), value.imag.hex()
    return kind, value


#: what a child dispatcher needs to call ``fn``: per parameter present in the call, its
#: name, whether it is passed by position, and whether it is static; then the static values
CallForm = tuple[tuple[tuple[str, bool, bool], ...], tuple]


def split_call(signature: inspect.Signature, positions: tuple[int, ...], args: tuple,
               kwargs: dict[str, Any]) -> tuple[Any, CallForm | None, tuple]:
    """Return (key, form, the dynamic arguments in order) for one call.

    ``form`` is None when the call needs no child dispatcher: no static parameters and
    every argument passed by position (the dynamic arguments then are the positional
    ones). Otherwise ``key`` (the typed static values and the form's layout) names the
    child dispatcher compiled for calls of this form. Static parameters take their defaults
    when not passed; keyword-only or out-of-order keyword arguments are passed by keyword
    (their values reach the trace as arguments instead of being dropped)."""
    bound = signature.bind(*args, **kwargs)
    if not positions and not bound.kwargs:
        return None, None, bound.args
    if positions:
        bound.apply_defaults()
    params = signature.parameters
    index = {name: i for i, name in enumerate(params)}
    by_position = len(bound.args)
    layout = tuple((name, i < by_position, index[name] in positions)
                   for i, name in enumerate(bound.arguments))
    static = tuple(value for (_, _, is_static), value in zip(layout, bound.arguments.values())
                   if is_static)
    try:
        key = (layout, typed_key(static))
        hash(key)
    except TypeError:
        names = [name for name, _, is_static in layout if is_static]
        raise TypeError(f"static arguments ({', '.join(names)}) must be hashable; got "
                        f"{', '.join(type(v).__name__ for v in static)}") from None
    dynamic = tuple(value for (_, _, is_static), value in zip(layout, bound.arguments.values())
                    if not is_static)
    return key, (layout, static), dynamic


def specialise(fn: Callable, signature: inspect.Signature, form: CallForm) -> Callable:
    """Return ``fn`` with the static values bound and the call's keyword arguments taken by
    position: a function of the dynamic arguments whose signature, name and closure (which
    the disk cache fingerprints) say which values and which keywords."""
    layout, static = form

    def specialised(*dynamic: Any) -> Any:
        given, fixed = iter(dynamic), iter(static)
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for name, by_position, is_static in layout:
            value = next(fixed) if is_static else next(given)
            if by_position:
                positional.append(value)
            else:
                keywords[name] = value
        return fn(*positional, **keywords)

    functools.update_wrapper(specialised, fn)
    params = signature.parameters
    specialised.__signature__ = signature.replace(   # type: ignore[attr-defined]
        parameters=[params[name].replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                         default=inspect.Parameter.empty)
                    for name, _, is_static in layout if not is_static])
    values = iter(static)
    shown = ", ".join(f"{name}={next(values)!r}" for name, _, is_static in layout
                      if is_static)
    keywords = ", ".join(f"{name}=" for name, by_position, is_static in layout
                         if not by_position and not is_static)
    specialised.__qualname__ = (f"{callable_name(fn)}"
                                f"[{'; '.join(p for p in (shown, keywords) if p)}]")
    del specialised.__wrapped__      # the signature above, not fn's, is the traced one
    return specialised
