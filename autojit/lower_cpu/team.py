"""The worker team of split kernel calls: chunks taken in native code, and workers that
wait for the next call in native code too, for a while, before they sleep.

Why workers spin: on this machine (a shared 2-vCPU VM) a worker woken through a futex
starts its share 50-150 µs after the call began, and now and then 1-7 ms late: a vCPU
that went idle is resumed by the hypervisor when it gets to it. Measured on softmax
(256,128,128) float32 with a 0.2 s pause and one warm-up call before each timed call:
median 4.5 ms with futex hand-offs against 3.3 ms for torch.compile, whose OpenMP
threads spin between calls. So after its share of a call a worker keeps polling its
mailbox (``pause``, and a ``sched_yield`` now and then so that another thread wanting
the core gets it) for ``SPIN_SECONDS``; a call that comes in that time hands it work
with one compare-and-swap. Only a worker that stopped spinning is woken through Python.

Shared memory, all int64:

* the job block, laid out by ``JOB_FIELDS``: ``next`` chunk, chunks ``done``, ``count``,
  ``entry``, ``pointers``, ``pointer_stride``, ``metas``, ``meta_stride`` (``drain``'s
  arguments); then the caller's CPU, the step-aside masks and their count, the ``park``
  flag, the polls a worker spins after its share (set by each call, so a new spin time
  holds at once) and the ``closing`` word;
* one mailbox per worker (its own cache line): SLEEPING, SPINNING, POSTED or RUNNING.
  The caller moves SPINNING or SLEEPING to POSTED (a SLEEPING worker is then woken) and,
  once every chunk is done, takes back a post no worker claimed (POSTED to SPINNING)
  and waits out any worker still RUNNING, so the job block is free for the next call.
  A worker moves POSTED to RUNNING, back to SPINNING when its share is done, and
  SPINNING to SLEEPING when it gives up waiting.

One call uses the team at a time: a second Python thread splitting a call meanwhile
runs it alone (``Team.run`` returns False), which is slower, never wrong.

Exit and fork. Workers are daemon threads that may be spinning in native code (for a day,
with ``AUTOJIT_THREAD_SPIN_US=1e11``) when the interpreter exits; finalising it then frees
module-level objects, and a worker reading freed memory or unmapped code kills the
process (SIGSEGV). So nothing a worker touches is ever freed: the job block, the mailboxes
and the step-aside masks live in pages that are never unmapped (``lifelong_pages``), as
does linked code (``elf_loader``; LLVM's engine is never disposed at shutdown either).
And an exit handler (``atexit``, registered at import, so it runs after the handlers a
program registers later, which may still split calls) stops the team: it sets the job
block's ``closing`` word, which makes every spinning worker leave ``serve`` as ``park``
does (but no call clears it), sends each worker's Python loop a stop, and joins the workers
(briefly: one still running a chunk of a daemon thread's call finishes it in memory that
stays valid). Split calls after that run on the calling thread. A forked child has none of
the parent's threads: it starts a team of its own (``_reset_after_fork``).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import logging
import os
import platform
import queue
import re
import sys
import threading
import time
from typing import NamedTuple

import numpy as np

from autojit.lower_cpu.elf_loader import lifelong_pages

log = logging.getLogger("autojit")

SLEEPING, SPINNING, POSTED, RUNNING = 0, 1, 2, 3
#: how long a worker waits for the next call before it sleeps (``AUTOJIT_THREAD_SPIN_US``)
SPIN_SECONDS = 0.002
#: int64 slots per mailbox: each on its own 64-byte line
_MAILBOX_STRIDE = 8
#: workers a team starts at most (a call on more threads uses this many and the caller);
#: one bit each in what ``begin`` returns
MAX_WORKERS = 63


class JobField(NamedTuple):
    """One int64 slot of the job block."""

    name: str
    type: str            # the LLVM type it holds (``i64`` or ``ptr``)
    drain: bool = False  # one of ``drain``'s arguments after ``state`` (``begin`` fills it)


#: The job block, one int64 slot per field in this order: ``_NATIVE_IR`` names a field's
#: byte offset ``JOB.<name>``, ``Team`` its slot (``JOB_SLOT``), the ctypes signatures of
#: ``drain``/``begin`` its drain fields. ``next`` comes first: ``drain`` takes the block
#: itself as its ``state`` (``next`` at offset 0, ``done`` after it).
JOB_FIELDS = (
    JobField("next", "i64"),                  # the next chunk to take (atomic add)
    JobField("done", "i64"),                  # chunks done
    JobField("count", "i64", drain=True),     # chunks in this call
    JobField("entry", "ptr", drain=True),     # the entry each chunk calls
    JobField("pointers", "ptr", drain=True),  # chunk c's data: pointers + c * pstride
    JobField("pstride", "i64", drain=True),
    JobField("metas", "ptr", drain=True),     # chunk c's meta: metas + c * mstride
    JobField("mstride", "i64", drain=True),
    JobField("cpu", "i64"),                   # the CPU the caller posted from
    JobField("masks", "ptr"),                 # the step-aside masks (``_step_aside_masks``)
    JobField("known", "i64"),                 # how many masks
    JobField("parked", "i64"),                # ``park``: spinning workers sleep now
    JobField("spins", "i64"),                 # polls a worker spins after its share
    JobField("closing", "i64"),               # exit: set once, never cleared (``close``)
)
JOB_SLOT = {f.name: slot for slot, f in enumerate(JOB_FIELDS)}
#: int64 slots the job block takes (two spare)
_JOB_SLOTS = 16
assert len(JOB_FIELDS) <= _JOB_SLOTS
#: what a worker's wake queue receives to end its Python loop (exit: ``Team.close``)
_STOP = object()
#: how long exit waits for the workers to leave native code (a worker running a chunk of a
#: daemon thread's call may take longer: the memory it uses stays valid)
JOIN_SECONDS = 1.0

_CTYPES = {"i64": ctypes.c_int64, "ptr": ctypes.c_void_p}
#: ``drain``'s arguments after ``state``, and ``begin``'s after ``helpers``: the drain fields
_DRAIN_ARGS = tuple(_CTYPES[f.type] for f in JOB_FIELDS if f.drain)
_DrainFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, *_DRAIN_ARGS)
_ServeFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_BeginFn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                            *_DRAIN_ARGS, ctypes.c_int64)
_FinishFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_StepFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

#: ``drain(state, count, entry, pointers, pointer_stride, metas, meta_stride)``: take chunk
#: numbers from ``state[0]`` (atomic add), call ``entry`` on each chunk's rows and count
#: it done in ``state[1]``, until ``count`` are taken. ``serve(job, mailbox, spins)``: a
#: worker's wait (module docstring); returns when it gives up. ``begin(job, mailboxes,
#: helpers, count, entry, ...)``: fill the job block and post it to the first ``helpers``
#: mailboxes; return a bit per worker that sleeps (to be woken). ``finish(job, mailboxes,
#: helpers)``: drain on this thread, wait for every chunk, take back unclaimed posts and
#: wait out running workers. ``park(job)``: spinning workers sleep now (``begin``
#: clears it; so does the ``closing`` word, ``JOB.closing``, which no call clears).
#: Internal: ``post``, ``retract``, ``await``, ``relax`` (a
#: ``pause``, and every 256th time a ``sched_yield``).
_NATIVE_IR = """
define void @autojit.drain(ptr %state, i64 %count, ptr %entry, ptr %pointers,
                           i64 %pstride, ptr %metas, i64 %mstride) nounwind {
start:
  %completed = getelementptr i8, ptr %state, i64 JOB.done
  br label %next
next:
  %c = atomicrmw add ptr %state, i64 1 monotonic
  %more = icmp slt i64 %c, %count
  br i1 %more, label %call, label %exit
call:
  %po = mul i64 %c, %pstride
  %p = getelementptr i8, ptr %pointers, i64 %po
  %mo = mul i64 %c, %mstride
  %m = getelementptr i8, ptr %metas, i64 %mo
  call void %entry(ptr %p, ptr %m)
  %ignored = atomicrmw add ptr %completed, i64 1 release
  br label %next
exit:
  ret void
}

