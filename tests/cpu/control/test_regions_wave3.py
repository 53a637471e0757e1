"""Issue 15, wave 3 (regions): ``np.flip`` in loop bodies, in-place updates of arrays
computed inside the function and carried through a loop, branches on array data that
write into arrays, ``and``/``or`` in conditions. Every case goes through the oracle and
must compile (no call runs as Python)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy


def _compiled(jitted) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]


# -- np.flip: a view with negative strides ---------------------------------------------------
def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def reversed_prefix(r):
    y = np.zeros_like(r)
    for k in range(1, r.shape[0]):
        y[:k] += 0.5 * r[:k][::-1]
    return y


def test_flip_in_a_loop_body_compiles() -> None:
    _compiled(assert_calls_match_numpy(durbin, [(0.5 ** np.arange(1.0, 9.0),),
                                                (0.5 ** np.arange(1.0, 40.0),), (np.ones(1),)],
                                       rtol=1e-12))
    _compiled(assert_calls_match_numpy(reversed_prefix, [(np.arange(6.0),), (np.arange(1.0),),
                                                         (np.arange(30.0),)]))


@pytest.mark.parametrize("fn", [
    lambda a: np.flip(a), lambda a: np.flip(a, 1) + 1, lambda a: np.flip(a, (0, 1)),
    lambda a: np.flip(a, -1), lambda a: np.fliplr(a) * 2, lambda a: np.flipud(a) * 2,
    lambda a: np.flip(a, 2), lambda a: np.fliplr(a[0]), lambda a: np.flip(a[0, 0]),
    lambda a: np.flip(a, (0, 0)),
], ids=["all", "axis1", "both", "negative", "lr", "ud", "axis_error", "lr_1d", "scalar",
        "repeated"])
def test_flip_is_numpys_view(fn) -> None:
    assert_matches_numpy(fn, np.arange(6.0).reshape(2, 3), compiled=False)


# -- a carried array computed in the function, updated in place by the loop -----------------
def mandelbrot(cr, ci, maxiter):
    zr = np.zeros_like(cr)       # three equal zeros: one value until written
    zi = np.zeros_like(ci)
    count = np.zeros_like(cr)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (np.where(inside, zr * zr - zi * zi + cr, zr),
                  np.where(inside, 2.0 * zr * zi + ci, zi))
        count += inside
    return count


def accumulate_with_alias(x, steps):
    total = x * 0.0
    alias = total                # the same array: it sees the loop's updates
    for i in range(steps):
        total += x[i % x.shape[0]]
        total *= 0.5
    return total, alias


def accumulate_out(x, steps):
    acc = np.ones_like(x)
    for _ in range(steps):
        acc = np.multiply(acc, 1.5, out=acc)
        acc -= x
    return acc


def accumulate_while(x):
    acc = np.zeros_like(x)
    while np.max(acc) < 3.0:
        acc += np.abs(x) + 0.25
    return acc


def rebound_after_update(x, steps):
    acc = x + 1.0
    for _ in range(steps):
        acc += 1.0
        acc = acc * 0.5          # a new array after the in-place update
    return acc


def viewed_before_loop(x, steps):
    acc = x + 1.0
    head = acc[:2]               # a view: it must see the loop's writes
    for _ in range(steps):
        acc += x
    return head


def test_carried_scratch_array_updated_in_place_compiles() -> None:
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, 9), np.linspace(-1.2, 1.2, 7))
    grid = (np.ascontiguousarray(cr), np.ascontiguousarray(ci))
    small = tuple(np.ascontiguousarray(g[:3, :4]) for g in grid)
    _compiled(assert_calls_match_numpy(mandelbrot, [(*grid, 12), (*small, 0), (*small, 1),
                                                    (*grid, 3)]))
    x = np.linspace(-1.0, 1.0, 5)
    _compiled(assert_calls_match_numpy(accumulate_with_alias, [(x, 4), (x, 0), (x[:2], 9)]))
    _compiled(assert_calls_match_numpy(accumulate_out, [(x, 3), (x, 0), (x[:1], 1)]))
    _compiled(assert_calls_match_numpy(accumulate_while, [(x,), (np.full(3, 5.0),)]))


def test_updates_a_copy_cannot_model_stay_exact() -> None:
    x = np.linspace(-1.0, 1.0, 5)
    assert_calls_match_numpy(rebound_after_update, [(x, 3), (x, 0), (x, 1)])
    assert_calls_match_numpy(viewed_before_loop, [(x, 3), (x, 0)])


# -- an if on array data whose branches write into arrays ------------------------------------
def running_top(x):
    out = np.empty_like(x)
    top = x[0]
    for i in range(x.shape[0]):
        if x[i] > top:
            top = x[i]
        out[i] = top
    return out


def clip_in_place(x, limit):
    for i in range(x.shape[0]):
        if x[i] > limit:
            x[i] = limit          # a write into the argument in one branch
    return x


def write_both_branches(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            out[i] = x[i] * 2.0
        else:
            out[i] = -1.0
            out[0] += 1.0         # a second write in the same branch
    return out


def nested_writes(x, y):
    hist = np.zeros(3)
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            if y[i] > 0.0:
                hist[0] += 1.0
            else:
                hist[1] += x[i]
                y[i] = 0.0
        elif x[i] < -0.5:
            hist[2] -= 1.0
    return hist, y


def branch_then_read(a):
    s = np.sum(a)
    if s > 1.0:
        a[0] = 100.0
        t = a * 2.0               # reads the branch's own write
    else:
        t = a - 1.0               # reads the values before the if
    return t, a


def masked_and_out(x, threshold):
    w = x.copy()
    total = np.zeros(())          # a 0-d array: updated in place, not rebound
    if np.max(x) > threshold:
        w[w > threshold] = threshold
        np.multiply(w, 2.0, out=w)
        total += 1.0
    else:
        w -= 1.0
    return w, total


def local_updated_in_branch(x):
    y = x + 1.0                   # no view: += rebinds it to the new values
    if x[0] > 0.0:
        y += 5.0
    return y


def test_branches_on_array_data_that_write_compile() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.0, 1.0, 9)
    _compiled(assert_calls_match_numpy(running_top, [(x,), (x[:1],), (np.sort(x),),
                                                     (np.sort(x)[::-1].copy(),)]))
    _compiled(assert_calls_match_numpy(clip_in_place, [(x, 0.25), (x, 5.0), (x[:0], 0.0)]))
    _compiled(assert_calls_match_numpy(write_both_branches, [(x,), (np.abs(x),), (-np.abs(x),),
                                                            (x[:0],)]))
    y = rng.uniform(-1.0, 1.0, 9)
    _compiled(assert_calls_match_numpy(nested_writes, [(x, y), (np.abs(x), y), (-x, -y),
                                                      (x[:0], y[:0])]))
    _compiled(assert_calls_match_numpy(branch_then_read, [(np.ones(3),), (np.zeros(3),)]))
    _compiled(assert_calls_match_numpy(masked_and_out, [(x, 0.5), (x, 2.0)]))
    _compiled(assert_calls_match_numpy(local_updated_in_branch, [(x,), (-x,)]))


def test_a_branch_write_keeps_nan_and_zero_signs_where_not_taken() -> None:
    x = np.array([np.nan, -0.0, 1.0, -2.0, np.inf])
    _compiled(assert_calls_match_numpy(clip_in_place, [(x, 0.5), (x, -1.0)]))
    _compiled(assert_calls_match_numpy(write_both_branches, [(x,)]))


# -- and/or/not in conditions, builtin max/min on traced scalars -----------------------------
def band_sum(x, low, high):
    s = x[0] * 0.0
    for i in range(x.shape[0]):
        if x[i] > low and not x[i] > high or x[i] < -high:
            s = s + x[i]
    return s + x


def while_and(x, tol):
    y = x * 1.0
    err = np.max(np.abs(y))
    while err > tol and np.min(y) > -100.0:
        y = 0.5 * y
        err = np.max(np.abs(y))
    return y


def short_circuit_on_python_value(x, n):
    out = x * 1.0
    for i in range(x.shape[0]):
        if n > 0 and x[n - 1] > 0.0:     # x[n - 1] only evaluated where n > 0
            out[i] = 1.0
        if n < 0 or x[i] < 0.0:
            out[i] = -out[i]
    return out


def running_max(x):
    out = np.empty_like(x)
    top = x[0]
    for i in range(x.shape[0]):
        top = max(top, x[i])
        out[i] = top
    return out


def running_min3(x, y):
    out = np.empty_like(x)
    low = x[0]
    for i in range(x.shape[0]):
        low = min(low, x[i], y[i])
        out[i] = low
    return out


def max_of_mixed_types(x):
    top = 0.0                    # a Python float, then maybe a NumPy float: Python decides
    for i in range(x.shape[0]):
        top = max(top, x[i])
    return x * top


def max_shadowed(x):
    max = np.maximum             # noqa: A001 (the user's own max)
    top = x[0]
    for i in range(x.shape[0]):
        top = max(top, x[i])
    return x + top


def test_and_or_not_on_traced_values_compile() -> None:
    x = np.linspace(-1.0, 1.0, 11)
    _compiled(assert_calls_match_numpy(band_sum, [(x, 0.2, 0.9), (x[:3], 0.2, 0.5),
                                                  (np.array([np.nan, 0.5]), 0.0, 1.0)]))
    _compiled(assert_calls_match_numpy(while_and, [(x, 1e-3), (x, 10.0), (np.zeros(3), 0.0)]))
    assert_calls_match_numpy(short_circuit_on_python_value, [(x, 3), (x, 0), (x, -2),
                                                             (x[:2], 5)])


def test_builtin_max_min_of_traced_scalars_compile() -> None:
    x = np.array([0.5, np.nan, -1.0, 3.0, -0.0, 0.0, 2.0])
    _compiled(assert_calls_match_numpy(running_max, [(x,), (x[1:],), (np.arange(4.0),)]))
    y = np.array([1.0, -2.0, np.nan, 0.0, -0.0, 5.0, -7.0])
    _compiled(assert_calls_match_numpy(running_min3, [(x, y), (y, x)]))
    assert_calls_match_numpy(max_of_mixed_types, [(x,), (-np.abs(x),)])
    assert_calls_match_numpy(max_shadowed, [(x,)])


# -- generated variants: branches taken or not, zero iterations, writes in one branch or both,
# nested; conditions with and/or/not/max ----------------------------------------------------
_CONDITIONS = ("v > c", "v > c and y[i] < 0.5", "not v > c", "v < c or y[i] > 0.5",
               "np.sum(y) > c", "max(v, y[i]) > c", "min(v, acc) < c")
_STATEMENTS = ("out[i] = v * 2.0", "y[i] = -v", "acc = acc + v", "acc += 1.0",
               "out[:i] += v", "out += 0.5", "y[y > 0.75] = 0.0", "out[i] = acc",
               "np.multiply(out, 0.5, out=out)", "top = max(top, v)")


def _variant(rng: np.random.Generator, acc: str = "x[0] * 0.0") -> str:
    def block(depth: int, indent: str) -> list[str]:
        lines = [indent + str(rng.choice(_STATEMENTS)) for _ in range(rng.integers(1, 3))]
        if depth < 2 and rng.random() < 0.3:
            lines += branch(depth + 1, indent)
        return lines

    def branch(depth: int, indent: str) -> list[str]:
        lines = [f"{indent}if {rng.choice(_CONDITIONS)}:", *block(depth, indent + "    ")]
        if rng.random() < 0.4:
            lines += [f"{indent}elif {rng.choice(_CONDITIONS)}:", *block(depth, indent + "    ")]
        if rng.random() < 0.6:
            lines += [f"{indent}else:", *block(depth, indent + "    ")]
        return lines

    body = branch(0, "        ")
    return "\n".join(["def f(x, y, n, c):", "    out = np.zeros_like(x)", f"    acc = {acc}",
                      "    top = x[0]", "    for i in range(n):", "        v = x[i]", *body,
                      "    return out, y, acc, top", ""])


@pytest.mark.parametrize("seed", range(40))
def test_generated_branch_variants_compile(seed: int) -> None:
    from tests.fuzz.runner import compile_function
    rng = np.random.default_rng(seed)
    source = _variant(rng)
    fn = compile_function(source, tag=f"regions-wave3-{seed}")
    x = rng.uniform(-1.0, 1.0, 7)
    y = rng.uniform(-1.0, 1.0, 7)
    calls = [(x, y, 7, 0.0), (x, y, 0, 0.0), (x, y, 1, 0.0), (x, y, 7, -2.0), (x, y, 7, 2.0),
             (x[:3], y[:3], 3, 0.25)]
    jitted = assert_calls_match_numpy(fn, calls)
    assert jitted.stats()["routes"]["python"] == 0, (source, jitted.stats()["fallbacks"])


@pytest.mark.parametrize("seed", range(100, 112))
def test_generated_variants_with_a_python_float_stay_exact(seed: int) -> None:
    """``acc = 0.0``: a branch may leave a Python float or a NumPy one (the type depends on
    the values): what cannot compile runs as Python, never a wrong type."""
    from tests.fuzz.runner import compile_function
    rng = np.random.default_rng(seed)
    fn = compile_function(_variant(rng, "0.0"), tag=f"regions-wave3-{seed}")
    x, y = rng.uniform(-1.0, 1.0, 7), rng.uniform(-1.0, 1.0, 7)
    assert_calls_match_numpy(fn, [(x, y, 7, 0.0), (x, y, 0, 0.0), (x, y, 7, 2.0)])


def test_wave3_regions_run_on_the_emulated_cuda_target() -> None:
    """The copied carried array, the predicated writes and the minmax selects run through
    the GPU's host loop too (the emulated CUDA target checks them against NumPy)."""
    from autojit.testing import assert_backends_agree
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, 5), np.linspace(-1.2, 1.2, 4))
    x = np.array([0.5, np.nan, -1.0, 3.0, -0.0, 0.0, 2.0])
    y = np.linspace(-1.0, 1.0, 7)
    for fn, args in ((mandelbrot, (np.ascontiguousarray(cr), np.ascontiguousarray(ci), 6)),
                     (running_max, (x,)), (nested_writes, (y, y[::-1].copy())),
                     (band_sum, (y, 0.2, 0.9)), (durbin, (0.5 ** np.arange(1.0, 9.0),)),
                     (monte_carlo_pi, (y, y[::-1].copy())), (converge, (y.copy(), 1e-2))):
        report = assert_backends_agree(fn, *args, backends=["python", "cuda-emulated"])
        assert report.ok, (fn.__name__, report)


