"""Run many programs in worker processes: a per-program timeout, a worker that dies (a
segfault in compiled code) or hangs is a failure of the program it was running, and a fresh
worker takes its place. Each failure is shrunk in its worker, under a time budget."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

#: programs a worker runs before a fresh one replaces it (compiled code accumulates)
RECYCLE_AFTER = 150
#: seconds a fresh worker may take to import autojit before it counts as broken
STARTUP_S = 180.0


def _record(seed: str, outcome: Any, program: Any, failure: Any, shrunk: bool,
            runs: int = 0) -> dict[str, Any]:
    """A picklable summary of one program's run."""
    record: dict[str, Any] = {
        "seed": seed, "calls": outcome.calls, "numpy_raised": outcome.numpy_raised,
        "fallback_calls": outcome.fallback_calls, "reasons": dict(outcome.reasons),
        "failure": None,
    }
    if failure is not None:
        record["failure"] = {
            "kind": failure.kind, "where": failure.where, "text": failure.text(),
            "ops": sorted(program.ops()), "shrunk": shrunk, "shrink_runs": runs,
            "repro": program.repro(f"seed {seed}: {failure.text()}"),
            "statements": len(program.body)}
    return record


def worker_main(conn: Connection, cache_dir: str, shrink_seconds: float, warn: bool) -> None:
    """Serve seeds from ``conn`` until told to stop (None)."""
    os.environ["AUTOJIT_CACHE_DIR"] = cache_dir
    warnings.simplefilter("ignore")
    from tests.fuzz.gen import generate
    from tests.fuzz.runner import run_program
    from tests.fuzz.shrink import shrink
    conn.send(("ready", None, None))        # the program clock starts after the imports
    while True:
        message = conn.recv()
        if message is None:
            return
        seed, budget = message if isinstance(message, tuple) else (message, shrink_seconds)
        try:
            program = generate(seed)
            # before running it: if the run kills or hangs this process, the parent has it
            conn.send(("program", seed, {"repro": program.repro(f"seed {seed}"),
                                         "ops": sorted(program.ops()),
                                         "statements": len(program.body)}))
            outcome = run_program(program, warn)
        except Exception:  # noqa: BLE001 - the harness itself failed: say so, go on
            conn.send(("error", seed, traceback.format_exc()))
            continue
        if outcome.failure is None:
            conn.send(("done", seed, _record(seed, outcome, program, None, False)))
            continue
        conn.send(("found", seed, _record(seed, outcome, program, outcome.failure, False)))
        small, failure, runs = program, outcome.failure, 0
        if budget > 0:
            small, failure, runs = shrink(program, outcome.failure, budget)
        conn.send(("done", seed, _record(seed, outcome, small, failure, True, runs)))


@dataclass
class Worker:
    """One worker process and what it is doing."""

    process: Any
    conn: Connection
    seed: str | None = None
    started: float = 0.0
    phase: str = "starting"
    found: dict[str, Any] | None = None
    program: dict[str, Any] | None = None
    served: int = 0


@dataclass
class Results:
    """Everything a fuzzing run found."""

    programs: int = 0
    calls: int = 0
    numpy_raised: int = 0
    fallback_calls: int = 0
    compiled_programs: int = 0
    reasons: Counter = field(default_factory=Counter)
    records: list[dict[str, Any]] = field(default_factory=list)
    harness_errors: list[str] = field(default_factory=list)
    #: seeds whose program does not finish in plain NumPy either (no test case)
    numpy_hangs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [r["failure"] for r in self.records if r.get("failure")]

    def add(self, record: dict[str, Any]) -> None:
        self.programs += 1
        self.calls += record["calls"]
        self.numpy_raised += record["numpy_raised"]
        self.fallback_calls += record["fallback_calls"]
        self.compiled_programs += record["calls"] > 0 and record["fallback_calls"] == 0
        self.reasons.update(record["reasons"])
        if record.get("failure"):
            self.records.append(record)


