"""Tracing: run the user's function on proxy arrays and record a Graph."""

from autojit.tracer.proxy import Proxy
from autojit.tracer.trace import classify_argument, trace_function

__all__ = ["Proxy", "classify_argument", "trace_function"]
