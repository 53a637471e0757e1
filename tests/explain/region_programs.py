"""The issue-15 programs (loops, scratch arrays, int arguments) whose inspect texts
``test_regions_report`` checks."""

import numpy as np


def heat(u, steps, alpha):
    for _ in range(steps):
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                  + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def lower_solve(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def trace_tanh(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += np.tanh(a[i, i])
    return a + acc


def distances(n, x):
    out = np.empty((n, n))
    for i in range(n):
        out[i] = np.abs(x[i] - x[:n])
    return out


def relax(u, tol):
    err = tol + 1.0
    while err > tol:
        new = 0.5 * (u[:-2] + u[2:])
        err = np.max(np.abs(new - u[1:-1]))
        u[1:-1] = new
    return u


def step(x, n):
    if n > 100:
        return np.sqrt(x)
    return x * 2.0


def lu_inplace(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]


def shrink(x):   # the carried shape changes: the loop runs as Python (unrolled)
    for _ in range(3):
        x = x[1:] * 2.0
    return x


def drop(x, n):   # the same with a bound from an argument: the function runs as Python
    for _ in range(n):
        x = x[1:]
    return x