# -- Python numbers computed from array data (tracer/pyscalars.py) ---------------------------
def monte_carlo_pi(u, v):
    hits = 0.0
    for i in range(u.shape[0]):
        if u[i] * u[i] + v[i] * v[i] <= 1.0:
            hits += 1.0
    return 4.0 * hits / u.shape[0]


def converge(u, tol):
    diff = tol + 1.0
    sweeps = 0
    while diff > tol and sweeps < 100_000:
        new = u.copy()
        new[1:-1] = 0.5 * (u[:-2] + u[2:])
        diff = np.max(np.abs(new - u))
        u = new
        sweeps += 1
    return u, sweeps


def halvings(x):
    count = 0
    while np.max(np.abs(x)) > 1.0:
        x = x * 0.5
        count += 1
    return x, count


def python_float_branches(x, scale):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            acc += 0.5
        elif x[i] < -0.5:
            acc -= 0.25 * 3
        else:
            acc = acc * 2.0 - 1.0
    return x * acc, acc, -acc, abs(acc), acc / scale


def weak_in_numpy(x32):
    acc = 0.0
    for i in range(x32.shape[0]):
        if x32[i] > 0:
            acc += 1.5
    return x32 * acc, np.sqrt(acc + 1.0)


def best_of(x):
    best = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:   # noqa: SIM108 (an if statement: the converter's)
            best = max(best, 2.5)
        else:
            best = min(best, -1.0)
    return best


