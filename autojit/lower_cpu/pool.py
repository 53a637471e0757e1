"""A pool of Python worker threads: the fallback for splitting one kernel call where the
native team (``team.py``) could not be compiled.

Workers start once (on the first split call) and then sleep on their own queue. A call on
``t`` threads wakes ``t - 1`` workers; they and the calling thread take the call's chunks
from one shared queue until it is empty (a core lent to another process for a while then
costs only its share of the chunks). Kernels are called through ctypes, which
releases the GIL for the foreign call, so the chunks really run in parallel; each chunk
costs ~4 µs of Python, and each wake-up 15-100 µs here.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Sequence

Task = Callable[[], None]


class _Failure:
    """A task's exception, carried back to the caller."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _work(tasks: queue.SimpleQueue) -> None:
    """Worker loop: run each task, report it done (or failed) on its reply queue."""
    while True:
        task, reply = tasks.get()
        try:
            task()
        except BaseException as exc:  # noqa: BLE001 — handed back to the caller, re-raised there
            reply.put(_Failure(exc))
        else:
            reply.put(None)


class ThreadPool:
    """Daemon worker threads fed one task per worker per call (see the module docstring)."""

    def __init__(self) -> None:
        self._queues: list[queue.SimpleQueue] = []
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Return how many workers have been started."""
        return len(self._queues)

    def _grow(self, workers: int) -> None:
        with self._lock:
            while len(self._queues) < workers:
                tasks: queue.SimpleQueue = queue.SimpleQueue()
                thread = threading.Thread(target=_work, args=(tasks,), daemon=True,
                                          name=f"autojit-worker-{len(self._queues)}")
                thread.start()
                self._queues.append(tasks)

    def run(self, tasks: Sequence[Task], threads: int | None = None) -> None:
        """Run ``tasks`` on up to ``threads`` threads (default: one per task), this one
        included: every thread takes the next task until none is left, so a thread that
        the OS delays takes fewer. Returns when all are done; re-raises the first task
        exception seen, if any."""
        threads = len(tasks) if threads is None else min(threads, len(tasks))
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for task in tasks:
            todo.put(task)
        helpers = max(threads - 1, 0)
        if len(self._queues) < helpers:
            self._grow(helpers)
        reply: queue.SimpleQueue = queue.SimpleQueue()
        for worker in self._queues[:helpers]:
            worker.put((functools.partial(_drain, todo), reply))
        failure: BaseException | None = None
        try:
            _drain(todo)
        except BaseException as exc:  # noqa: BLE001 — wait for the workers before raising
            failure = exc
        for _ in range(helpers):
            done = reply.get()
            if isinstance(done, _Failure) and failure is None:
                failure = done.exc
        if failure is not None:
            raise failure


def _drain(todo: queue.SimpleQueue) -> None:
    """Run tasks from ``todo`` until it is empty."""
    while True:
        try:
            task = todo.get_nowait()
        except queue.Empty:
            return
        task()


_POOL = ThreadPool()


def pool() -> ThreadPool:
    """Return the process's pool (workers are started on first use)."""
    return _POOL


def _reset_after_fork() -> None:
    """A forked child inherits the pool object but not its threads: start afresh."""
    global _POOL
    _POOL = ThreadPool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