define internal void @autojit.drain_job(ptr %job) nounwind {
start:
LOAD_JOB
  call void @autojit.drain(ptr %job, i64 %count, ptr %entry, ptr %pointers, i64 %pstride,
                           ptr %metas, i64 %mstride)
  ret void
}

define internal void @autojit.relax(i64 %i) nounwind {
start:
  PAUSE
  %low = and i64 %i, 255
  %yield = icmp eq i64 %low, 255
  br i1 %yield, label %give, label %done
give:
  %ignored = call i32 @sched_yield()
  br label %done
done:
  ret void
}

define internal void @autojit.await(ptr %word, i64 %low, i64 %high) nounwind {
start:
  %span = sub i64 %high, %low
  br label %poll
poll:
  %i = phi i64 [0, %start], [%j, %wait]
  %seen = load atomic i64, ptr %word acquire, align 8
  %above = sub i64 %seen, %low
  %finished = icmp ule i64 %above, %span
  br i1 %finished, label %yes, label %wait
wait:
  call void @autojit.relax(i64 %i)
  %j = add i64 %i, 1
  br label %poll
yes:
  ret void
}

define void @autojit.serve(ptr %job, ptr %mailbox, i64 %spins) nounwind {
start:
  br label %poll
poll:
  %i = phi i64 [0, %start], [0, %run], [%j, %idle], [%j, %sleep]
  %limit = phi i64 [%spins, %start], [%fresh, %run], [%limit, %idle], [%limit, %sleep]
  %state = load atomic i64, ptr %mailbox acquire, align 8
  %posted = icmp eq i64 %state, BOX.POSTED
  br i1 %posted, label %claim, label %idle
claim:
  %pair = cmpxchg ptr %mailbox, i64 BOX.POSTED, i64 BOX.RUNNING acq_rel acquire
  %claimed = extractvalue {i64, i1} %pair, 1
  br i1 %claimed, label %run, label %idle
run:
  call void @autojit.step_aside(ptr %job)
  call void @autojit.drain_job(ptr %job)
  %fresh.p = getelementptr i8, ptr %job, i64 JOB.spins
  %fresh = load atomic i64, ptr %fresh.p monotonic, align 8
  store atomic i64 BOX.SPINNING, ptr %mailbox release, align 8
  br label %poll
idle:
  call void @autojit.relax(i64 %i)
  %j = add i64 %i, 1
  %parked.p = getelementptr i8, ptr %job, i64 JOB.parked
  %parked = load atomic i64, ptr %parked.p monotonic, align 8
  %closing.p = getelementptr i8, ptr %job, i64 JOB.closing
  %closing = load atomic i64, ptr %closing.p monotonic, align 8
  %stop = or i64 %parked, %closing
  %spun = icmp sge i64 %j, %limit
  %leave = icmp ne i64 %stop, 0
  %over = or i1 %spun, %leave
  br i1 %over, label %sleep, label %poll
sleep:
  %gone = cmpxchg ptr %mailbox, i64 BOX.SPINNING, i64 BOX.SLEEPING acq_rel acquire
  %slept = extractvalue {i64, i1} %gone, 1
  br i1 %slept, label %exit, label %poll
exit:
  ret void
}

