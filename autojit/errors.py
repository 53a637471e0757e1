"""Exceptions and warnings. Each says what happened, where in the user's code, what to do."""

from __future__ import annotations

import os


class AutojitError(Exception):
    """Base of every error autojit raises."""


class TraceError(AutojitError):
    """The function cannot be traced; the caller falls back to plain Python.

    ``loc`` is the user's ``file:line:col`` where tracing stopped, when known.
    """

    def __init__(self, reason: str, loc: object | None = None) -> None:
        self.reason = reason
        self.loc = loc
        super().__init__(f"{loc}: {reason}" if loc else reason)


class UnsupportedError(TraceError):
    """A construct autojit does not compile (yet): an op, a dtype, an argument kind."""


class BroadcastError(TraceError):
    """Arguments whose sizes NumPy cannot broadcast: depends on sizes, so never cached."""


class CallRaisesError(TraceError):
    """Python raises for these argument values (``3 / s`` with ``s == 0``), or gives what
    autojit does not compile (``(-1) ** 0.5`` is complex): depends on the values, so never
    cached; the call runs as plain Python."""


class CompileError(AutojitError):
    """A compiler (LLVM, NVRTC, g++) rejected generated code; carries numbered source and
    the log."""

    def __init__(self, message: str, source: str = "", log: str = "") -> None:
        self.source, self.log = source, log
        numbered = "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(source.splitlines()))
        details = f"\n--- source ---\n{numbered}" if source else ""
        details += f"\n--- compiler log ---\n{log}" if log else ""
        super().__init__(message + details)


class InternalError(AutojitError):
    """A bug in autojit, never in the user's code: no rule for an op in a renderer, no
    decomposition of a graph op, malformed IR (``ir.verify``). ``op`` is the op (an ``Op``
    or a name such as ``"reduce.max"``), ``dtype`` its dtype when known. The dispatcher
    treats it as a failed compile: the call runs as plain Python, the reason recorded."""

    HINT = ("this is a bug in autojit; please report it with the function, its arguments' "
            "dtypes and shapes, and the output of `autojit inspect FILE:FUNC --args SPEC "
            "--stage fused`")

    def __init__(self, message: str, op: object | None = None, dtype: object | None = None,
                 ) -> None:
        self.detail, self.op, self.dtype = message, op, dtype
        super().__init__(f"{message} ({self.HINT})")

    @classmethod
    def no_rule(cls, target: str, op: object, dtype: object) -> InternalError:
        """Return the error of a renderer (``target``: LLVM, CUDA) without a rule for
        ``op`` on ``dtype``: the same words from every renderer."""
        name = getattr(op, "value", op)
        return cls(f"no {target} rule for {name} on {dtype}", op, dtype)


class StrictFallbackError(AutojitError):
    """Strict mode (``AUTOJIT_STRICT=1``, ``config(strict=True)``, ``--autojit-strict``): a call
    would have run as plain Python. ``function`` is the decorated function's name, ``where``
    its definition's ``file:line``, ``reason`` why it cannot be compiled (with the user's
    ``file:line:col`` when the tracer knows it)."""

    def __init__(self, function: str, reason: str, where: str = "") -> None:
        self.function, self.reason, self.where = function, reason, where
        defined = f" (defined at {where})" if where else ""
        super().__init__(
            f"autojit strict mode: {function}{defined} would run as plain Python: {reason}. "
            "Make it traceable, or let it fall back: drop --autojit-strict / AUTOJIT_STRICT, "
            "or decorate it with @autoroute(strict=False)")

    @classmethod
    def for_function(cls, fn: object, name: str, reason: str) -> StrictFallbackError:
        """Return the error for ``fn`` (its ``file:line`` taken from its code object)."""
        code = getattr(fn, "__code__", None)
        where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}" if code else ""
        return cls(name, reason, where)


class DeviceUnavailableError(AutojitError):
    """A GPU route was requested but no usable CUDA device exists."""


class ConfigError(AutojitError, ValueError):
    """A setting's value is not allowed: an ``AUTOJIT_*`` variable (read again by
    ``reload_environment()``), an ``@autoroute(...)`` or ``autojit.config(...)`` option.
    ``name`` is the variable or option, ``value`` what was given, ``allowed`` what may be,
    ``detail`` (optional) which part of the value is wrong."""

    def __init__(self, name: str, value: object, allowed: str, detail: str = "") -> None:
        self.name, self.value, self.allowed, self.detail = name, value, allowed, detail
        super().__init__(f"{name} must be {allowed}, not {value!r}"
                         + (f" ({detail})" if detail else ""))


class AutojitWarning(UserWarning):
    """Base of autojit's warnings, so ``-W ignore::autojit.AutojitWarning`` works."""


class FallbackWarning(AutojitWarning):
    """A function runs as plain Python; the message says why and where."""


class CacheWarning(AutojitWarning):
    """The disk cache ignored a corrupt, truncated or other-format entry (it is recompiled and
    rewritten), or cannot write its folder (compiled code then stays in memory only)."""


class ConfigWarning(AutojitWarning):
    """An ``AUTOJIT_*`` variable had a value that is not allowed when autojit was imported:
    that setting keeps its default (``autojit.reload_environment()`` raises instead)."""
