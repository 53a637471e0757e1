"""Observability: the decision log line, process-wide totals, the Prometheus text format and
the ``AUTOJIT_STATS=1`` summary printed at exit.

A decision line (``AUTOJIT_LOG=debug``), one per call::

    autojit: chain route gpu: model: gpu 0.31 ms < cpu 1.2 ms (n=1048576, cpu 1.2 ms, gpu 0.31 ms)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from autojit.observe.stats import FunctionStats, latency_summary

_LOGGER = logging.getLogger("autojit")
DECISIONS_KEPT = 128


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3g} ms"


def log_decision(function: str, decision: Any, n: int) -> None:
    """Log one routing decision on the ``autojit`` logger (debug level), on one line."""
    _LOGGER.debug("%s route %s: %s (n=%d, cpu %s, gpu %s)", function, decision.route,
                  decision.reason, n, _ms(decision.cpu_s), _ms(decision.gpu_s))


class Observed(Protocol):
    """What a decorated function shows the observers: its name, ``stats()`` and the raw
    ``FunctionStats`` (decision log and latency windows)."""

    __qualname__: str
    _stats: FunctionStats

    def stats(self) -> dict[str, Any]: ...


class Snapshotted(Protocol):
    """The router as the observers see it (``routing.route.Router.snapshot``)."""

    def snapshot(self) -> dict[str, Any]: ...


def aggregate(dispatchers: Iterable[Observed], router: Snapshotted | None) -> dict[str, Any]:
    """Return totals over ``dispatchers`` plus each one's ``stats()`` and the router's state."""
    functions: dict[str, dict[str, Any]] = {}
    decisions: list[tuple[int, dict[str, Any]]] = []
    windows: dict[str, list[float]] = {"cpu": [], "gpu": [], "python": []}
    for d in dispatchers:
        name = _unique(d.__qualname__, functions)
        functions[name] = d.stats()
        raw = d._stats
        decisions += [(seq, {"function": name, **entry}) for seq, entry in raw.decision_log()]
        for route, samples in raw.latency_windows().items():
            windows[route] += samples
    totals = _sum_counters(functions)
    totals["functions"] = len(functions)
    totals["decisions"] = [entry for _, entry in sorted(decisions, key=lambda p: p[0])
                           ][-DECISIONS_KEPT:]
    totals["latency"] = latency_summary(windows)
    totals["router"] = router.snapshot() if router is not None else None
    totals["per_function"] = functions
    return totals


def _unique(name: str, taken: dict[str, Any]) -> str:
    """Return ``name``, or ``name#2``, ``name#3``... when another function has it already."""
    candidate, k = name, 1
    while candidate in taken:
        k += 1
        candidate = f"{name}#{k}"
    return candidate


#: per-function counters that add up over functions
_SUMMED = ("calls", "fast_calls", "compiles", "compile_seconds", "cache_hits", "cache_misses",
           "explorations", "gpu_failure_count", "resident_bytes", "gpu_input_bytes",
           "disk_hits", "disk_misses")


def _sum_counters(functions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {**dict.fromkeys(_SUMMED, 0),
                              "routes": {"cpu": 0, "gpu": 0, "python": 0},
                              "bytes_moved": {"host_to_device": 0, "device_to_host": 0},
                              "fallbacks": [], "gpu_failures": []}
    for name, stats in functions.items():
        for key in _SUMMED:
            totals[key] += stats.get(key, 0)
        for route, count in stats["routes"].items():
            totals["routes"][route] += count
        for direction, count in stats["bytes_moved"].items():
            totals["bytes_moved"][direction] += count
        totals["fallbacks"] += [f"{name}: {reason}" for reason in stats["fallbacks"]]
        totals["gpu_failures"] += [f"{name}: {reason}" for reason in stats["gpu_failures"]]
    compiled = totals["routes"]["cpu"] + totals["routes"]["gpu"]
    totals["gpu_hit_rate"] = totals["routes"]["gpu"] / compiled if compiled else None
    inputs = totals["gpu_input_bytes"]
    totals["residency_ratio"] = totals["resident_bytes"] / inputs if inputs else None
    return totals


# -- Prometheus text exposition format (version 0.0.4) ---------------------------------------
def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_label(str(v))}"' for k, v in labels.items()) + "}"