define internal i64 @autojit.post(ptr %job, ptr %mailbox) nounwind {
start:
  %cpu.p = getelementptr i8, ptr %job, i64 JOB.cpu
  %cpu = call i64 @autojit.cpu()
  store atomic i64 %cpu, ptr %cpu.p monotonic, align 8
  %hot = cmpxchg ptr %mailbox, i64 BOX.SPINNING, i64 BOX.POSTED acq_rel acquire
  %taken = extractvalue {i64, i1} %hot, 1
  br i1 %taken, label %spinning, label %asleep
spinning:
  ret i64 1
asleep:
  %cold = cmpxchg ptr %mailbox, i64 BOX.SLEEPING, i64 BOX.POSTED acq_rel acquire
  ret i64 0
}

define internal i64 @autojit.retract(ptr %mailbox) nounwind {
start:
  %back = cmpxchg ptr %mailbox, i64 BOX.POSTED, i64 BOX.SPINNING acq_rel acquire
  %unclaimed = extractvalue {i64, i1} %back, 1
  br i1 %unclaimed, label %exit, label %left
left:
  call void @autojit.await(ptr %mailbox, i64 BOX.SLEEPING, i64 BOX.POSTED)
  br label %exit
exit:
  ret i64 0
}

define void @autojit.park(ptr %job) nounwind {
start:
  %parked.p = getelementptr i8, ptr %job, i64 JOB.parked
  store atomic i64 1, ptr %parked.p monotonic, align 8
  ret void
}

