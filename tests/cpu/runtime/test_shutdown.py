"""Exit, fork and finalisation right after a split call: no process may die.

Why: a call split across the worker team leaves the workers spinning in native code (for
``AUTOJIT_THREAD_SPIN_US``) after it returns. At interpreter exit, module-level objects are
freed, among them the pages the ELF loader linked cached code into and the team's job
block; a worker still spinning there crashed the process (SIGSEGV: 31 of these 200 exits
before the fix, more on a busy machine). Each child here exits right after such a call,
with the code linked from a warm disk cache, a spin time of 1e11 µs (a worker would spin for
a day) and every call split. The 200-process run takes ~25 s on two idle cores (8 children
at a time), so it runs with the rest of the suite.

``python tests/cpu/runtime/test_shutdown.py [count]`` prints the figures (processes, deaths, time).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: the environment of every child: a day of spinning, two threads, every call split
SPLIT_ENV = {"AUTOJIT_THREAD_SPIN_US": "100000000000", "AUTOJIT_NUM_THREADS": "2",
             "AUTOJIT_THREAD_MIN_WORK": "0"}

#: the children's common start: a split call (a reduction over rows: an outer split)
PRELUDE = textwrap.dedent("""\
    import os, sys, threading, time
    import numpy as np
    from autojit import autoroute
    from autojit.lower_cpu import threads

    @autoroute
    def f(x):
        return np.sqrt(np.abs(x)).sum(axis=1)

    X = np.ones((512, 256))
    EXPECTED = np.full(512, 256.0)

    def call():
        r = f(X)
        assert np.array_equal(r, EXPECTED), r
        assert sum(threads.SPLITS.values()) > 0, "the call was not split"
        return r
    """)

#: name -> (the rest of the child's program, expected exit code, expected text on stdout)
SCENARIOS: dict[str, tuple[str, int, str]] = {
    "plain exit": ("call()\nprint('done', flush=True)\n", 0, "done"),
    "sys.exit with a code": ("call()\nprint('done', flush=True)\nsys.exit(3)\n", 3, "done"),
    "os._exit (no atexit: workers die with the process)":
        ("call()\nprint('done', flush=True)\nos._exit(0)\n", 0, "done"),
    "uncaught exception": ("call()\nprint('done', flush=True)\nraise RuntimeError('x')\n",
                           1, "done"),
    "sys.exit inside a thread": (textwrap.dedent("""\
        def body():
            call()
            sys.exit(5)       # ends this thread only
        t = threading.Thread(target=body)
        t.start(); t.join()
        print('done', flush=True)
        """), 0, "done"),
    "an atexit handler that calls and raises": (textwrap.dedent("""\
        import atexit
        def late():
            call()
            print('late done', flush=True)
            raise RuntimeError('in atexit')
        atexit.register(late)
        call()
        """), 0, "late done"),
    "an atexit handler registered before the import calls after the shutdown": (
        "", 0, "early done"),   # PRELUDE_EARLY below: registered before autojit is imported
    "a module-level object whose __del__ calls at finalisation": (textwrap.dedent("""\
        class Late:
            def __del__(self):
                try:
                    call()
                    print('del done', flush=True)
                except BaseException as exc:   # autojit may be half torn down by now
                    print('del raised', type(exc).__name__, flush=True)
        LATE = Late()
        call()
        print('done', flush=True)
        """), 0, "done"),
    "a fork child exits right after a split call": (textwrap.dedent("""\
        call()
        for how in ('return', 'sys.exit', 'os._exit'):
            pid = os.fork()
            if pid == 0:
                call()
                if how == 'os._exit':
                    os._exit(0)
                sys.exit(0)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (how, status)
        call()
        print('done', flush=True)
        """), 0, "done"),
    "exit while a daemon thread is mid-call": (textwrap.dedent("""\
        started = threading.Event()
        def loop():
            while True:
                call()
                started.set()
        threading.Thread(target=loop, daemon=True).start()
        started.wait()
        print('done', flush=True)
        """), 0, "done"),
    "exit waits for a non-daemon thread's calls": (textwrap.dedent("""\
        def some():
            for _ in range(20):
                call()
            print('thread done', flush=True)
        threading.Thread(target=some).start()
        print('done', flush=True)
        """), 0, "thread done"),
}

_EARLY = textwrap.dedent("""\
    import atexit
    def early():
        call()                   # runs after autojit's own exit handler stopped the team
        print('early done', flush=True)
    atexit.register(early)
    """)


def child_program(name: str) -> str:
    """Return the source of one scenario's child."""
    body = SCENARIOS[name][0]
    if name.startswith("an atexit handler registered before"):
        return (_EARLY.replace("call()", "__import__('__main__').call()")
                + PRELUDE + "call()\n")
    return PRELUDE + body


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


#: seconds a child may take, far more than one needs even on a busy machine
CHILD_SECONDS = 60.0


