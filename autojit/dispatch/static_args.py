"""Static arguments (``@autoroute(static_argnames=("steps",))``): values the trace sees as
plain Python objects, so ``for t in range(steps)`` unrolls and ``if mode == "fast"`` picks
a branch. Each distinct tuple of static values gets its own specialised function (contract
3: the values of declared static arguments are part of the signature, keyed by type and
value: ``2`` and ``2.0`` are two); the other arguments are traced and compiled as usual.

The same child-function mechanism serves calls passing arguments by keyword (keyword-only
ones included): each call form (which parameters come by position, which by keyword) gets
a function of the dynamic arguments taken by position, so every value reaches the trace.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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


_ARG, _KEYWORD, _DEFAULT = range(3)


@dataclass(frozen=True)
class CallShape:
    """How calls of one shape (argument count, keyword names) reach ``fn``: per parameter
    present (after defaults, when there are static parameters) its ``layout`` entry and
    where its value comes from: ``(_ARG, position)``, ``(_KEYWORD, name)`` or
    ``(_DEFAULT, (name, keyword-only, positional index, positional count, default))``.
    Binding once per shape spares ``inspect.Signature.bind`` (~20 us) on every call."""

    layout: tuple[tuple[str, bool, bool], ...]
    sources: tuple[tuple[int, Any], ...]
    needs_child: bool     # static values, or an argument passed by keyword

    def split(self, fn: Callable, args: tuple,
              kwargs: dict[str, Any]) -> tuple[Any, CallForm | None, tuple]:
        """Return (key, form, the dynamic arguments in order) for one call of this shape:
        ``form`` None means no child dispatcher is needed (the arguments are positional);
        else ``key`` (the layout and the typed static values) names the child."""
        values = [args[where] if kind == _ARG else kwargs[where] if kind == _KEYWORD
                  else current_default(fn, *where) for kind, where in self.sources]
        if not self.needs_child:
            return None, None, tuple(values)
        static = tuple(v for (_, _, is_static), v in zip(self.layout, values) if is_static)
        try:
            key = (self.layout, typed_key(static))
            hash(key)
        except TypeError:
            names = [name for name, _, is_static in self.layout if is_static]
            raise TypeError(f"static arguments ({', '.join(names)}) must be hashable; got "
                            f"{', '.join(type(v).__name__ for v in static)}") from None
        dynamic = tuple(v for (_, _, is_static), v in zip(self.layout, values)
                        if not is_static)
        return key, (self.layout, static), dynamic


def current_default(fn: Callable, name: str, keyword_only: bool, index: int, count: int,
                    default: Any) -> Any:
    """Return the default Python uses for parameter ``name`` *now*: a function's
    ``__defaults__``/``__kwdefaults__`` may have been replaced since it was decorated.
    TypeError when it no longer has one (as the call would raise)."""
    if not isinstance(fn, types.FunctionType):
        return default
    if keyword_only:
        found = (fn.__kwdefaults__ or {}).get(name, inspect.Parameter.empty)
    else:
        defaults = fn.__defaults__ or ()
        at = index - (count - len(defaults))
        found = defaults[at] if at >= 0 else inspect.Parameter.empty
    if found is inspect.Parameter.empty:
        raise TypeError(f"{fn.__qualname__}() missing required argument: '{name}'")
    return found


def call_shape(signature: inspect.Signature, positions: tuple[int, ...], args: tuple,
               kwargs: dict[str, Any]) -> CallShape:
    """Return the shape of this call (binding it: TypeError as Python raises). Static
    parameters take their defaults when not passed; keyword-only or out-of-order keyword
    arguments are passed by keyword (their values reach the trace as arguments)."""
    bound = signature.bind(*args, **kwargs)
    if positions:
        bound.apply_defaults()
    params = signature.parameters
    index = {name: i for i, name in enumerate(params)}
    positional = [n for n, p in params.items()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_position = len(bound.args)
    layout = tuple((name, i < by_position, index[name] in positions)
                   for i, name in enumerate(bound.arguments))
    sources = []
    for name in bound.arguments:
        param = params[name]
        if index[name] < len(args):
            sources.append((_ARG, index[name]))
        elif name in kwargs:
            sources.append((_KEYWORD, name))
        else:
            sources.append((_DEFAULT, (name, param.kind is param.KEYWORD_ONLY,
                                       positional.index(name) if name in positional else -1,
                                       len(positional), param.default)))
    needs_child = bool(positions) or by_position < len(bound.arguments)
    return CallShape(layout, tuple(sources), needs_child)


def split_call(signature: inspect.Signature, positions: tuple[int, ...], args: tuple,
               kwargs: dict[str, Any], fn: Callable | None = None
               ) -> tuple[Any, CallForm | None, tuple]:
    """Return (key, form, the dynamic arguments in order) for one call (see CallShape)."""
    return call_shape(signature, positions, args, kwargs).split(fn, args, kwargs)


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
    # the tracer converts fn's loops and branches (tracer/convert.py), then binds it again
    specialised._autojit_specialised = (   # type: ignore[attr-defined]
        fn, lambda inner: specialise(inner, signature, form))
    return specialised
