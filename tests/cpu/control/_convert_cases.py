# ruff: noqa: B007, B023, F821, F841, UP028 (the constructs the converter must keep or leave)
"""Hand-written functions for the converter's tests: each one's converted form must mean
what the original means (kept in a file of their own: the converter reads their source)."""

from __future__ import annotations

import builtins

import numpy as np

LOG: list = []
SCALE = 3


def carried_scalar(a, n):
    acc = 0.0
    for i in range(n):
        acc += a[i] * SCALE
    return acc


def target_after_loop(n):
    for i in range(n):
        pass
    return i   # UnboundLocalError for n = 0, as Python


def target_keeps_old_value(n):
    i = -1
    for i in range(n):
        pass
    return i


def bound_in_branch(x):
    if x > 0:
        y = 1
    elif x < -5:
        y = 2
    return y   # unbound for -5 <= x <= 0


def first_bound_in_loop(n):
    for i in range(n):
        if i == 2:
            found = i * 10
    return found


def nested_loops(n, m):
    total = 0
    rows = []
    for i in range(n):
        row = 0
        for j in range(i, m, 2):
            row += j
            total += i * j
        rows.append(row)
    return total, rows


def while_counter(n):
    k, steps = 0, 0
    while k < n:
        k += 3
        steps += 1
    return k, steps


def while_reads_unbound(n):
    while n > 0:
        n -= 1
        late = n
    return late


def reads_before_assign(n):
    out = []
    for i in range(n):
        if i > 0:
            out.append(prev)
        prev = i * i
    return out


def read_unbound_in_body(n):
    for i in range(n):
        if i == 1:
            return_me = never   # noqa: F821 (UnboundLocalError where Python raises it)
        never = i
    return return_me


def side_effects(a, n):
    for i in range(n):
        a[i] = i * 2
        LOG.append(i)
    return a


def shadowed_range_local(n):
    range = lambda k: [k, k + 1]   # noqa: E731 (a local shadowing range)
    seen = []
    for i in range(n):
        seen.append(i)
    return seen


def range_with_step(lo, hi, step):
    seen = []
    for i in range(lo, hi, step):
        seen.append(i)
    return seen


def float_bound(x):
    for i in range(x):   # TypeError for a float, as Python
        pass
    return x


def raising_body(n):
    acc = 1.0
    for i in range(n):
        acc = acc / (2 - i)
    return acc


def closure_in_body(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)   # closes over the loop's name: left as Python
    return [f() for f in fs]


def comprehension_in_body(a, n):
    rows = []
    for i in range(n):
        rows.append([x * i for x in a])
    return rows


def walrus_in_test(a):
    out = 0
    if (m := a.sum()) > 2:
        out = m
    return out, m


def numpy_branches(x):
    y = x.copy()
    for i in range(x.shape[0]):
        if x[i] > 0:
            y[i] = np.sqrt(x[i])
        elif x[i] < -1:
            y[i] = -x[i]
        else:
            z = x[i] * 2
            y[i] = z
    return y


def kwonly(a, *rest, scale=2, **extra):
    total = 0
    for i in range(len(rest)):
        total += rest[i] * scale
    return total + a + len(extra)


def make_closure(k):
    def inner(n):
        acc = 0
        for i in range(n):
            acc += k
        return acc
    return inner


def loop_with_break(n):
    for i in range(n):
        if i == 3:
            break
    return i


def generator(n):
    for i in range(n):
        yield i


def del_in_body(n):
    x = 0
    for i in range(n):
        x = i
        del x
        x = -i
    return x


def loop_in_try(n):
    x = 0
    try:
        for i in range(n):
            x = i
            if i == 2:
                raise KeyError(i)
    except KeyError:
        pass
    return x


def builtin_range_ok(n):
    return [i for i in builtins.range(n)]


class Holder:
    def method(self, n):
        acc = 0
        for i in range(n):
            acc += i
        return acc


def loop_with_continue(n):
    odd = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        odd += i
        LOG.append(i)
    return odd, i


def while_with_break(a, n):
    k = 0
    while k < n:
        k += 1
        if a[k] > 2:
            LOG.append(("break", k))
            break
        for j in range(k):
            if j == 1:
                continue
            LOG.append(j)
    return k


def early_return(x, n):
    if n > 100:
        return np.sqrt(x)
    return x * 2.0


def returns_in_nested_branches(x, n):
    total = 0
    if n > 3:
        if n > 10:
            LOG.append("big")
            return -1
        total = n * 2
    elif n < 0:
        raise ValueError("negative")
    for i in range(n):
        total += i
    if total == 6:
        return total, "six"
    LOG.append(total)
    return total


def falls_through(n):
    if n > 2:
        return n
    LOG.append(n)


def return_in_loop(n):
    for i in range(n):
        if i == 2:
            return i
    return -1


late = "a global of the same name"


def local_read_before_loop(n):  # noqa: F823 (the read Python refuses)
    x = late if n > 5 else 0   # noqa: F823 (late is the function's local: UnboundLocalError for n > 5)
    for late in range(n):
        pass
    return x