class Pool:
    """``jobs`` workers fed seeds ``prefix:0``, ``prefix:1``... ."""

    def __init__(self, jobs: int, timeout: float, shrink_seconds: float,
                 warn: bool = False, worker: Any = None, max_shrinks: int | None = None) -> None:
        self.jobs, self.timeout, self.shrink_seconds, self.warn = \
            jobs, timeout, shrink_seconds, warn
        self.worker = worker or worker_main     # a test may pass one that misbehaves
        #: failures shrunk at most (the rest are reported as found: a budget for CI)
        self.max_shrinks = max_shrinks
        self.shrinks = 0
        self.ctx = mp.get_context("spawn")
        self.cache_dir = tempfile.mkdtemp(prefix="autojit-fuzz-cache-")
        self.workers: list[Worker] = []

    def _start(self) -> Worker:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(target=self.worker, daemon=True,
                                   args=(child, self.cache_dir, self.shrink_seconds, self.warn))
        process.start()
        child.close()
        return Worker(process, parent, started=time.monotonic())

    def _kill(self, worker: Worker) -> None:
        worker.process.kill()
        worker.process.join(5)
        worker.conn.close()

    def run(self, seeds: Any, deadline: float | None = None,
            progress: Any = None) -> Results:
        """Run every seed of the iterable ``seeds`` (or until ``deadline``)."""
        results = Results()
        started = time.monotonic()
        seeds = iter(seeds)
        self.workers = [self._start() for _ in range(self.jobs)]
        try:
            self._loop(seeds, deadline, progress, results)
        except KeyboardInterrupt:           # Ctrl-C or SIGTERM: report what was done
            results.interrupted = True
        finally:
            for w in self.workers:
                self._kill(w)
            shutil.rmtree(self.cache_dir, ignore_errors=True)
        results.seconds = time.monotonic() - started
        return results

    def _loop(self, seeds: Any, deadline: float | None, progress: Any,
              results: Results) -> None:
        exhausted = False
        while True:
            for i, w in enumerate(self.workers):
                if w.phase == "idle" and not exhausted:
                    if deadline is not None and time.monotonic() > deadline:
                        exhausted = True
                        break
                    if w.served >= RECYCLE_AFTER:
                        w.conn.send(None)
                        w.process.join(10)
                        self.workers[i] = self._start()
                        continue
                    seed = next(seeds, None)
                    if seed is None:
                        exhausted = True
                        break
                    w.conn.send((seed, self._shrink_budget()))
                    w.seed, w.phase, w.started, w.found = seed, "run", time.monotonic(), None
                    w.program = None
                    w.served += 1
            busy = [w for w in self.workers if w.phase != "idle"]
            if exhausted and not busy:
                break
            for conn in wait([w.conn for w in busy], timeout=0.5):
                w = next(w for w in busy if w.conn is conn)
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    w.process.join(5)
                    self._lost(w, results, f"crash:exit {w.process.exitcode}", progress)
                    continue
                self._handle(w, message, results, progress)
            now = time.monotonic()
            for w in [w for w in self.workers if w.phase != "idle"]:
                limit = {"run": self.timeout, "starting": STARTUP_S}.get(
                    w.phase, self.timeout + self.shrink_seconds + 30)
                if now - w.started > limit:
                    self._lost(w, results, "timeout", progress)

    def _shrink_budget(self) -> float:
        """Seconds the next failure may be shrunk for (0 once max_shrinks were)."""
        if self.max_shrinks is not None and self.shrinks >= self.max_shrinks:
            return 0.0
        return self.shrink_seconds

    def _handle(self, w: Worker, message: tuple, results: Results, progress: Any) -> None:
        tag, seed, payload = message
        if tag == "ready":
            w.phase = "idle"
            return
        if tag == "program":
            w.program = payload
            return
        if tag == "found":
            w.phase, w.found, w.started = "shrink", payload, time.monotonic()
            self.shrinks += 1
            return
        if tag == "error":
            results.harness_errors.append(f"{seed}: {payload}")
            results.programs += 1
        else:
            results.add(payload)
            if progress and payload.get("failure"):
                progress(payload)
        w.phase, w.seed, w.found = "idle", None, None

    def _lost(self, w: Worker, results: Results, kind: str, progress: Any = None) -> None:
        """The worker died or hung: the program it ran is a failure (unshrunk)."""
        if w.phase == "starting":
            results.harness_errors.append(f"a worker could not start ({kind})")
            if len(results.harness_errors) > 3:
                raise RuntimeError("workers keep failing to start: "
                                   + "; ".join(results.harness_errors))
        elif w.found is not None:          # it died while shrinking: keep what it had found
            w.found["failure"]["text"] += f" (shrinking stopped: {kind})"
            results.add(w.found)
            if progress:
                progress(w.found)
        elif w.program is None:             # the generator itself: not autojit's failure
            results.harness_errors.append(f"{w.seed}: generating the program: {kind}")
            results.programs += 1
        elif kind == "timeout" and numpy_hangs(w.program["repro"], self.timeout):
            results.numpy_hangs.append(w.seed)   # e.g. 2 ** (a Python int of 10**38)
            results.programs += 1
        else:
            text = f"{kind}: the worker {'hung' if kind == 'timeout' else 'died'} running it"
            record = {"seed": w.seed, "calls": 0, "numpy_raised": 0, "fallback_calls": 0,
                      "reasons": {}, "failure": {
                          "kind": kind.split(" ")[0], "where": "", "text": text,
                          "ops": w.program["ops"], "shrunk": False, "shrink_runs": 0,
                          "repro": w.program["repro"].replace(
                              f'"""seed {w.seed}', f'"""seed {w.seed}: {text}', 1),
                          "statements": w.program["statements"]}}
            results.add(record)
            if progress:
                progress(record)
        self._kill(w)
        index = self.workers.index(w)
        self.workers[index] = self._start()