define i64 @autojit.begin(ptr %job, ptr %boxes, i64 %helpers, i64 %count, ptr %entry,
                          ptr %pointers, i64 %pstride, ptr %metas, i64 %mstride,
                          i64 %spins) nounwind {
start:
  %parked.p = getelementptr i8, ptr %job, i64 JOB.parked
  store atomic i64 0, ptr %parked.p monotonic, align 8
  %spins.p = getelementptr i8, ptr %job, i64 JOB.spins
  store atomic i64 %spins, ptr %spins.p monotonic, align 8
  store i64 0, ptr %job, align 8
  %done.p = getelementptr i8, ptr %job, i64 JOB.done
  store i64 0, ptr %done.p, align 8
STORE_JOB
  br label %check
check:
  %w = phi i64 [0, %start], [%next, %posted]
  %asleep = phi i64 [0, %start], [%mask, %posted]
  %more = icmp slt i64 %w, %helpers
  br i1 %more, label %post, label %exit
post:
  %offset = mul i64 %w, BOX_BYTES
  %box = getelementptr i8, ptr %boxes, i64 %offset
  %hot = call i64 @autojit.post(ptr %job, ptr %box)
  %cold = xor i64 %hot, 1
  %bit = shl i64 %cold, %w
  %mask = or i64 %asleep, %bit
  br label %posted
posted:
  %next = add i64 %w, 1
  br label %check
exit:
  ret i64 %asleep
}

define void @autojit.finish(ptr %job, ptr %boxes, i64 %helpers) nounwind {
start:
  call void @autojit.drain_job(ptr %job)
  %count.p = getelementptr i8, ptr %job, i64 JOB.count
  %count = load i64, ptr %count.p, align 8
  %done.p = getelementptr i8, ptr %job, i64 JOB.done
  call void @autojit.await(ptr %done.p, i64 %count, i64 9223372036854775807)
  br label %check
check:
  %w = phi i64 [0, %start], [%next, %back]
  %more = icmp slt i64 %w, %helpers
  br i1 %more, label %take, label %exit
take:
  %offset = mul i64 %w, BOX_BYTES
  %box = getelementptr i8, ptr %boxes, i64 %offset
  %ignored = call i64 @autojit.retract(ptr %box)
  br label %back
back:
  %next = add i64 %w, 1
  br label %check
exit:
  ret void
}

declare i32 @sched_yield() nounwind
"""

#: where the OS says which CPU a thread is on and lets it move (Linux): a worker that
#: finds itself on the CPU of the thread that posted the call moves to the other CPUs
#: (``masks[cpu]``: every allowed CPU but that one), measured above
_STEP_ASIDE_LINUX = """
define internal i64 @autojit.cpu() nounwind {
start:
  %cpu = call i32 @sched_getcpu()
  %wide = sext i32 %cpu to i64
  ret i64 %wide
}

