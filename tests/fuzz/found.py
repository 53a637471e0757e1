"""The failure classes the fuzzer found (FOUND.md), one minimal repro each, shrunk from its
output and checked by the fuzzer's own comparison. Prints ``BUG`` or ``fixed`` per class.

    AUTOJIT_CACHE_DIR=$(mktemp -d) python -m tests.fuzz.found [-k ID]     # from the repo root
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import numpy as np

FOUND: list[tuple[str, str, Callable, list[Callable[[], tuple]]]] = []
#: classes whose bug is an internal-error fallback (right answer, but autojit's own error):
#: BUG while any call of them falls back with "internal error"
INTERNAL: set[str] = set()


def found(cid: str, title: str, *calls: Callable[[], tuple], internal: bool = False
          ) -> Callable:
    def register(fn: Callable) -> Callable:
        FOUND.append((cid, title, fn, list(calls)))
        if internal:
            INTERNAL.add(cid)
        return fn
    return register


def internal_errors(fn: Callable, calls: list[Callable[[], tuple]]) -> list[str]:
    """Return the "internal error" fallback reasons of ``fn``'s calls (one dispatcher)."""
    from autojit import autoroute
    jitted = autoroute(fn)
    for make in calls:
        try:
            with np.errstate(all="ignore"):
                jitted(*make())
        except Exception:   # noqa: BLE001 - NumPy's own exceptions are the repro's business
            pass
    return [r for r in jitted.stats()["fallbacks"] if r.startswith("internal error")]


# -- NEW classes ---------------------------------------------------------------------------
@found("F1", "float->int cast of NaN/inf/out-of-range: NumPy INT_MIN (x86), autojit 0",
       lambda: (np.array([-np.inf, np.nan, 1e10]),))
def f1(a):
    return a.astype(np.int32)


@found("F1b", "same in a write: a_int64[...] = [inf, -inf, nan] (NumPy INT64_MIN each)",
       lambda: (np.zeros(3, np.int64), np.array([np.inf, -np.inf, np.nan])))
def f1b(a, b):
    a[...] = b


@found("F1c", "same in a reduction's dtype=: np.sum(2286124311.0, dtype=np.int8) (NumPy 0)",
       lambda: (np.array([2286124311.0]),))
def f1c(a):
    return np.sum(a, dtype=np.int8)


@found("F2", "masked write into int64 with a float: unmasked elements rounded through float64",
       lambda: (np.array([-9223372036854775807, 5]),))
def f2(a):
    a[a > 1] = 1.0


@found("F3", "np.eye(1) / np.identity(1) alone: IndexError in lower_cpu/render.py:_emit_body")
def f3():
    return np.identity(1)


@found("F3b", "np.identity(1) + np.zeros(3): [[1, 0, 0]] (NumPy [[1, 1, 1]])",
       lambda: (np.zeros(3),))
def f3b(x):
    return np.identity(1) + x


@found("F3c", "np.linspace(-3, 2, 1) < x: the same IndexError in render._emit_body",
       lambda: (np.zeros((2, 1)),))
def f3c(a2):
    return np.linspace(-3, 2, 1) < a2


@found("F4", "out= into a computed array the inputs broadcast into: result shape () not (2, 2)",
       lambda: (np.array(3), np.zeros((2, 2))))
def f4(a0, a1):
    v1 = a0 + a1
    np.fmax(a0, a0, out=v1)
    return v1


@found("F4b", "v += x on a computed array: a view taken before it does not see it",
       lambda: (np.ones((2, 3)),))
def f4b(a0):
    v1 = a0 * 1
    v2 = v1.T
    v1 += 5
    return v2


@found("F4c", "v += x where x does not broadcast into v: NumPy ValueError, autojit none",
       lambda: (np.ones(2), np.ones((3, 2))))
def f4c(a0, a1):
    v1 = np.exp(a0)
    v1 += a1
    return v1


@found("F5", "reductions with dtype=bool (sum, mean, var): False where NumPy True",
       lambda: (np.array([0, 1, 0, 8]),))
def f5(a):
    return np.sum(a, dtype=np.bool), np.mean(a, dtype=np.bool)


@found("F6", "np.linspace(1, np.float32(2), 3): float64 (NumPy float32, NEP 50)")
def f6():
    return np.linspace(1, np.float32(2.0), 3)


@found("F7", "a (1,)-shaped value written into a 0-d argument with a cast is written as 0",
       lambda: (np.array(1, np.uint32), np.array([-6])))
def f7(a1, a0):
    a1[...] = a0


@found("F8", "slice write whose start is below -n (clipped to 0) is dropped: a[-5:-1:3] = v",
       lambda: (np.array([[0, -1], [0, 0]]), np.int32(-5)))
def f8(a1, a0):
    a1[-5:-1:3] = a0
    return a1[0, 1]


@found("F9", "a matmul whose result is unused changes ANOTHER output's dtype (bool -> float32)",
       lambda: (np.array([True, False]),))
def f9(a1):
    v1 = a1[::-1]
    v3 = a1 @ a1.astype(np.float32)  # noqa: F841 - unused, as the fuzzer found it
    return v1


@found("F9b", "same, the shape: an empty a0[1:-1:3] next to an unused dot comes back 0-d",
       lambda: (np.array([], dtype=np.float64),))