def signature(failure: dict[str, Any]) -> str:
    """Kind, autojit frame and op set: one line per distinct failure."""
    where = f" [{failure['where']}]" if failure.get("where") else ""
    return f"{failure['kind']}{where} {{{', '.join(failure['ops'])}}}"


def failure_class(failure: dict[str, Any]) -> str:
    """Kind and autojit frame (no op set): the coarse grouping of the summary."""
    where = f" [{failure['where']}]" if failure.get("where") else ""
    return f"{failure['kind']}{where}"


def write_repro(record: dict[str, Any], folder: Path) -> Path:
    """One failure's (shrunk) repro as ``folder/<class>-<seed>.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    failure = record["failure"]
    slug = re.sub(r"[^A-Za-z0-9]+", "_", failure_class(failure)).strip("_")[:60]
    path = folder / f"{slug}-{re.sub(r'[^0-9A-Za-z]+', '_', record['seed'])}.py"
    path.write_text(failure["repro"])
    return path


def write_repros(results: Results, folder: Path) -> list[Path]:
    """Each failure's (shrunk) repro in ``folder``."""
    return [write_repro(record, folder) for record in results.records]


def numpy_hangs(repro: str, timeout: float) -> bool:
    """Whether the program of ``repro`` does not finish in plain NumPy within ``timeout``
    seconds (a fresh process, no autojit): then a hung worker is no failure of autojit's,
    the program is not a test case (Python's ``2 ** n`` for an int n of 39 digits runs in
    one C call that no signal interrupts)."""
    source = repro.split("\nif __name__ == ")[0]
    script = (source + "\nimport warnings\nwarnings.simplefilter('ignore')\n"
              "for make in CALLS:\n    try:\n        with np.errstate(all='ignore'):\n"
              "            f(*make())\n    except Exception:\n        pass\n")
    try:
        subprocess.run([sys.executable, "-c", script], timeout=timeout, capture_output=True,
                       check=False)
    except subprocess.TimeoutExpired:
        return True
    return False


def summary(results: Results, top: int = 12) -> str:
    """The human summary a run prints."""
    rate = results.fallback_calls / results.calls if results.calls else 0.0
    lines = [f"programs {results.programs}, calls {results.calls} "
             f"({results.numpy_raised} where NumPy raised), failures {len(results.failures)}, "
             f"fallback calls {results.fallback_calls} ({rate:.1%}; programs that never fell "
             f"back: {results.compiled_programs}), "
             f"{results.seconds:.0f} s" + (" (interrupted)" if results.interrupted else "")]
    if results.numpy_hangs:
        lines.append(f"programs that do not finish in plain NumPy either (no test case): "
                     f"{', '.join(results.numpy_hangs)}")
    if results.harness_errors:
        lines.append(f"harness errors: {len(results.harness_errors)} (first below)")
        lines.append(results.harness_errors[0])
    classes = Counter(failure_class(f) for f in results.failures)
    if classes:
        lines.append("failures by class:")
        lines += [f"  {n:4d}  {c}" for c, n in classes.most_common()]
    sigs = Counter(signature(f) for f in results.failures)
    lines.append(f"distinct failure signatures: {len(sigs)}")
    lines += [f"  {n:4d}  {s}" for s, n in sigs.most_common(top)]
    if results.reasons:
        lines.append("top fallback reasons:")
        lines += [f"  {n:4d}  {r}" for r, n in results.reasons.most_common(top)]
    return "\n".join(lines)