def run_children(source: str, env: dict[str, str], count: int, at_once: int = 8,
                 timeout: float = CHILD_SECONDS) -> list[Outcome]:
    """Run ``count`` copies of ``source``, ``at_once`` at a time; return their outcomes."""
    outcomes: list[Outcome] = []
    for start in range(0, count, at_once):
        procs = [subprocess.Popen([sys.executable, "-c", source], env=env, cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(min(at_once, count - start))]
        deadline = time.monotonic() + timeout
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err += "\n[killed: timed out]"
            outcomes.append(Outcome(proc.returncode, out, err))
    return outcomes


def child_env(cache_dir: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return the children's environment: this checkout first on the path, a warm cache."""
    env = dict(os.environ, **SPLIT_ENV, AUTOJIT_CACHE_DIR=cache_dir, **(extra or {}))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def warm(source: str, env: dict[str, str]) -> None:
    """Run ``source`` once so that later children link its code from the disk cache."""
    first = run_children(source, env, 1)[0]
    assert first.code == 0, first


def failures(outcomes: Sequence[Outcome], code: int, text: str) -> list[Outcome]:
    """Return the outcomes with another exit code or without ``text`` on stdout."""
    return [o for o in outcomes if o.code != code or text not in o.out.splitlines()]


def describe(bad: Sequence[Outcome]) -> str:
    codes = sorted({o.code for o in bad})
    return f"{len(bad)} died or misbehaved, exit codes {codes}; first: {bad[0]}" if bad else ""


@pytest.fixture(scope="module")
def warm_cache() -> str:
    """A disk cache holding the children's kernels and the team's native code."""
    folder = tempfile.mkdtemp(prefix="autojit-shutdown-")
    warm(child_program("plain exit"), child_env(folder))
    return folder


#: processes of the big run; none may die
PROCESSES = 200


def test_two_hundred_exits_right_after_a_split_call_never_crash(warm_cache: str) -> None:
    """A spin of 1e11 µs must not delay exit either: a child that does not end within
    ``CHILD_SECONDS`` is killed and counted (a busy machine slows each child to ~2 s)."""
    outcomes = run_children(child_program("plain exit"), child_env(warm_cache), PROCESSES)
    bad = failures(outcomes, 0, "done")
    assert not bad, describe(bad)


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "plain exit"])
def test_exit_variants_after_a_split_call_never_crash(warm_cache: str, name: str) -> None:
    _, code, text = SCENARIOS[name]
    outcomes = run_children(child_program(name), child_env(warm_cache), 4, at_once=4)
    bad = failures(outcomes, code, text)
    assert not bad, describe(bad)
    assert all("Segmentation" not in o.err and "Fatal Python" not in o.err for o in outcomes)


def test_closing_the_team_stops_spinning_workers_at_once(warm_cache: str) -> None:
    """What exit does: workers spinning for a day leave native code and are joined within
    a second; split calls after it still run, on the calling thread."""
    source = PRELUDE + textwrap.dedent("""\
        from autojit.lower_cpu import team
        call()
        crew = team.team()
        began = time.monotonic()
        joined = crew.close()
        quick = time.monotonic() - began < 1.0
        alive = [t.name for t in threading.enumerate() if t.name.startswith('autojit-worker')]
        call()
        print('closed', joined, quick, alive, flush=True)
        """)
    outcomes = run_children(source, child_env(warm_cache), 2, at_once=2)
    bad = failures(outcomes, 0, "closed True True []")
    assert not bad, describe(bad)


def test_exit_after_a_cold_compile_never_crashes() -> None:
    """Code linked by LLVM's JIT (an empty cache) is kept for the life of the process too."""
    env = child_env(tempfile.mkdtemp(prefix="autojit-shutdown-cold-"),
                    {"AUTOJIT_CACHE_MAX_MB": "0"})
    outcomes = run_children(child_program("plain exit"), env, 4, at_once=4)
    bad = failures(outcomes, 0, "done")
    assert not bad, describe(bad)


def main(argv: Sequence[str]) -> None:
    """Print the stress figures: processes, how many died, seconds."""
    count = int(argv[0]) if argv else PROCESSES
    folder = tempfile.mkdtemp(prefix="autojit-shutdown-")
    env = child_env(folder)
    warm(child_program("plain exit"), env)
    started = time.perf_counter()
    outcomes = run_children(child_program("plain exit"), env, count)
    bad = failures(outcomes, 0, "done")
    print(f"{count} processes, {len(bad)} died (exit codes {sorted({o.code for o in bad})}), "
          f"{time.perf_counter() - started:.1f} s")
    for name, (_, code, text) in SCENARIOS.items():
        outcomes = run_children(child_program(name), env, 8)
        bad = failures(outcomes, code, text)
        print(f"  {name}: 8 processes, {len(bad)} failed {describe(bad)[:300]}")


if __name__ == "__main__":
    main(sys.argv[1:])