@pytest.mark.parametrize("fn, make", [
    ("counter_times_two", lambda: (lambda x: _counted(x, lambda k: k * 2))),
    ("float_divided_by_data", lambda: (lambda x: _summed(x, lambda a, v: a / v))),
    ("float_power", lambda: (lambda x: _summed(x, lambda a, v: a ** 2))),
    ("comparison_returned", lambda: (lambda x: _summed(x, lambda a, v: a) > 1.0)),
    ("comparison_in_arithmetic", lambda: (lambda x: x + (_summed(x, lambda a, v: a) > 1.0))),
    ("floor_division", lambda: (lambda x: _summed(x, lambda a, v: a // 2.0))),
])
def test_python_arithmetic_numpy_would_answer_otherwise_stays_python(fn, make) -> None:
    x = np.linspace(-1.0, 1.0, 5)
    assert_calls_match_numpy(make(), [(x,), (x[:0],), (-x,)])


def _counted(x, step):
    k = 0
    while np.max(x) > 0.25:
        x = x - 0.5
        k = step(k)
    return x, k


def _summed(x, step):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            acc += 1.0
        acc = step(acc, x[i])
    return acc


def test_python_numbers_from_array_data_compile() -> None:
    rng = np.random.default_rng(11)
    u, v = rng.uniform(-1.0, 1.0, 40), rng.uniform(-1.0, 1.0, 40)
    _compiled(assert_calls_match_numpy(monte_carlo_pi, [(u, v), (u[:3], v[:3]), (u[:1], v[:1])]))
    assert_calls_match_numpy(monte_carlo_pi, [(u[:0], v[:0])])   # ZeroDivisionError
    _compiled(assert_calls_match_numpy(converge, [(rng.uniform(-1, 1, 9), 1e-3),
                                                  (rng.uniform(-1, 1, 5), 10.0),
                                                  (np.zeros(4), 0.0)]))
    _compiled(assert_calls_match_numpy(halvings, [(rng.uniform(-9, 9, 6),), (np.zeros(3),)]))
    x = rng.uniform(-1.0, 1.0, 9)
    _compiled(assert_calls_match_numpy(python_float_branches, [(x, 2.0), (x[:0], 4.0),
                                                               (-x, 0.5)]))
    assert_calls_match_numpy(python_float_branches, [(x, 0.0)])   # ZeroDivisionError
    x32 = x.astype(np.float32)
    _compiled(assert_calls_match_numpy(weak_in_numpy, [(x32,), (-x32,)]))
    _compiled(assert_calls_match_numpy(best_of, [(x,), (np.abs(x),), (x[:0],)]))


def counted_flag(x):
    k = 0
    while np.max(x) > 0.25 and k < 50:
        x = x - 0.5
        k += 1
    done = k < 3                 # a Python bool: returned through Python
    return x, done


def flag_in_branch(x):
    k = 0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            k += 1
    big = False
    if x[0] > 0.5:
        big = k > 2              # a Python bool or a constant: Python decides
    return x, big


def test_python_bools_from_array_data_stay_python_bools() -> None:
    x = np.linspace(-1.0, 1.0, 5)
    assert_calls_match_numpy(counted_flag, [(x,), (x + 5.0,), (x[:0],)])
    assert_calls_match_numpy(flag_in_branch, [(x,), (-x,), (x[::-1].copy(),)])


def prefix_into_scratch(x):
    out = np.empty_like(x)
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:   # noqa: SIM108 (an if statement: the converter's)
            total = total + x[i]
        else:
            total = total - 1.0
        out[i] = total
    return out


def test_scalar_branches_and_scratch_writes_run_as_one_native_loop() -> None:
    """A select of scalars is scalar work, and a scratch array the loop writes (its copy,
    ``Region.private``) is one of the native loop's buffers: one kernel, no host loop."""
    x = np.array([0.5, np.nan, -1.0, 3.0, -0.0, 0.0, 2.0])
    u, v = np.linspace(-1.0, 1.0, 9), np.linspace(1.0, -0.5, 9)
    for fn, calls in ((running_max, [(x,), (x[:1],), (x[::-1].copy(),)]),
                      (monte_carlo_pi, [(u, v), (u[:1], v[:1])]),
                      (prefix_into_scratch, [(x,), (x[:1],), (-x,)])):
        jitted = assert_calls_match_numpy(fn, calls)
        _compiled(jitted)
        kernels = [k.name for k in jitted.inspect(*calls[0]).kernels]
        assert any(name.endswith("_loop") for name in kernels), (fn.__name__, kernels)


# -- conditional expressions on traced values -------------------------------------------------
def ternary_prefix(x):
    out = np.empty_like(x)
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        total = total + x[i] if x[i] > 0.0 else total - 1.0
        out[i] = total
    return out, (x * 2.0 if total > 0.0 else x - 1.0)


def nested_ternary(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + 1.5 if x[i] > 0 else (acc - 1.0 if x[i] < -0.5 else acc)
    return acc


def ternary_on_python_value(x, n):
    return x * 2.0 if n > 2 else x[: n + 1] + 1.0     # only the side Python takes


def ternary_side_writes(x, y):
    for i in range(x.shape[0]):
        _ = np.add(y, 1.0, out=y) if x[i] > 0 else y   # a write in one side: Python's
    return y


def test_conditional_expressions_on_traced_values_compile() -> None:
    x = np.array([0.5, np.nan, -1.0, 3.0, -0.0, 0.0, 2.0])
    _compiled(assert_calls_match_numpy(ternary_prefix, [(x,), (x[:1],), (-x,)]))
    _compiled(assert_calls_match_numpy(nested_ternary, [(x,), (x[:0],), (-x,)]))
    assert_calls_match_numpy(ternary_on_python_value, [(x, 3), (x, 0), (x, 1)])
    assert_calls_match_numpy(ternary_side_writes, [(x, np.zeros(2)), (-x, np.zeros(2))])


def sum_of_index_halves(x, n):
    acc = 0.0
    for i in range(n - 1, -1, -1):
        acc += i // 2            # a Python float plus a Python int of the body (the index)
    return x * acc, acc


def relaxed_towards(x, c):
    s = 0.0
    for _ in range(x.shape[0]):
        s = s * 0.5 + c          # a Python scalar of the call: float or int
    return s


def int_sum_of_index(x, n):
    acc = 0
    for i in range(n):
        acc += i                 # Python int arithmetic beyond a counter: Python's
    return x + acc, acc


def test_python_numbers_from_the_loop_index_compile() -> None:
    x = np.ones(3)
    _compiled(assert_calls_match_numpy(sum_of_index_halves, [(x, 5), (x, 0), (x, 1)]))
    _compiled(assert_calls_match_numpy(relaxed_towards, [(np.ones(4), 0.25), (np.ones(0), 1.0),
                                                         (np.ones(2), 3)]))
    assert_calls_match_numpy(int_sum_of_index, [(x, 5), (x, 0)])