define void @autojit.step_aside(ptr %job) nounwind {
start:
  %caller.p = getelementptr i8, ptr %job, i64 JOB.cpu
  %caller = load atomic i64, ptr %caller.p monotonic, align 8
  %masks.p = getelementptr i8, ptr %job, i64 JOB.masks
  %masks = load ptr, ptr %masks.p, align 8
  %known.p = getelementptr i8, ptr %job, i64 JOB.known
  %known = load i64, ptr %known.p, align 8
  %mine = call i64 @autojit.cpu()
  %same = icmp eq i64 %mine, %caller
  %listed = icmp ult i64 %caller, %known
  %move = and i1 %same, %listed
  br i1 %move, label %away, label %done
away:
  %offset = mul i64 %caller, MASK_BYTES
  %mask = getelementptr i8, ptr %masks, i64 %offset
  %ignored = call i32 @sched_setaffinity(i32 0, i64 MASK_BYTES, ptr %mask)
  br label %done
done:
  ret void
}

declare i32 @sched_getcpu() nounwind
declare i32 @sched_setaffinity(i32, i64, ptr) nounwind
"""

#: elsewhere: no CPU numbers, no moves
_STEP_ASIDE_OTHER = """
define internal i64 @autojit.cpu() nounwind {
start:
  ret i64 -1
}

define void @autojit.step_aside(ptr %job) nounwind {
start:
  ret void
}
"""
#: bytes of a ``cpu_set_t`` (1024 CPUs; CPUs beyond are never moved away from)
MASK_BYTES = 128


def _job_fields(access: str) -> str:
    """Return the IR lines that load (``access`` "load") or store every drain field of the
    job block as ``%<name>``, from or into ``%job``."""
    lines = []
    for field in (f for f in JOB_FIELDS if f.drain):
        name, ty = field.name, field.type
        lines.append(f"  %{name}.p = getelementptr i8, ptr %job, i64 JOB.{name}")
        lines.append(f"  %{name} = load {ty}, ptr %{name}.p, align 8" if access == "load"
                     else f"  store {ty} %{name}, ptr %{name}.p, align 8")
    return "\n".join(lines)


#: ``JOB.<field>`` (its byte offset) and ``BOX.<state>`` (a mailbox word) in ``_NATIVE_IR``
_NAMED = re.compile(r"\b(JOB|BOX)\.(\w+)")
_BOX_STATES = {"SLEEPING": SLEEPING, "SPINNING": SPINNING, "POSTED": POSTED, "RUNNING": RUNNING}


def _resolve(text: str) -> str:
    """Return ``text`` with every ``JOB.<field>`` and ``BOX.<state>`` replaced by its
    number (a byte offset from ``JOB_FIELDS``, a mailbox state)."""
    return _NAMED.sub(lambda m: str(8 * JOB_SLOT[m[2]] if m[1] == "JOB"
                                    else _BOX_STATES[m[2]]), text)


def native_ir() -> str:
    """Return the text of the team's native code for this machine (``native``)."""
    text = _NATIVE_IR.replace("PAUSE", "")
    if platform.machine().lower() in ("x86_64", "amd64"):   # let the other thread run
        text = (_NATIVE_IR.replace("PAUSE", "call void @llvm.x86.sse2.pause()")
                + "declare void @llvm.x86.sse2.pause()\n")
    linux = sys.platform.startswith("linux")
    text += _STEP_ASIDE_LINUX if linux else _STEP_ASIDE_OTHER
    for placeholder, value in (("MASK_BYTES", str(MASK_BYTES)),
                               ("BOX_BYTES", str(8 * _MAILBOX_STRIDE)),
                               ("LOAD_JOB", _job_fields("load")),
                               ("STORE_JOB", _job_fields("store"))):
        text = text.replace(placeholder, value)
    return _resolve(text)


class Native:
    """The compiled entries of ``_NATIVE_IR``."""

    def __init__(self, addresses: tuple[int, ...]) -> None:
        drain, serve, begin, finish, step_aside, park = addresses
        self.drain, self.serve = _DrainFn(drain), _ServeFn(serve)
        self.begin, self.finish = _BeginFn(begin), _FinishFn(finish)
        self.step_aside, self.park = _StepFn(step_aside), _StepFn(park)


