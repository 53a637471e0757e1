"""Exceptions and warnings. Each says what happened, where in the user's code, what to do."""

from __future__ import annotations


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


class CompileError(AutojitError):
    """A backend compiler rejected generated code; carries numbered source and the log."""

    def __init__(self, message: str, source: str = "", log: str = "") -> None:
        self.source, self.log = source, log
        numbered = "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(source.splitlines()))
        details = f"\n--- source ---\n{numbered}" if source else ""
        details += f"\n--- compiler log ---\n{log}" if log else ""
        super().__init__(message + details)


class DeviceUnavailableError(AutojitError):
    """A GPU route was requested but no usable CUDA device exists."""


class AutojitWarning(UserWarning):
    """Base of autojit's warnings, so ``-W ignore::autojit.AutojitWarning`` works."""


class FallbackWarning(AutojitWarning):
    """A function runs as plain Python; the message says why and where."""
