"""The fault catalogue: what a hostile caller or environment does to an ``@autoroute``
function, one named row each, and what must hold afterwards.

Each row says what is done and what must hold; its ``check`` does it and asserts it. The
contracts, all against plain NumPy (``tests/support/oracle.py``) or stated outright:

* bad inputs: exactly NumPy's result (type, dtype, shape, bits) or NumPy's exception type,
  the arguments after the call as NumPy leaves them, and a good call afterwards still right;
* cache damage (a child process with its own ``AUTOJIT_CACHE_DIR``): right results, at most
  a ``CacheWarning`` (never another warning, never a crash), the function still compiled;
* signals: the interrupt reaches the caller as ``KeyboardInterrupt`` (or the handler's
  exit code), and the function afterwards gives NumPy's answer, still compiled;
* threads: every thread gets NumPy's answer; nothing hangs;
* shutdown: the process exit code is the one Python gives, no crash;
* resources: NumPy's exception type (MemoryError) or NumPy's answer, the next call right.

Risky rows (signals, exits, cache damage, recursion limits) run in child processes. Where
a deeper test exists, ``deeper`` names its file and the row reuses its helpers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tests.cpu.cache import test_disk_cache
from tests.cpu.dispatch import test_dispatch_guards
from tests.cpu.runtime import test_shutdown
from tests.support.oracle import assert_calls_match_numpy, assert_same_value, call_numpy

from autojit import autoroute
from autojit.runtime.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]

#: seconds any child process may take (a busy 2-core machine; each needs well under 5)
CHILD_SECONDS = 60.0


@dataclass(frozen=True)
class Fault:
    """One row: a named fault, what is done, what must hold, and the check doing both."""

    id: str
    kind: str            # "bad input", "cache damage", "signal", "thread", "shutdown", "resource"
    done: str
    holds: str
    check: Callable[[], None]
    deeper: str = ""     # the file holding a deeper test of the same fault
    xfail: str = ""      # a known autojit bug this row finds (strict xfail), with its reason


# -- helpers -------------------------------------------------------------------------------------
def child_env(cache_dir: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child: this checkout first on the path, its own cache folder."""
    env = dict(os.environ, **extra)
    env.pop("AUTOJIT_FORCE", None)
    env["AUTOJIT_CACHE_DIR"] = cache_dir or tempfile.mkdtemp(prefix="autojit-fault-")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def run_child(source: str, env: dict[str, str] | None = None,
              timeout: float = CHILD_SECONDS) -> subprocess.CompletedProcess:
    """Run ``source`` in a fresh interpreter; return what it did."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], cwd=ROOT,
                          env=env or child_env(), capture_output=True, text=True,
                          timeout=timeout)


def assert_exit(done: subprocess.CompletedProcess | subprocess.Popen, code: int,
                err: str | None = None, out: str = "") -> None:
    """The child ended with ``code`` and no crash report (segfault, fatal error)."""
    if isinstance(done, subprocess.CompletedProcess):
        err, out = done.stderr, done.stdout
    assert done.returncode == code, f"exit code {done.returncode}, not {code}\n{out}\n{err}"
    for crash in ("Fatal Python error", "Segmentation fault", "core dumped"):
        assert crash not in err, err


def report(done: subprocess.CompletedProcess) -> dict[str, Any]:
    """The JSON the child printed last, after checking it exited 0 without a traceback."""
    assert_exit(done, 0)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def numpy_calls(fn: Callable, *calls: Any, good: Sequence[Any] | None = None) -> Callable:
    """A row check: each call (arguments, or a callable making them) gives exactly NumPy's
    result or exception type and leaves the arguments as NumPy does; then a good call on
    the same compiled function is still right."""
    good_call = tuple(good) if good is not None else (np.linspace(-2.0, 2.0, 9),)

    def check() -> None:
        assert_calls_match_numpy(fn, [*calls, good_call, *calls])
    return check


def no_fallback_after(fn: Callable, *args: Any) -> None:
    """``fn`` (fresh) compiles for ``args``: NumPy's answer, no fallback."""
    jitted = autoroute(fn, force="cpu")
    assert_same_value(jitted(*args), fn(*args))
    assert jitted.stats()["routes"]["cpu"] >= 1, jitted.stats()["fallbacks"]


# -- bad inputs: the functions a hostile caller feeds -----------------------------------------
def arith(x):
    return x * 2 + 1


def unary(x):
    return np.sqrt(np.abs(x)) * 2.0 - x


def row_max(x):
    return np.sqrt(np.abs(x)).max(axis=-1) - 1.0


def total(x):
    return x.sum()


def bump(x):
    x += 1
    return x


def add_into(a, b):
    a += b
    return a


def keywords(x, scale=2.0, *, shift=1.0):
    return x * scale + shift


def unaligned(dtype: str = "f8", n: int = 9) -> np.ndarray:
    """A writeable array one byte off its natural alignment."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(n * itemsize + 1, np.uint8)
    view = raw[1:].view(dtype)
    view[...] = np.linspace(-3.0, 3.0, n).astype(dtype)
    assert not view.flags.aligned
    return view


def overlapping(n: int = 6) -> np.ndarray:
    """A (n, 3) view whose rows overlap (stride of one element)."""
    base = np.arange(n + 2.0)
    return as_strided(base, shape=(n, 3), strides=(8, 8))


def read_only(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False
    return x


class Logged(np.ndarray):
    """A subclass with its own ``__array_ufunc__``: counts calls, answers as a Logged."""

    calls = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        Logged.calls += 1
        plain = [i.view(np.ndarray) if isinstance(i, Logged) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return result.view(Logged) if isinstance(result, np.ndarray) else result


class Duck:
    """Not an array at all, but answers every ufunc (NEP 13)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return f"duck {ufunc.__name__}"