@functools.cache
def native() -> Native | None:
    """Return the native entries, compiled once; None when they do not compile (chunks
    then run as Python pool tasks: slower, never wrong)."""
    from autojit.lower_cpu.entries import link_entries
    text = native_ir()
    names = ("autojit.drain", "autojit.serve", "autojit.begin", "autojit.finish",
             "autojit.step_aside", "autojit.park")
    try:
        return Native(link_entries(text, names, lambda: text))
    except Exception as exc:  # noqa: BLE001 — logged; the Python tasks still work
        log.warning("autojit: no native chunk loop (%s: %s)", type(exc).__name__, exc)
        return None


class Team:
    """Workers fed through mailboxes (module docstring); started on first use."""

    def __init__(self, code: Native) -> None:
        self._code = code
        masks = _step_aside_masks()
        boxes = MAX_WORKERS * _MAILBOX_STRIDE
        # workers read these until they leave native code: pages never freed (docstring)
        memory = _lifelong_int64(_JOB_SLOTS + boxes + -(-masks.size // 8))
        self._job = memory[:_JOB_SLOTS]
        self._mailboxes = memory[_JOB_SLOTS:_JOB_SLOTS + boxes]   # zeroed: all SLEEPING
        self._masks = memory[_JOB_SLOTS + boxes:].view(np.uint8)[:masks.size]
        self._masks = self._masks.reshape(masks.shape)
        self._masks[...] = masks
        self._job[JOB_SLOT["masks"]] = self._masks.ctypes.data
        self._job[JOB_SLOT["known"]] = len(self._masks)
        self._wake: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()
        self._job_address, self._boxes_address = self._job.ctypes.data, self._mailboxes.ctypes.data
        self._polls_per_second = 0.0
        self._spins = 0
        self._cores = len(_allowed_cpus()) or os.cpu_count() or 1
        self.hot_posts = self.wake_ups = 0     # how workers got their posts (tests, tuning)

    @property
    def size(self) -> int:
        """Return how many workers have been started."""
        return len(self._wake)

    def _box(self, worker: int) -> int:
        return self._boxes_address + 8 * _MAILBOX_STRIDE * worker

    def _grow(self, workers: int) -> None:
        for w in range(len(self._wake), workers):
            wake: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=self._work, args=(self._box(w), wake),
                                      daemon=True, name=f"autojit-worker-{w}")
            thread.start()
            self._threads.append(thread)
            self._wake.append(wake)

    def _calibrate(self) -> float:
        """Return how many polls ``serve`` makes per second (timed on an idle mailbox,
        which it leaves after its polls)."""
        box = np.full(_MAILBOX_STRIDE, SPINNING, np.int64)
        self._job[JOB_SLOT["parked"]] = 0   # not parked (no worker runs yet: a plain store will do)
        polls = 4096
        begin = time.perf_counter()
        self._code.serve(self._job.ctypes.data, box.ctypes.data, polls)
        return polls / max(time.perf_counter() - begin, 1e-7)

    def _work(self, box: int, wake: queue.SimpleQueue) -> None:
        while wake.get() is not _STOP:
            self._code.serve(self._job_address, box, self._spins)

    def park(self) -> None:
        """Make every spinning worker sleep now (``park``)."""
        self._code.park(self._job_address)

    def close(self, timeout: float = JOIN_SECONDS) -> bool:
        """Stop the team for good (interpreter exit: module docstring): spinning workers
        leave native code at once, each worker's loop ends, and later calls run on their
        caller. Return True when every worker thread was joined within ``timeout``."""
        deadline = time.monotonic() + timeout
        self._closed = True                   # no call starts on the team after this
        self._job[JOB_SLOT["closing"]] = 1    # an aligned int64 store: serve reads it
        # a call in flight (a daemon thread's) ends first, unless it takes too long
        idle = self._lock.acquire(timeout=timeout)
        try:
            for wake in self._wake:
                wake.put(_STOP)
            for thread in list(self._threads):
                thread.join(max(deadline - time.monotonic(), 0.0))
        finally:
            if idle:
                self._lock.release()
        return not any(thread.is_alive() for thread in self._threads)

    def run(self, count: int, entry: int, pointers: int, pointer_stride: int, metas: int,
            meta_stride: int, helpers: int, spin_s: float = SPIN_SECONDS) -> bool:
        """Run chunks 0..count-1 of ``entry`` on this thread and up to ``helpers``
        workers, who then wait ``spin_s`` seconds for the next call before they sleep;
        return when all chunks are done. False (nothing run) when the team is busy."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._closed:
                return False
            if not self._polls_per_second:
                self._polls_per_second = self._calibrate()
            # more threads than cores: a spinning worker would hold a core another needs
            spin_s = spin_s if helpers < self._cores else 0.0
            self._spins = max(int(self._polls_per_second * spin_s), 1)
            helpers = min(helpers, MAX_WORKERS)
            if len(self._wake) < helpers:
                self._grow(helpers)
            code, job, boxes = self._code, self._job_address, self._boxes_address
            asleep = code.begin(job, boxes, helpers, count, entry, pointers, pointer_stride,
                                metas, meta_stride, self._spins)
            if asleep:
                for w in range(helpers):
                    if asleep >> w & 1:
                        self._wake[w].put(None)
                self.wake_ups += asleep.bit_count()
            self.hot_posts += helpers - asleep.bit_count()
            code.finish(job, boxes, helpers)      # this thread's chunks, then the workers'
        finally:
            self._lock.release()
        return True


def park() -> None:
    """Tell spinning workers to sleep now: the caller is about to run code with its own
    threads (a BLAS call), which a spinning worker would slow down. The next split call
    wakes them. Nothing to do before the team exists."""
    if _TEAM is not None:
        _TEAM.park()


def _lifelong_int64(count: int) -> np.ndarray:
    """Return ``count`` zeroed int64 in pages that are never freed (``lifelong_pages``);
    NumPy memory where the system gives none (freed at exit, then, as it always was)."""
    try:
        address = lifelong_pages(8 * count)
    except (OSError, AttributeError, TypeError) as exc:   # no C library mmap to call
        log.debug("autojit: team memory from NumPy (%s)", exc)
        return np.zeros(count, np.int64)
    return np.ctypeslib.as_array((ctypes.c_int64 * count).from_address(address))


def _allowed_cpus() -> list[int]:
    """Return the CPUs this thread may run on ([] where the OS does not say)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _step_aside_masks() -> np.ndarray:
    """Return one ``cpu_set_t`` per CPU ``c`` the process may run on: the others it may
    run on (or all of them, where ``c`` is the only one)."""
    allowed = [c for c in _allowed_cpus() if c < 8 * MASK_BYTES]
    masks = np.zeros((max(allowed, default=-1) + 1, MASK_BYTES), np.uint8)
    for cpu in allowed:
        for other in (c for c in allowed if c != cpu) if len(allowed) > 1 else allowed:
            masks[cpu, other // 8] |= 1 << (other % 8)
    return masks


_TEAM: Team | None = None
_TEAM_LOCK = threading.Lock()


def team() -> Team | None:
    """Return the process's team, None without the native code."""
    global _TEAM
    if _TEAM is None:
        code = native()
        if code is None:
            return None
        with _TEAM_LOCK:
            if _TEAM is None:
                _TEAM = Team(code)
    return _TEAM


def close() -> None:
    """Stop the process's team, if it has one (at interpreter exit: module docstring)."""
    crew = _TEAM
    if crew is not None and not crew.close():
        log.debug("autojit: a worker was still running a chunk at exit")


def _reset_after_fork() -> None:
    """A forked child inherits the team object but not its threads (nor a lock another
    thread held): start afresh. Its exit handler then stops the child's own team."""
    global _TEAM, _TEAM_LOCK
    _TEAM = None
    _TEAM_LOCK = threading.Lock()


atexit.register(close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
