"""Side-by-side timings of the coverage workloads: NumPy vs autojit in one process.

Run:  python benchmarks/coverage.py [--repeat N] [--scale S] [--only NAME]

The workloads are ``benchmarks/workloads.py``'s (those ``compare.py`` also times against
the other peers). Each row: median of 5 warm calls (the 100-element add: of 2000-call
batches), the first (compiling) call, and how many kernels and library steps autojit's plan
has. Results are checked against NumPy before timing. Quote ratios from one run: this
machine is noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time

import compare  # this folder's compare.py (it takes the folder off sys.path once loaded)


def main(argv: list[str] | None = None) -> int:
    """Print one line per workload; return 1 if autojit disagreed with NumPy anywhere."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per median")
    parser.add_argument("--scale", type=float, default=1.0, help="input size multiplier")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    opts = parser.parse_args(argv)
    names = {n for n in opts.only.split(",") if n}

    if opts.scale != 1.0:
        print(f"input sizes scaled by {opts.scale:g} (the labels give full sizes)")
    print(f"{'workload':48s} {'NumPy':>10s} {'autojit':>10s} {'ratio':>7s} {'first call':>11s}"
          "  steps")
    failed = False
    for work in compare.WORKLOADS:
        if names and work.name not in names:
            continue
        args = work.make_inputs(opts.scale)
        want = work.reference(*args)
        jitted = compare.BUILDERS["autojit"](work).call
        start = time.perf_counter()
        result = jitted(*args)
        first = time.perf_counter() - start
        problem = compare.check(work, result, want)
        if problem:
            print(f"{work.label:48s} FAILED: {problem}")
            failed = True
            continue
        times = [statistics.median(compare.time_samples(compare.Impl(fn), args, opts.repeat,
                                                         work.batch))
                 for fn in (work.reference, jitted)]
        scale = 1e6 if work.unit == "µs" else 1e3
        plan = jitted.inspect(*args).plan
        print(f"{work.label + f' ({work.unit})':48s} {times[0] * scale:10.2f} "
              f"{times[1] * scale:10.2f} {times[0] / times[1]:6.2f}x {first * 1e3:9.1f}ms  "
              f"{len(plan.kernels)} kernel(s), {len(plan.libraries)} library")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