def check_array_ufunc_override_runs_as_often_as_under_numpy() -> None:
    """The override is the caller's code: it must run, as often as NumPy runs it."""
    make = lambda: (np.linspace(-1.0, 1.0, 5).view(Logged),)  # noqa: E731
    Logged.calls = 0
    expected = unary(*make())
    numpy_count = Logged.calls
    Logged.calls = 0
    jitted = autoroute(unary, force="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        actual = jitted(*make())
    assert type(actual) is Logged and Logged.calls == numpy_count, (type(actual), Logged.calls)
    assert_same_value(actual.view(np.ndarray), expected.view(np.ndarray))
    assert_same_value(jitted(np.ones(3)), unary(np.ones(3)))


def check_wrong_argument_counts_and_keywords() -> None:
    x = np.arange(4.0)
    test_dispatch_guards._keyword_calls_match(keywords, [
        ((), {}), ((x, 1.0, 2.0), {}), ((x,), {"bogus": 1}), ((x,), {"scale": 1, "x": x}),
        ((), {"x": x}), ((x,), {"shift": 3.0}), ((x, 3.0), {"scale": 1.0}), ((x,), {}),
        ((x,), {"shift": None}), ((x,), {}),
    ])
    jitted = autoroute(arith, force="cpu")
    for bad in ((), (x, x)):
        _, error = call_numpy(arith, bad)
        assert isinstance(error, TypeError), error
        with contextlib.suppress(TypeError):
            jitted(*bad)
            raise AssertionError(f"{len(bad)} arguments accepted")
    assert_same_value(jitted(x), arith(x))


#: loop-nest depth LLVM still compiles quickly (x.max() over 8 dims: ~0.2 s; 16: ~3 s)
DEEP_NEST = 8


def check_deep_reduction_is_within_budget() -> None:
    from autojit.config import current_settings
    from autojit.fuse.plan import plan_kernels
    from autojit.lower_cpu.budget import CompileBudgetError, check_budget
    from autojit.tracer import trace_function

    def full_max(x):
        return x.max()

    x = np.ones((1,) * 31 + (3,))
    graph = trace_function(full_max, (x,), "full_max")
    plan = plan_kernels(graph, [True], current_settings().fusion_max_ops)
    depth = max(len(kernel.loop_sizes) for kernel in plan.kernels)
    if depth > DEEP_NEST:
        try:
            check_budget(plan.kernels)
        except CompileBudgetError:
            return
        raise AssertionError(f"a {depth}-deep loop nest passes the compile budget")


class HasArray:
    """Not an array, but convertible to one (``__array__``)."""

    def __array__(self, dtype=None, copy=None):
        return np.arange(1.0, 4.0, dtype=dtype)


#: dtypes and layouts few callers use (each a call of its own)
ODD_ARRAYS = [
    lambda: (np.arange(4, dtype=np.longdouble),),
    lambda: (np.arange(4).astype(np.complex64),),
    lambda: (np.arange(4).astype("timedelta64[ms]"),),
    lambda: (np.array(["a", "bc"]),),
    lambda: (np.array([b"a", b"bc"]),),
    lambda: (np.zeros(3, dtype="V8"),),
    lambda: (np.asfortranarray(np.arange(12.0).reshape(3, 4)),),
]


def _structured() -> np.ndarray:
    a = np.zeros(4, dtype=[("a", "f8"), ("b", "i4")])
    a["a"], a["b"] = np.arange(4.0), np.arange(4)
    return a


BAD_INPUTS: list[Fault] = [
    Fault("none", "bad input", "pass None", "NumPy's TypeError, then a good call works",
          numpy_calls(arith, (None,))),
    Fault("python-list", "bad input", "pass a list to x * 2 + 1 and to a ufunc chain",
          "list repetition's TypeError; the ufunc converts the list, like NumPy",
          lambda: (numpy_calls(arith, ([1.0, 2.0],))(), numpy_calls(unary, ([1.0, 2.0],))())),
    Fault("str", "bad input", "pass a str", "NumPy's TypeError (or ufunc's), good call after",
          lambda: (numpy_calls(arith, ("ab",))(), numpy_calls(unary, ("ab",))())),
    Fault("dict", "bad input", "pass a dict", "NumPy's TypeError, good call after",
          lambda: (numpy_calls(arith, ({"a": 1},))(), numpy_calls(total, ({"a": 1},))())),
    Fault("object-array", "bad input", "object arrays of floats and of Fractions",
          "an object array back, values as NumPy's",
          lambda: numpy_calls(arith, (np.array([1.0, 2.5, -3.0], dtype=object),),
                              lambda: (np.array(__import__("fractions").Fraction(1, 3)
                                                * np.arange(3), dtype=object),))()),
    Fault("structured-dtype", "bad input", "a record array into arithmetic, a field into it",
          "NumPy's UFuncTypeError; a field gives NumPy's answer",
          lambda: (numpy_calls(arith, (_structured(),))(),
                   numpy_calls(lambda r: r["a"] * 2 + r["b"], (_structured(),),
                               good=(_structured(),))())),
    Fault("datetime64", "bad input", "datetime64 into x * 2 + 1 and into x - x[0]",
          "NumPy's UFuncTypeError; timedelta64 differences as NumPy's",
          lambda: (numpy_calls(arith, (np.arange(3).astype("datetime64[D]"),))(),
                   numpy_calls(lambda d: d - d[0], (np.arange(4).astype("datetime64[s]"),),
                               good=(np.arange(2).astype("datetime64[s]"),))())),
    Fault("float16", "bad input", "float16 through arithmetic, a ufunc and a reduction",
          "float16 results, every op rounded as NumPy rounds",
          lambda: [numpy_calls(fn, (np.linspace(-3, 3, 11, dtype=np.float16),))()
                   for fn in (arith, unary, row_max, total)]),
    Fault("complex-unsupported", "bad input", "complex into floor, max along an axis, sqrt",
          "NumPy's TypeError for floor; NumPy's values otherwise",
          lambda: [numpy_calls(fn, (np.array([1 + 2j, -3 - 1j, 0.5j]),))()
                   for fn in (np.floor, row_max, lambda z: np.sqrt(z) * 2, arith)]),
    Fault("zero-d", "bad input", "0-d arrays, NumPy scalars, Python floats, ints, bools",
          "NumPy's result kind: a NumPy scalar from a 0-d array, an array written in place",
          lambda: (numpy_calls(arith, (np.array(2.5),), (np.float32(1.5),), (3,), (True,),
                               (2.5,))(),
                   numpy_calls(bump, (np.array(3),), (np.array(2.5),))())),
    Fault("ndim-32", "bad input", "32-dimensional arrays, size 1 and size 2 on some axes",
          "NumPy's values and shapes",
          numpy_calls(lambda x: (x * 2.0 + 1.0, x.sum(axis=5)), (np.ones((1,) * 31 + (3,)),),
                      lambda: (np.arange(8.0).reshape((2, 2, 2) + (1,) * 29),),
                      good=(np.ones((1,) * 32),))),
    Fault("ndim-32-full-reduction-compile-time", "bad input", "x.max() of a C-contiguous "
          "32-dimensional array (planned only: compiling it is what takes long)",
          "the first call stays within the compile budget: each kernel at most "
          f"{DEEP_NEST} loops deep (as elementwise kernels, one flat loop) or the budget "
          "refuses the plan (it runs as Python)", check_deep_reduction_is_within_budget),
    Fault("size-zero", "bad input", "shapes (0,), (0, 3), (3, 0): sums, maxima, means",
          "NumPy's zeros, NaN (with its warning suppressed) and ValueError for empty max",
          lambda: [numpy_calls(fn, (np.ones(0),), (np.ones((0, 3)),), (np.ones((3, 0)),))()
                   for fn in (arith, total, row_max, lambda x: x.mean(), lambda x: x.max())]),
    Fault("strided-views", "bad input", "reversed, transposed, every-third, broadcast views",
          "NumPy's values; the same compiled function for each layout",
          numpy_calls(lambda x: np.sqrt(np.abs(x)) + x[..., :1],
                      lambda: (np.arange(24.0).reshape(4, 6)[::-1, ::-2],),
                      lambda: (np.arange(24.0).reshape(4, 6).T,),
                      lambda: (np.broadcast_to(np.arange(6.0), (4, 6)),),
                      lambda: (np.arange(72.0).reshape(4, 18)[:, ::3],),
                      good=(np.ones((2, 2)),))),
    Fault("overlapping-views", "bad input", "rows overlapping in memory read; a += b where b "
          "overlaps a shifted by one", "NumPy's values and NumPy's memory after the write",
          lambda: (numpy_calls(row_max, lambda: (overlapping(),))(),
                   numpy_calls(add_into, lambda: (lambda base: (base[1:], base[:-1]))(
                       np.arange(10.0)), lambda: (lambda base: (base[:-1], base[1:]))(
                       np.arange(10.0)), good=(np.ones(3), np.ones(3)))())),
    Fault("read-only-written", "bad input", "x += 1 on a read-only array and a broadcast view",
          "NumPy's ValueError, the array unchanged, then a writeable one is written",
          numpy_calls(bump, lambda: (read_only(np.arange(5.0)),),
                      lambda: (np.broadcast_to(np.arange(3.0), (2, 3)),))),
    Fault("big-endian", "bad input", "'>f8' and '>i4' arrays, read and written in place",
          "NumPy's native-order results, the big-endian argument written as NumPy writes it",
          lambda: (numpy_calls(arith, (np.arange(5.0).astype(">f8"),),
                               (np.arange(5).astype(">i4"),))(),
                   numpy_calls(bump, lambda: (np.arange(4.0).astype(">f8"),))())),
    Fault("unaligned", "bad input", "float64 and int32 arrays one byte off alignment",
          "NumPy's values; an unaligned argument written in place as NumPy writes it",
          lambda: (numpy_calls(unary, lambda: (unaligned(),), lambda: (unaligned("i4"),))(),
                   numpy_calls(bump, lambda: (unaligned(),))())),
    Fault("matrix-masked-subclass", "bad input", "np.matrix, a masked array, a bare subclass",
          "NumPy's result type and values (run as Python)",
          lambda: [test_dispatch_guards.test_ndarray_subclasses_run_as_plain_python(make)
                   for make in _SUBCLASS_MAKERS],
          deeper="tests/cpu/dispatch/test_dispatch_guards.py"),
    Fault("array-ufunc-override", "bad input", "an ndarray subclass with __array_ufunc__, "
          "and a non-array answering every ufunc", "the override runs as often as under "
          "NumPy; its answers are returned",
          lambda: (check_array_ufunc_override_runs_as_often_as_under_numpy(),
                   numpy_calls(unary, (Duck(),))())),
    Fault("dtype-changes-between-calls", "bad input", "one function called with float64, "
          "int8, bool, float32, complex128, uint64, object, float64 again",
          "each call NumPy's dtype and values (no version answers another dtype)",
          numpy_calls(arith, *[(np.arange(5).astype(t),) for t in
                               ("f8", "i1", "?", "f4", "c16", "u8", "O", "f8")])),
    Fault("array-likes", "bad input", "a tuple, a range, a memoryview, bytes, an object "
          "with __array__, a generator", "NumPy's conversion (or its TypeError) each time",
          lambda: [numpy_calls(fn, ((1.0, 2.0),), (range(4),),
                               lambda: (memoryview(np.arange(3.0)),), (b"ab",),
                               (HasArray(),), lambda: ((i for i in range(3)),))()
                   for fn in (arith, unary, total)]),
    Fault("odd-dtypes", "bad input", "longdouble, complex64, timedelta64, str_, bytes_, "
          "void and F-ordered arrays", "NumPy's dtype and values, or its UFuncTypeError",
          lambda: [numpy_calls(fn, *ODD_ARRAYS)() for fn in (arith, unary, total, bump)]),
    Fault("aliased-arguments", "bad input", "one array passed twice, written through one "
          "and read through the other (a += a; a[1:] += a[:-1] as two views)",
          "NumPy's memory after the call", numpy_calls(
              add_into, lambda: (lambda a: (a, a))(np.arange(6.0)),
              lambda: (lambda a: (a[::-1], a))(np.arange(6.0)),
              good=(np.ones(2), np.ones(2)))),
    Fault("wrong-arguments", "bad input", "too few, too many, unknown, duplicate and missing "
          "keyword arguments; a None where a float goes", "NumPy's TypeError for each; "
          "later good calls right", check_wrong_argument_counts_and_keywords,
          deeper="tests/cpu/dispatch/test_dispatch_guards.py"),
]

_SUBCLASS_MAKERS = [
    lambda: (np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.matrix([[1.0, 0.0], [1.0, 1.0]])),
    lambda: (np.ma.array(np.arange(4.0), mask=[0, 1, 0, 1]), 2.0),
    lambda: (np.arange(4.0).view(test_dispatch_guards._Plain), np.float64(3)),
]


# -- cache damage: a child process on its own cache folder -------------------------------------
#: the child: calls ``f`` on four layouts, compares each with the Python function, prints
#: JSON (all right?, the warnings seen, disk hits, compiles, compiled calls). ``{before}``
#: is run first (it may break a piece of the cache machinery).
CACHE_CHILD = '''
import json, os, sys, warnings
import numpy as np
{before}
from autojit import autoroute
{drop}

@autoroute
def f(x):
    return np.sqrt(np.abs(x)).max(axis=1) * 2.0 - x[:, 0]

x = np.linspace(-3.0, 3.0, 4000).reshape(200, 20)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = all(np.array_equal(f(a), f.__wrapped__(a)) for a in (x, x[::-1], x, x[:7]))
s = f.stats()
print(json.dumps({{"ok": ok, "warnings": [f"{{type(w.message).__name__}}: {{w.message}}"
                                        for w in caught],
                   "disk_hits": s["disk_hits"], "compiles": s["compiles"],
                   "cpu": s["routes"]["cpu"], "fallbacks": s["fallbacks"]}}))
'''

#: run (after the imports: the interpreter's own files are root's) in a child that must not
#: have root's way past file permissions. One compile of another function comes first, in a
#: folder of its own, for the same reason: what compiling imports lazily (the SVML probe's
#: numpy.random) may be unreadable to the unprivileged user (CI's venv lies in a 0700 mktemp
#: folder)
DROP_ROOT = textwrap.dedent("""\
    import tempfile
    import llvmlite.binding, autojit.lower_cpu.jit
    autoroute(lambda v: np.sinh(v) * 2.0 + v.sum(), cache_dir=tempfile.mkdtemp())(np.ones(3))
    if os.geteuid() == 0:
        os.setgid(65534); os.setuid(65534)
    """)


def cache_child(cache_dir: str, before: str = "", unprivileged: bool = False) -> dict:
    source = CACHE_CHILD.format(before=textwrap.dedent(before),
                                drop=DROP_ROOT if unprivileged else "")
    return report(run_child(source, child_env(cache_dir)))


@functools.cache
def _warm_template() -> str:
    """A cache folder holding ``f``'s plan and code (made once, copied by each row)."""
    folder = tempfile.mkdtemp(prefix="autojit-fault-warm-")
    first = cache_child(folder)
    assert first["ok"] and first["compiles"] >= 1, first
    return folder


def warm_copy() -> Path:
    """A fresh copy of the warm cache, in a folder any user may enter."""
    parent = Path(tempfile.mkdtemp(prefix="autojit-fault-"))
    parent.chmod(0o755)
    shutil.copytree(_warm_template(), parent / "cache")
    return parent / "cache"


def entry_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.*.*") if p.is_file() and not p.name.endswith("tmp"))


def assert_survived(seen: dict, most_warnings: int = 1) -> None:
    """Right answers, compiled, only CacheWarnings and not many of them."""
    assert seen["ok"], seen
    assert seen["cpu"] >= 1 and not seen["fallbacks"], seen
    assert all(w.startswith("CacheWarning") for w in seen["warnings"]), seen["warnings"]
    assert len(seen["warnings"]) <= most_warnings, seen["warnings"]


def damaged_entries(how: str) -> Callable[[], None]:
    """Damage every entry of a warm cache ``how``; the next process recompiles with one
    warning per entry, the one after is a clean disk hit."""
    def check() -> None:
        cache = warm_copy()
        files = entry_files(cache)
        assert files, "the warm cache holds no entries"
        for path in files:
            if how == "zero-length":
                path.write_bytes(b"")
            else:
                test_disk_cache._corrupt(path, how)
        assert_survived(cache_child(str(cache)), most_warnings=len(files))
        again = cache_child(str(cache))
        assert_survived(again, most_warnings=0)
        assert again["disk_hits"] >= 1 and again["compiles"] == 0, again
    return check


def check_unreadable_cache() -> None:
    """Every entry and folder chmod 000 (the child runs unprivileged, so it applies)."""
    cache = warm_copy()
    for path in sorted(cache.rglob("*"), key=lambda p: -len(p.parts)):
        path.chmod(0)
    cache.chmod(0)
    try:
        assert_survived(cache_child(str(cache), unprivileged=True))
    finally:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(0o700)


def check_read_only_cache() -> None:
    """An empty cache folder nobody may write to: compiled in memory, at most one warning."""
    parent = Path(tempfile.mkdtemp(prefix="autojit-fault-"))
    parent.chmod(0o755)
    (parent / "cache").mkdir(mode=0o555)
    (parent / "cache").chmod(0o555)
    seen = cache_child(str(parent / "cache"), unprivileged=True)
    assert_survived(seen)
    assert not list((parent / "cache").iterdir())


def check_read_only_warm_cache() -> None:
    """A warm cache made read-only: served from it, nothing to warn about."""
    cache = warm_copy()
    for path in [cache, *cache.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    seen = cache_child(str(cache), unprivileged=True)
    assert_survived(seen, most_warnings=1)
    assert seen["disk_hits"] >= 1 and seen["compiles"] == 0, seen


def check_cache_dir_is_a_file() -> None:
    blocker = Path(tempfile.mkdtemp(prefix="autojit-fault-")) / "cache"
    blocker.write_text("I am a file")
    assert_survived(cache_child(str(blocker)))
    assert blocker.read_text() == "I am a file"


#: every write of a cache entry goes to /dev/full: the kernel answers ENOSPC
DISK_FULL = '''
import builtins
import autojit.cache.disk_files as disk_files
def full(path, mode="r", *args, **kwargs):
    return builtins.open("/dev/full" if "w" in mode else path, mode, *args, **kwargs)
disk_files.open = full
'''

#: the fallback where /dev/full is missing: writes raise ENOSPC themselves
DISK_FULL_RAISES = '''
import builtins, errno
import autojit.cache.disk_files as disk_files
def full(path, mode="r", *args, **kwargs):
    if "w" in mode:
        raise OSError(errno.ENOSPC, "No space left on device", path)
    return builtins.open(path, mode, *args, **kwargs)
disk_files.open = full
'''


def check_disk_full() -> None:
    hook = DISK_FULL if os.path.exists("/dev/full") else DISK_FULL_RAISES
    cache = Path(tempfile.mkdtemp(prefix="autojit-fault-")) / "cache"
    assert_survived(cache_child(str(cache), before=hook))
    assert not [p for p in cache.rglob("*") if p.is_file() and p.name != ".lock"]


def check_two_processes_write_one_key() -> None:
    """Two children start their first call together on an empty cache."""
    parent = Path(tempfile.mkdtemp(prefix="autojit-fault-race-"))
    go = parent / "go"
    wait = f'''
        import os, time
        while not os.path.exists({str(go)!r}):
            time.sleep(0.001)
    '''
    source = CACHE_CHILD.format(before=textwrap.dedent(wait), drop="")
    env = child_env(str(parent / "cache"))
    children = [subprocess.Popen([sys.executable, "-c", source], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
    time.sleep(0.3)
    go.touch()
    for child in children:
        out, err = child.communicate(timeout=CHILD_SECONDS)
        assert_exit(child, 0, err, out)
        assert_survived(json.loads(out.strip().splitlines()[-1]), most_warnings=0)
    test_disk_cache._assert_consistent(parent / "cache")
    again = cache_child(str(parent / "cache"))
    assert_survived(again, most_warnings=0)
    assert again["disk_hits"] >= 1 and again["compiles"] == 0, again


#: the fast loader's executable pages refused (ENOMEM): LLVM's linker loads the cached code
NO_CODE_PAGES = '''
import errno
from autojit.lower_cpu import elf_loader
def refuse(size):
    raise OSError(errno.ENOMEM, "Cannot allocate memory")
elf_loader.lifelong_pages = refuse
'''

CACHE_DAMAGE: list[Fault] = [
    *[Fault(f"entry-{how}", "cache damage", f"every entry of a warm cache {how}",
            "right answers, one CacheWarning per entry at most; the next process hits cleanly",
            damaged_entries(how), deeper="tests/cpu/cache/test_disk_cache.py")
      for how in ("truncated", "zero-length", "garbage", "flipped")],
    Fault("entry-other-version", "cache damage", "every entry's format/ABI version set to 99",
          "recompiled with at most one CacheWarning per entry; then clean hits",
          damaged_entries("other-format"), deeper="tests/cpu/cache/test_disk_cache.py"),
    Fault("unreadable-cache", "cache damage", "chmod 000 on a warm cache and all it holds",
          "right answers, compiled, at most one CacheWarning", check_unreadable_cache),
    Fault("read-only-empty-cache", "cache damage", "an empty cache folder with mode 555",
          "right answers, compiled, at most one CacheWarning, nothing written",
          check_read_only_cache),
    Fault("read-only-warm-cache", "cache damage", "a warm cache, every file and folder 444/555",
          "served from the cache (no compile), at most one warning", check_read_only_warm_cache),
    Fault("cache-dir-is-a-file", "cache damage", "AUTOJIT_CACHE_DIR names a regular file",
          "right answers, compiled, at most one CacheWarning, the file untouched",
          check_cache_dir_is_a_file, deeper="tests/cpu/cache/test_disk_cache.py"),
    Fault("disk-full", "cache damage", "every cache write fails with ENOSPC (/dev/full)",
          "right answers, compiled, at most one CacheWarning, no partial entry left",
          check_disk_full),
    Fault("two-writers-one-key", "cache damage", "two processes compile and store one key "
          "at the same moment", "both right without warnings, the cache consistent, then a "
          "clean hit", check_two_processes_write_one_key,
          deeper="tests/cpu/cache/test_disk_cache.py"),
    Fault("no-executable-pages", "cache damage", "a warm cache, but mmap of code pages fails "
          "with ENOMEM", "the cached code is linked another way or recompiled: right answers, "
          "no warning", lambda: (lambda seen: assert_survived(seen, most_warnings=0))(
              cache_child(str(warm_copy()), before=NO_CODE_PAGES))),
]


# -- signals -------------------------------------------------------------------------------------
#: ``{hook}`` wraps one step of the first call so that SIGINT arrives in it; the child then
#: checks the interrupt reached it and the function still compiles and is right.
INTERRUPT_CHILD = '''
import os, signal, json
import numpy as np
import autojit.dispatch.dispatcher as dispatcher
from autojit import autoroute
from autojit.runtime.targets import TARGETS

def interrupt(real):
    def step(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)    # handled at the next bytecode: in this step
        return real(*args, **kwargs)
    return step

@autoroute
def f(x):
    return np.sqrt(np.abs(x)) * 2.0 + x.max(axis=-1, keepdims=True)

x = np.linspace(-1.0, 1.0, 60).reshape(6, 10)
{hook}
try:
    f(x)
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
{unhook}
right = all(np.array_equal(f(a), f.__wrapped__(a)) for a in (x, x[::-1], x[:2]))
s = f.stats()
print(json.dumps({{"outcome": outcome, "right": right, "cpu": s["routes"]["cpu"],
                   "fallbacks": s["fallbacks"]}}))
'''

HOOKS = {
    "tracing": ("real = dispatcher.trace_function\ndispatcher.trace_function = interrupt(real)",
                "dispatcher.trace_function = real"),
    "planning": ("real = dispatcher.plan_kernels\ndispatcher.plan_kernels = interrupt(real)",
                 "dispatcher.plan_kernels = real"),
    "compiling": ("cpu = TARGETS['cpu']\nreal = cpu.compile\n"
                  "cpu.compile = interrupt(real)", "cpu.compile = real"),
}


def interrupted_first_call(step: str) -> Callable[[], None]:
    def check() -> None:
        hook, unhook = HOOKS[step]
        seen = report(run_child(INTERRUPT_CHILD.format(hook=hook, unhook=unhook)))
        assert seen["outcome"] == "interrupted", seen
        assert seen["right"] and seen["cpu"] >= 3 and not seen["fallbacks"], seen
    return check


#: a long run of split (threaded) compiled calls; SIGINT arrives from a timer mid-run
LONG_CALLS = '''
import os, signal, threading, time, json
import numpy as np
from autojit import autoroute

@autoroute
def f(x):
    return np.sqrt(np.abs(x)).max(axis=1) + np.abs(x[:, 0])

x = np.linspace(-5.0, 5.0, 400_000).reshape(2000, 200)
want = f.__wrapped__(x)
f(x)
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
calls, outcome = 0, "finished"
try:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        f(x)
        calls += 1
except KeyboardInterrupt:
    outcome = "interrupted"
right = all(np.array_equal(f(a), f.__wrapped__(a)) for a in (x, x[::-1], x[:3]))
print(json.dumps({"outcome": outcome, "calls": calls, "right": right,
                  "cpu": f.stats()["routes"]["cpu"], "fallbacks": f.stats()["fallbacks"]}))
'''

SPLIT = {"AUTOJIT_NUM_THREADS": "2", "AUTOJIT_THREAD_MIN_WORK": "0"}


def check_sigint_during_long_compiled_calls() -> None:
    seen = report(run_child(LONG_CALLS, child_env(**SPLIT)))
    assert seen["outcome"] == "interrupted" and seen["calls"] > 0, seen
    assert seen["right"] and not seen["fallbacks"], seen


#: split calls in a loop until a signal ends the process; ``{handler}`` may install one
UNTIL_SIGNALLED = '''
import signal, sys
import numpy as np
from autojit import autoroute
{handler}
@autoroute
def f(x):
    return np.sqrt(np.abs(x)).max(axis=1)

x = np.linspace(-5.0, 5.0, 400_000).reshape(2000, 200)
want = f.__wrapped__(x)
print("running", flush=True)
while True:
    assert np.array_equal(f(x), want)
'''


def signalled(handler: str, expected: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """Send ``sig`` to a child in a loop of split calls; it must end with ``expected``."""
    def check() -> None:
        source = textwrap.dedent(UNTIL_SIGNALLED.format(handler=textwrap.dedent(handler)))
        child = subprocess.Popen([sys.executable, "-c", source], cwd=ROOT,
                                 env=child_env(**SPLIT, AUTOJIT_THREAD_SPIN_US="100000000000"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "running", child.stderr.read()
            time.sleep(0.3)
            child.send_signal(sig)
            out, err = child.communicate(timeout=CHILD_SECONDS)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert_exit(child, expected, err, out)
        assert "AssertionError" not in err, err
    return check


SIGNALS: list[Fault] = [
    *[Fault(f"sigint-while-{step}", "signal", f"SIGINT arrives while the first call is {step}",
            "KeyboardInterrupt reaches the caller; the function then compiles and gives "
            "NumPy's answer (no fallback recorded)", interrupted_first_call(step),
            deeper="tests/cpu/lowering/test_compile_scaling.py (a real Ctrl-C 0.5 s into a 2 s "
                   "compile)")
      for step in HOOKS],
    Fault("sigint-during-long-compiled-calls", "signal", "SIGINT from a timer while split "
          "compiled calls run back to back", "KeyboardInterrupt reaches the caller; later "
          "calls right and compiled", check_sigint_during_long_compiled_calls),
    Fault("sigterm-during-threaded-call", "signal", "SIGTERM (default action) to a process in "
          "split calls with workers spinning", "killed by SIGTERM (exit -15), no crash",
          signalled("", -signal.SIGTERM)),
    Fault("sigterm-handler-exits", "signal", "SIGTERM with a handler calling sys.exit(7) "
          "during split calls", "exit code 7, no crash, no hang at exit",
          signalled("signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))", 7)),
    Fault("sigint-default-in-threaded-loop", "signal", "SIGINT (no handler) to a process in "
          "split calls", "KeyboardInterrupt ends it: killed by SIGINT as Python does (exit -2), "
          "no crash",
          signalled("", -signal.SIGINT, signal.SIGINT)),
]


# -- threads -------------------------------------------------------------------------------------
def _run_threads(bodies: Sequence[Callable[[], None]], seconds: float = 60.0) -> None:
    """Run each body on its own thread at once; re-raise the first failure; no hangs."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(bodies))

    def wrap(body: Callable[[], None]) -> None:
        try:
            start.wait()
            body()
        except BaseException as exc:  # noqa: BLE001 — re-raised on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(b,), daemon=True) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def check_eight_threads_eight_shapes() -> None:
    def fn(x):
        return np.sqrt(np.abs(x)).max(axis=-1) * 2.0 - x.sum(axis=-1) * 0.0

    jitted = autoroute(fn, force="cpu")
    inputs = [np.linspace(-1.0, 1.0, (k + 1) * (k + 3)).reshape(k + 1, k + 3) for k in range(8)]

    def body(x: np.ndarray) -> Callable[[], None]:
        def run() -> None:
            for view in (x, x[::-1], x, x[:, ::2]):
                assert_same_value(jitted(view), fn(view))
        return run

    _run_threads([body(x) for x in inputs])
    assert jitted.stats()["routes"]["cpu"] >= 8 and not jitted.stats()["fallbacks"]


def check_call_while_another_thread_compiles() -> None:
    """Thread A's first call is held inside the compile; thread B calls the same signature
    and another one meanwhile: both right, A's compile not disturbed."""
    cpu = TARGETS["cpu"]
    real = cpu.compile
    compiling = threading.Event()

    def slow(kernel: Any) -> Any:
        compiling.set()
        time.sleep(0.3)
        return real(kernel)

    def fn(x):
        return np.sqrt(np.abs(x)) * 3.0 + x[..., :1]

    jitted = autoroute(fn, force="cpu")
    x = np.linspace(-2.0, 2.0, 30).reshape(5, 6)
    cpu.compile = slow
    try:
        def first() -> None:
            assert_same_value(jitted(x), fn(x))

        def second() -> None:
            assert compiling.wait(30)
            assert_same_value(jitted(x), fn(x))
            assert_same_value(jitted(x.astype(np.float32)), fn(x.astype(np.float32)))
            assert_same_value(jitted(x[::-1]), fn(x[::-1]))
        _run_threads([first, second])
    finally:
        cpu.compile = real
    assert not jitted.stats()["fallbacks"], jitted.stats()["fallbacks"]


def shutdown_scenario(name: str, count: int = 2, warm: bool = False) -> Callable[[], None]:
    """Run ``count`` children of tests/cpu/runtime/test_shutdown.py's scenario ``name``."""
    def check() -> None:
        env = test_shutdown.child_env(tempfile.mkdtemp(prefix="autojit-fault-exit-"))
        source = test_shutdown.child_program(name)
        if warm:
            test_shutdown.warm(source, env)
        _, code, text = test_shutdown.SCENARIOS[name]
        outcomes = test_shutdown.run_children(source, env, count, at_once=count)
        bad = test_shutdown.failures(outcomes, code, text)
        assert not bad, test_shutdown.describe(bad)
    return check


THREADS: list[Fault] = [
    Fault("eight-threads-eight-shapes", "thread", "8 threads call one new function at once, "
          "each with its own shape and layouts", "every result NumPy's; compiled",
          check_eight_threads_eight_shapes, deeper="tests/cpu/routing/test_routing_faults.py"),
    Fault("call-while-first-call-compiles", "thread", "a thread calls (same and other "
          "signatures) while another thread's first call is inside the compile",
          "both right, no fallback, no hang", check_call_while_another_thread_compiles),
    Fault("fork-after-threaded-call", "thread", "fork right after a split call; the child "
          "calls again and exits by return, sys.exit and os._exit",
          "the children exit 0 and the parent calls again", shutdown_scenario(
              "a fork child exits right after a split call"),
          deeper="tests/cpu/runtime/test_shutdown.py, tests/cpu/runtime/test_team.py"),
]


# -- shutdown ------------------------------------------------------------------------------------
#: ``callback`` is called by the compiled function's Python body (so while it is traced)
IN_CALLBACK = '''
import os, sys
import numpy as np
from autojit import autoroute

def callback():
    print("callback", flush=True)
    {exit}

@autoroute
def f(x):
    callback()
    return x * 2.0

f(np.ones(3))
print("after", flush=True)
'''


def exit_in_callback(how: str, code: int) -> Callable[[], None]:
    """The exit the callback asks for is the process's, and the callback runs once (as the
    Python function would run it), nothing after it."""
    def check() -> None:
        done = run_child(IN_CALLBACK.format(exit=how))
        assert_exit(done, code)
        assert done.stdout.splitlines() == ["callback"], done.stdout
        assert "Traceback" not in done.stderr, done.stderr
    return check


#: sys.exit from a SIGALRM handler while split calls run with workers spinning for a day
EXIT_IN_HANDLER = '''
import signal, sys
import numpy as np
from autojit import autoroute

@autoroute
def f(x):
    return np.sqrt(np.abs(x)).max(axis=1)

x = np.linspace(-5.0, 5.0, 400_000).reshape(2000, 200)
f(x)
signal.signal(signal.SIGALRM, lambda *a: sys.exit(5))
signal.setitimer(signal.ITIMER_REAL, 0.2)
while True:
    f(x)
'''

SHUTDOWN: list[Fault] = [
    Fault("exit-after-threaded-call-warm", "shutdown", "4 processes exit right after a split "
          "call, code linked from a warm cache, AUTOJIT_THREAD_SPIN_US=1e11",
          "each exits 0 at once, 'done' printed", shutdown_scenario("plain exit", 4, warm=True),
          deeper="tests/cpu/runtime/test_shutdown.py (200 processes)"),
    Fault("sys-exit-in-callback", "shutdown", "sys.exit(3) in a callback the function calls "
          "(during its first call)", "exit code 3, the callback ran once, nothing after",
          exit_in_callback("sys.exit(3)", 3)),
    Fault("os-exit-in-callback", "shutdown", "os._exit(4) in a callback the function calls",
          "exit code 4, the callback ran once", exit_in_callback("os._exit(4)", 4)),
    Fault("sys-exit-in-signal-handler", "shutdown", "sys.exit(5) from a SIGALRM handler "
          "during split calls with spinning workers", "exit code 5, no crash",
          lambda: assert_exit(run_child(EXIT_IN_HANDLER, child_env(
              **SPLIT, AUTOJIT_THREAD_SPIN_US="100000000000")), 5)),
    Fault("sys-exit-inside-thread", "shutdown", "sys.exit in a thread after a split call",
          "only that thread ends; the process exits 0",
          shutdown_scenario("sys.exit inside a thread"),
          deeper="tests/cpu/runtime/test_shutdown.py"),
]


# -- resources -----------------------------------------------------------------------------------
def check_allocator_memory_error() -> None:
    """The output allocator raises MemoryError (on a first call, and on a new shape of a
    warm function where it is asked): the caller gets it, the inputs are unchanged, the
    next call is right and compiled. (The native fast path allocates with NumPy's C API:
    the huge-allocation row reaches that.)"""
    from autojit.runtime import targets as backends

    def fn(x):
        return np.sqrt(np.abs(x)) * 2.0 + x

    pool = backends.OUTPUT_POOL
    asked: list[tuple[int, ...]] = []

    def refuse(shape: tuple[int, ...], dtype: Any, limit: int | None = None) -> np.ndarray:
        asked.append(shape)
        raise MemoryError(f"Unable to allocate array with shape {shape}")

    jitted = autoroute(fn, force="cpu")
    for arg in (np.linspace(-1.0, 1.0, 50_000), np.linspace(0.0, 1.0, 777)[::-1]):
        before, asked[:] = arg.copy(), []
        pool.empty = refuse
        try:
            jitted(arg)
        except MemoryError:
            pass
        else:
            assert not asked, f"the allocator's MemoryError was swallowed ({asked})"
        finally:
            del pool.empty
        assert_same_value(arg, before)
        for _ in range(3):
            assert_same_value(jitted(arg), fn(arg))
    assert jitted.stats()["routes"]["cpu"] >= 6, jitted.stats()
    assert not jitted.stats()["fallbacks"], jitted.stats()["fallbacks"]


def check_mmap_enomem_uses_numpys_allocation() -> None:
    """The output pool's mmap fails with ENOMEM: malloc serves the big result (as NumPy's
    own allocator would), still an array owning its data."""
    from autojit.runtime import output_pool

    def fn(x):
        return np.sqrt(np.abs(x)) - 1.0

    pool = output_pool.OUTPUT_POOL
    if output_pool._native is None:
        return                                  # not built: no mmap to refuse
    x = np.linspace(-4.0, 4.0, output_pool.MIN_BYTES // 8 + 1)   # a result the pool serves
    jitted = autoroute(fn, force="cpu")
    pool.clear()                                # no idle block to reuse: each call maps
    refused = pool.refused
    output_pool._native.refuse_maps(pool._handler, 3)
    try:
        for _ in range(3):
            result = jitted(x)
            assert_same_value(result, fn(x))
            assert result.flags.owndata and result.base is None
            del result
    finally:
        output_pool._native.refuse_maps(pool._handler, 0)
    assert pool.refused - refused == 3, pool.refused - refused
    assert jitted.stats()["routes"]["cpu"] == 3


def check_huge_allocations_raise_memory_error() -> None:
    """Sizes no machine has: NumPy's MemoryError (not a crash, not a fallback's other error),
    then a small call right."""
    def zeros_plus(x):
        return np.zeros((10 ** 6, 10 ** 6)) + x

    def broadcast_plus(x):
        return np.broadcast_to(x, (10 ** 6, 10 ** 6)) + 1.0

    for fn in (zeros_plus, broadcast_plus):
        _, error = call_numpy(fn, [np.ones(1)])
        assert isinstance(error, MemoryError), error
        jitted = autoroute(fn, force="cpu")
        for _ in range(2):
            with contextlib.suppress(MemoryError):
                jitted(np.ones(1))
                raise AssertionError(f"{fn.__name__}: no MemoryError")
    assert_calls_match_numpy(lambda x: np.broadcast_to(x, (3, 4)) + 1.0, [(np.ones(4),)])


def check_enomem_becomes_memory_error() -> None:
    """A size the kernel refuses to map (mmap: ENOMEM, really, not simulated) reaches the
    caller as NumPy's MemoryError, every time, and the function then works."""
    from autojit.runtime import output_pool

    def zeros_plus(x):
        return np.zeros((10 ** 6, 10 ** 6)) + x

    pool = output_pool.OUTPUT_POOL
    refused = pool.refused
    jitted = autoroute(zeros_plus, force="cpu")
    for _ in range(3):
        with contextlib.suppress(MemoryError):
            jitted(np.ones(1))
            raise AssertionError("no MemoryError")
    assert output_pool._native is None or pool.refused > refused, "the pool mapped 7 TiB?"
    assert_calls_match_numpy(lambda x: np.zeros((3, 2)) + x, [(np.ones(2),)])


#: the first call made with only ``{spare}`` frames of recursion left: the answer must be
#: the Python function's (a fallback is fine), never a RecursionError the Python lacks
RECURSION = '''
import sys, json
import numpy as np
from autojit import autoroute

@autoroute
def f(x):
    return np.sqrt(x) * 2.0 + x.max()

def plain(x):
    return np.sqrt(x) * 2.0 + x.max()

def at_depth(n, fn, x):
    return fn(x) if n == 0 else at_depth(n - 1, fn, x)

x = np.linspace(0.0, 1.0, 8)
want = plain(x)
base = len(__import__("inspect").stack(0))
sys.setrecursionlimit(base + 200 + {spare})
assert np.array_equal(at_depth(200, plain, x), want)
try:
    got = at_depth(200, f, x)
    outcome = "right" if np.array_equal(got, want) else "wrong"
except RecursionError:
    outcome = "RecursionError"
sys.setrecursionlimit(10000)
later = np.array_equal(f(x), want) and np.array_equal(at_depth(200, f, x), want)
print(json.dumps({{"outcome": outcome, "later": bool(later)}}))
'''


def check_recursion_limit(spare: int) -> Callable[[], None]:
    def check() -> None:
        seen = report(run_child(RECURSION.format(spare=spare)))
        assert seen == {"outcome": "right", "later": True}, seen
    return check


RESOURCES: list[Fault] = [
    Fault("allocator-memory-error", "resource", "the output allocator raises MemoryError "
          "(monkeypatched) on a warm and on a first call", "MemoryError reaches the caller, "
          "inputs unchanged, the next call right and compiled", check_allocator_memory_error),
    Fault("mmap-enomem", "resource", "the output pool's mmap fails with ENOMEM",
          "NumPy's allocation serves the calls: right, compiled",
          check_mmap_enomem_uses_numpys_allocation),
    Fault("huge-allocation", "resource", "np.zeros((1e6, 1e6)) + x and a 1e12-element "
          "broadcast written out", "NumPy's MemoryError each time; small calls right",
          check_huge_allocations_raise_memory_error,
          deeper="tests/cpu/dispatch/test_dispatch_guards.py"),
    Fault("enomem-to-memory-error", "resource", "an output of 7 TiB: the output pool's mmap "
          "fails with a real ENOMEM", "NumPy's MemoryError ('Unable to allocate') each call; "
          "small calls right", check_enomem_becomes_memory_error),
    *[Fault(f"recursion-limit-{spare}-spare", "resource", f"the first call made {spare} frames "
            "below the recursion limit", "the Python function's answer (a fallback allowed), "
            "later calls right", check_recursion_limit(spare)) for spare in (20, 60)],
]

FAULTS: list[Fault] = [*BAD_INPUTS, *CACHE_DAMAGE, *SIGNALS, *THREADS, *SHUTDOWN, *RESOURCES]
