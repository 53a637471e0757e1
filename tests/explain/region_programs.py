"""The issue-15 programs (loops, scratch arrays, int arguments) whose inspect texts
``test_regions_report`` checks."""



from tests.support.loop_programs import (  # noqa: F401 (the issue's seven, verbatim)
    distances,
    heat,
    lower_solve,
    lu_inplace,
    relax,
    step,
    trace_tanh,
)


def shrink(x):   # the carried shape changes: the loop runs as Python (unrolled)
    for _ in range(3):
        x = x[1:] * 2.0
    return x


def drop(x, n):   # the same with a bound from an argument: the function runs as Python
    for _ in range(n):
        x = x[1:]
    return x
