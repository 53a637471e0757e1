"""An Executable: one compiled version of a function for one signature — its plan (or the
reason there is none), its programs per target compiled once, its schedule — and what the
dispatcher hangs on it (the router's table, the disk slot, the trace's guards).

Devices and targets take an Executable and never a dispatcher: compiling once is the
Executable's job (:meth:`Executable.programs`), so calibration probes, simulated devices
and real calls all run the same object the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from autojit.cache import disk_cache
from autojit.fuse.plan import Plan
from autojit.lower_cpu.budget import check_budget
from autojit.runtime.arrays import Signature
from autojit.runtime.schedule import Schedule, build_schedule, run_plan
from autojit.runtime.targets import TARGETS, Target


class Guarded(Protocol):
    """What the trace read besides the arguments (``dispatch.guards.Guards``): the
    Executable answers only while ``hold()``; ``checks`` are what the fast path compares."""

    checks: tuple[list, ...]

    def hold(self) -> bool: ...


class _Unguarded:
    """The guards of an Executable whose trace read nothing outside its arguments."""

    checks: tuple[list, ...] = ()

    def hold(self) -> bool:
        return True


UNGUARDED: Guarded = _Unguarded()


@dataclass(eq=False)
class Executable:
    """One compiled version: a plan (or the reason there is none) and its programs.

    ``on_compile(seconds)`` is told of each compile (the dispatcher counts them in its
    stats); ``routing`` is the router's ``RouteTable`` for it (set by the router, which owns
    the cost model: the runtime does not import routing).
    """

    signature: Signature
    plan: Plan | None
    reason: str | None = None
    programs_by_target: dict[str, list[Any]] = field(default_factory=dict)
    routing: Any = field(default=None, repr=False)       # routing.route.RouteTable
    disk: disk_cache.DiskSlot | None = field(default=None, repr=False)
    guards: Guarded = field(default=UNGUARDED, repr=False)
    on_compile: Callable[[float], None] | None = field(default=None, repr=False)
    # routing.host_loop.HostLoopRule: its host loop against plain Python (set on a call
    # whose loops ran as the host loop)
    host_loop: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def programs(self, target: str) -> list[Any]:
        """Return (compiling once, or loading from the disk slot) the programs for
        ``target`` ("cpu"/"gpu"). Raises ``CompileBudgetError`` for a CPU plan too big to
        compile in time, and whatever the compiler raises."""
        programs = self.programs_by_target.get(target)
        if programs is not None:
            return programs
        with self._lock:
            programs = self.programs_by_target.get(target)
            if programs is None and self.disk is not None:
                programs = disk_cache.load_programs(self.disk, target)
            if programs is None:
                assert self.plan is not None, "an Executable without a plan has no programs"
                if target == "cpu":   # over the budget: falls back, with the reason
                    check_budget(self.plan.kernels)
                started = time.perf_counter()
                compiler = TARGETS[target]
                programs = [compiler.compile(k) for k in self.plan.kernels]
                if self.on_compile is not None:
                    self.on_compile(time.perf_counter() - started)
                if self.disk is not None:
                    disk_cache.store_programs(self.disk, target, programs)
            self.programs_by_target[target] = programs
        return programs

    def schedule(self, argument_count: int) -> Schedule:
        """Return the plan flattened for a call with ``argument_count`` arguments."""
        assert self.plan is not None
        return build_schedule(self.plan, argument_count)

    def run(self, target: Target, programs: Sequence[Any], args: Sequence[Any],
            sizes: dict[str, int]) -> Any:
        """Run the plan's kernels (``programs``, compiled for ``target``'s kind) on
        ``target``; return the results as NumPy would."""
        assert self.plan is not None
        return run_plan(self.plan, programs, target, args, sizes)