def f9b(a0):
    v1 = a0[1:-1:3]
    v3 = np.dot(a0, np.sinh(a0))  # noqa: F841 - unused, as the fuzzer found it
    return v1


@found("F14", "a[0] = a + a (an array into one element): NumPy ValueError, autojit none",
       lambda: (np.array([1.0]),))
def f14(a0):
    a0[0] = a0 + a0


@found("F15", "np.inner of 3-D arrays: shape (2, 3, 3), NumPy (2, 3, 2, 3) (a matmul contraction)",
       lambda: (np.arange(24.0).reshape(2, 3, 4),))
def f15(x):
    return np.inner(x, x)


@found("F3d", "np.minimum(np.arange(1), x): the same IndexError in render._emit_body",
       lambda: (np.ones((2, 2)),))
def f3d(a0):
    return np.minimum(np.arange(1), a0)


@found("F10", "np.arange(3, dtype=bool): NumPy TypeError, autojit returns", lambda: (np.ones(3),))
def f10(a):
    return np.arange(a.shape[0], dtype=np.bool)


@found("F11", "np.floor(2**63): NumPy np.ulonglong scalar, autojit np.uint64 (same dtype)")
def f11():
    return np.floor(9223372036854775808)


@found("F12", "a view of an argument next to an unused vector dot: ValueError in views.apply_view",
       lambda: (np.array([0, 0]),))
def f12(a0):
    v1 = a0[..., None]
    v3 = a0.astype(np.float64)
    v4 = v3 @ v3  # noqa: F841 - unused, as the fuzzer found it
    return v1.reshape((2, 1))


@found("F13", "0-d argument: a0[...] = a0; a0[None] = v: AssertionError 'kernel dependency cycle'",
       lambda: (np.array(0.0),))
def f13(a0):
    v3 = a0 - a0
    a0[...] = a0
    a0[None] = v3


@found("F16", "np.mean of a (2, 1) integer array: LLVM rejects the pairwise sum's IR "
       "('Instruction does not dominate all uses'), internal-error fallback",
       lambda: (np.array([0, 2], np.uint64).reshape(2, 1),), internal=True)
def f16(a):
    return np.mean(a)


# -- known classes, wider than their repro ----------------------------------------------------
@found("K-W1", "integer index of a computed array, returned directly: garbage ((x + x)[2] -> 32)",
       lambda: (np.array([-8, 4, 8]),))
def k_w1(x):
    return (x + x)[2]


@found("K-W1f", "same for floats: (x + x)[-1] -> 8e-323 (NumPy 16.0)",
       lambda: (np.array([-8.0, 4.0, 8.0]),))
def k_w1f(x):
    return (x + x)[-1]


@found("K-W1c", "np.squeeze of a one-element computed array -> 0", lambda: (np.array([3]),))
def k_w1c(x):
    return np.squeeze(x * 2)


@found("K-W2", "x.reshape((-1, 2)) of size 2 at the first call: (1, 2) on the next, size 4",
       lambda: (np.arange(2.0),), lambda: (np.arange(4.0),))
def k_w2(a0):
    return np.absolute(a0.reshape((-1, 2)))


@found("K-C5", "an unused matmul: TypeError int(None) in policy/backends.py:slot",
       lambda: (np.array([[1, 1], [3, 3]]),))
def k_c5(a2):
    v3 = np.matmul(a2, a2)  # noqa: F841 - unused, as the fuzzer found it
    return np.arccosh(1.25)


@found("K-C3", "a view of np.identity/np.eye/np.arange: KeyError 'n0'")
def k_c3():
    v3 = np.arange(2)
    v4 = v3[::-1]  # noqa: F841 - unused, as the fuzzer found it
    return v3


@found("K-W13", "Python float ** Python float of a negative base: NumPy (Python) complex",
       lambda: (-2.0,))
def k_w13(a0):
    return a0 ** 0.5


@found("K-W13n", "a Python int computed from Python ints promotes as int64, not weakly (NEP 50)",
       lambda: (np.zeros(2, np.float32), 0))
def k_w13n(a0, a1):
    return np.subtract(a1 & a1, a0)


@found("K-W12c", "Python int >= 2**63 after a call with a small int: OverflowError (C long)",
       lambda: (-3, np.array([1, 4])[::-1]),
       lambda: (9223372036854775808, np.array([-3, -6])[::-1]))
def k_w12c(a0, a1):
    v1 = a1.argmax(axis=-1)
    v3 = np.where(a1 > -0.25, a0, a0)  # noqa: F841 - unused, as the fuzzer found it
    return v1


def main() -> None:
    warnings.simplefilter("ignore")
    from tests.fuzz.runner import check_repro
    select = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else ""
    bugs = 0
    for cid, title, fn, calls in FOUND:
        if select not in cid:
            continue
        print(f"{cid:7s} {title}\n        ", end="")
        ok = check_repro(fn, calls or [lambda: ()])
        if cid in INTERNAL and (errors := internal_errors(fn, calls or [lambda: ()])):
            print(f"        FAIL falls back with {errors[0][:200]}")
            ok = False
        bugs += not ok
    print(f"\n{bugs} still failing")


if __name__ == "__main__":
    main()


