"""The native worker team (``autojit/lower_cpu/team.py``): workers that spin between calls
take the next call without a wake-up, sleep after their spin, and step off the CPU of
the thread that posted the call."""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

from tests.support.oracle import assert_same_value
from tests.support.programs import softmax

import autojit
from autojit import autoroute
from autojit.lower_cpu import team as team_module

pytestmark = pytest.mark.skipif(team_module.team() is None, reason="no native team here")


def _split(spin_us: float) -> autojit.config:
    return autojit.config(num_threads=2, thread_min_work=0, thread_spin_us=spin_us)


def _mailboxes(crew: team_module.Team) -> list[int]:
    stride = team_module._MAILBOX_STRIDE
    return [int(crew._mailboxes[w * stride]) for w in range(crew.size)]


def _wait_until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def test_a_spinning_worker_takes_the_next_call_without_a_wake_up():
    crew = team_module.team()
    f = autoroute(softmax, force="cpu")
    x = np.random.default_rng(3).random((64, 300))
    want = f(x)
    with _split(1e6):                      # a worker waits up to a second for the next call
        f(x)                               # wakes the worker (or finds it spinning)
        hot, woken = crew.hot_posts, crew.wake_ups
        for _ in range(5):
            assert_same_value(f(x), want, rtol=1e-12, atol=1e-15)
        assert crew.hot_posts - hot >= 4 and crew.wake_ups - woken <= 1


def test_workers_sleep_after_their_spin_and_wake_for_the_next_call():
    crew = team_module.team()
    f = autoroute(softmax, force="cpu")
    x = np.random.default_rng(4).random((64, 300))
    want = f(x)
    with _split(1000):
        f(x)
        assert _wait_until(lambda: set(_mailboxes(crew)) == {team_module.SLEEPING})
        woken = crew.wake_ups
        assert_same_value(f(x), want, rtol=1e-12, atol=1e-15)
        assert crew.wake_ups == woken + 1


def test_a_blas_step_parks_spinning_workers():
    """Before a matmul (BLAS brings its own threads) the workers stop spinning and sleep,
    long before their spin would end; the kernel after it wakes them and is right."""
    crew = team_module.team()
    f = autoroute(lambda a, w: np.maximum(softmax(a) @ w, 0.5), force="cpu")
    rng = np.random.default_rng(5)
    a, w = rng.random((300, 200)), rng.random((200, 100))
    want = f(a, w)
    with _split(1e7):                          # a spin of ten seconds, unless parked
        f(a, w)
        team_module.park()
        assert _wait_until(lambda: set(_mailboxes(crew)) == {team_module.SLEEPING}, 2.0)
        woken = crew.wake_ups
        assert_same_value(f(a, w), want, rtol=1e-12, atol=1e-15)
        assert crew.wake_ups > woken           # the parked workers were woken


def test_step_aside_masks_leave_out_one_cpu_each():
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    masks = team_module._step_aside_masks()
    for cpu in allowed:
        bits = np.unpackbits(masks[cpu], bitorder="little")
        others = {c for c in allowed if c != cpu} or {cpu}
        assert set(np.flatnonzero(bits)) == others


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or len(os.sched_getaffinity(0)) < 2, reason="needs Linux and 2 CPUs")
def test_a_thread_on_the_callers_cpu_steps_aside():
    """``step_aside`` moves the calling thread off the CPU the job block names (and only
    then): the worker that finds itself on the caller's CPU runs elsewhere."""
    code = team_module.native()
    masks = team_module._step_aside_masks()
    allowed = os.sched_getaffinity(0)
    seen: dict[str, object] = {}

    def probe() -> None:
        job = np.zeros(16, np.int64)
        job[9:11] = masks.ctypes.data, len(masks)
        here = min(allowed)
        os.sched_setaffinity(0, {here})
        job[8] = max(allowed)              # another CPU: stays
        code.step_aside(job.ctypes.data)
        seen["other"] = os.sched_getaffinity(0)
        job[8] = here                      # this CPU: moves to the rest
        code.step_aside(job.ctypes.data)
        seen["same"] = os.sched_getaffinity(0)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    assert seen["other"] == {min(allowed)}
    assert seen["same"] == allowed - {min(allowed)}


def test_spin_time_from_the_environment(monkeypatch):
    monkeypatch.setenv("AUTOJIT_THREAD_SPIN_US", "250")
    try:
        assert autojit.reload_environment().thread_spin_us == 250.0
    finally:
        monkeypatch.undo()
        autojit.reload_environment()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_team():
    """A child forked while the parent's workers spin gets a fresh team (its threads were
    not copied) and finishes split calls, right, instead of waiting for them."""
    f = autoroute(softmax, force="cpu")
    x = np.random.default_rng(6).random((64, 300))
    want = f(x)
    with _split(1e6):
        f(x)                                   # the parent's workers spin now
        crew_before = team_module.team()
        pid = os.fork()
        if pid == 0:                           # the child: exit code 0 only when right
            code = 3
            try:
                import signal
                signal.alarm(20)               # a hang fails the test instead of blocking
                with _split(1e6):
                    ok = all(np.allclose(f(x), want, rtol=1e-12) for _ in range(3))
                code = 0 if ok and team_module.team() is not crew_before else 4
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_workers_do_not_spin_when_there_are_more_threads_than_cores():
    """With more threads than usable cores a spinning worker would hold a core another
    thread needs: the workers sleep right after their share instead."""
    crew = team_module.team()
    f = autoroute(softmax, force="cpu")
    x = np.random.default_rng(8).random((256, 300))
    want = f(x)
    # the workers get 5 s to fall asleep: half the 10 s spin this tells apart
    with autojit.config(num_threads=crew._cores + 2, thread_min_work=0, thread_spin_us=1e7):
        assert_same_value(f(x), want, rtol=1e-12, atol=1e-15)
        assert _wait_until(lambda: set(_mailboxes(crew)) == {team_module.SLEEPING}, 5.0)