#: metric name -> (type, help, how to read (function name, stats) into (labels, value) rows)
_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("autojit_compiles_total", "compiles", "Compiled versions (per backend)."),
    ("autojit_compile_seconds_total", "compile_seconds", "Seconds spent tracing and compiling."),
    ("autojit_cache_hits_total", "cache_hits", "Calls that found a compiled version."),
    ("autojit_cache_misses_total", "cache_misses", "Calls that traced a new version."),
    ("autojit_fast_calls_total", "fast_calls", "Calls served by the native fast path."),
    ("autojit_explorations_total", "explorations", "Calls run on the other device to "
                                                   "correct the cost model."),
    ("autojit_gpu_failures_total", "gpu_failure_count", "GPU failures rerun on the CPU."),
)
_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("autojit_gpu_hit_ratio", "gpu_hit_rate", "Share of compiled calls run on the GPU."),
    ("autojit_residency_ratio", "residency_ratio", "Share of GPU input bytes already on the "
                                                   "GPU."),
)


def _family(name: str, kind: str, text: str, rows: list[str]) -> list[str]:
    return [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *rows] if rows else []


def format_prometheus(stats: dict[str, Any]) -> str:
    """Return ``stats`` (from ``autojit.stats()``) in the Prometheus text exposition format."""
    functions = stats["per_function"]
    lines = _family("autojit_calls_total", "counter", "Calls by function and route.", [
        f"autojit_calls_total{_labels(function=f, route=r)} {n}"
        for f, s in functions.items() for r, n in s["routes"].items()])
    for name, key, text in _COUNTERS:
        lines += _family(name, "counter", text, [
            f"{name}{_labels(function=f)} {s[key]}" for f, s in functions.items()])
    lines += _family("autojit_bytes_moved_total", "counter", "Bytes copied host<->GPU.", [
        f"autojit_bytes_moved_total{_labels(function=f, direction=d)} {n}"
        for f, s in functions.items() for d, n in s["bytes_moved"].items()])
    for name, key, text in _GAUGES:
        lines += _family(name, "gauge", text, [
            f"{name}{_labels(function=f)} {s[key]}" for f, s in functions.items()
            if s[key] is not None])
    lines += _latency_family(functions)
    lines += _router_family(stats.get("router"))
    return "\n".join(lines) + "\n"


def _latency_family(functions: dict[str, dict[str, Any]]) -> list[str]:
    name, rows = "autojit_call_latency_seconds", []
    for f, s in functions.items():
        for route, summary in s["latency"].items():
            for q, quantile in (("p50", "0.5"), ("p99", "0.99")):
                labels = _labels(function=f, route=route, quantile=quantile)
                rows.append(f"{name}{labels} {summary[q]}")
            rows.append(f"{name}_sum{_labels(function=f, route=route)} "
                        f"{s['latency_sum_s'][route]}")
            rows.append(f"{name}_count{_labels(function=f, route=route)} {s['routes'][route]}")
    return _family(name, "summary", "Call latency by route (seconds).", rows)


def _router_family(router: dict[str, Any] | None) -> list[str]:
    if not router:
        return []
    lines = _family("autojit_gpu_breaker_open", "gauge", "1 while the GPU breaker is open.", [
        f"autojit_gpu_breaker_open {int(router['breaker']['state'] != 'closed')}"])
    return lines + _family("autojit_device_utilisation", "gauge", "Sampled device load.", [
        f"autojit_device_utilisation{_labels(device=d)} {load['utilisation']}"
        for d, load in router["load"].items()])


# -- the at-exit summary ---------------------------------------------------------------------
def summary_text(stats: dict[str, Any]) -> str:
    """Return a few human lines summarising ``stats`` (from ``autojit.stats()``)."""
    routes = stats["routes"]
    hit = stats["gpu_hit_rate"]
    lines = [f"autojit: {stats['functions']} functions, {stats['calls']} calls "
             f"(cpu {routes['cpu']}, gpu {routes['gpu']}, python {routes['python']}); "
             f"GPU hit rate {'-' if hit is None else f'{hit:.1%}'}; "
             f"{stats['compiles']} compiles in {stats['compile_seconds']:.2f} s; "
             f"cache {stats['cache_hits']} hits / {stats['cache_misses']} misses; moved "
             f"{stats['bytes_moved']['host_to_device']} B to GPU, "
             f"{stats['bytes_moved']['device_to_host']} B back"]
    for name, s in stats["per_function"].items():
        latency = ", ".join(f"{r} p50 {_ms(v['p50'])} p99 {_ms(v['p99'])}"
                            for r, v in s["latency"].items())
        lines.append(f"  {name}: {s['calls']} calls {s['routes']}; {latency or 'no timings'}")
    return "\n".join(lines) + "\n"
