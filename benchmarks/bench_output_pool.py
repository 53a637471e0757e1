"""What the output pool buys: warm calls whose result is at least 32 MiB (so it comes from
autojit/runtime/output_pool.py), each result dropped at once as a loop over calls would,
under several checkouts and pool settings side by side: one fresh process per
(variant, round), the variants interleaved round by round, medians over all samples.

Run:  PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_output_pool.py \\
          [--variant NAME=CHECKOUT[:POOL_MB]] ... [--rounds 5] [--calls 10]
e.g.  --variant old=/work/main --variant new=. --variant new-off=.:0
(default: this checkout with the pool on and off). Milliseconds per call; compare rows of
one run only, these machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

#: name: (builder source, input maker source); results of 64-80 MB each
WORKLOADS = {
    "add 10M f64": ("lambda x: x + 1.0", "(np.linspace(-3.0, 3.0, 10_000_000),)"),
    "chain 10M f64": ("workloads.chain", "(np.linspace(-3.0, 3.0, 10_000_000),)"),
    "layernorm (16384,1024) f32": ("workloads.layer_norm",
                                   "(np.ones((16384, 1024), np.float32),)"),
    "numpy add 10M f64": (None, "(np.linspace(-3.0, 3.0, 10_000_000),)"),
}

CHILD = r"""
import json, sys, time, gc
import numpy as np
sys.path.insert(0, "benchmarks")
import workloads
from autojit import autoroute
name, fn_src, args_src, calls = json.loads(sys.argv[1])
args = eval(args_src)
fn = autoroute(eval(fn_src), force="cpu") if fn_src else (lambda x: x + 1.0)
for _ in range(3):
    fn(*args)
samples = []
gc.disable()
for _ in range(calls):
    start = time.perf_counter()
    fn(*args)
    samples.append((time.perf_counter() - start) * 1e3)
print(json.dumps(samples))
"""


#: one compile cache per checkout, so versions never read each other's files
CACHES: dict[str, str] = {}


def sample(checkout: str, pool_mb: str | None, name: str, calls: int) -> list[float]:
    """Run one child in ``checkout`` and return its per-call milliseconds."""
    fn_src, args_src = WORKLOADS[name]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    env.pop("AUTOJIT_OUTPUT_POOL_MB", None)
    env["AUTOJIT_CACHE_DIR"] = CACHES.setdefault(checkout, tempfile.mkdtemp())
    if pool_mb is not None:
        env["AUTOJIT_OUTPUT_POOL_MB"] = pool_mb
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([name, fn_src, args_src,
                                                                   calls])],
                         cwd=checkout, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=CHECKOUT[:POOL_MB] (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--only", default="", help="words of workload names, comma-separated")
    opts = parser.parse_args()
    variants = {}
    for spec in opts.variant or ["pool=.", "no-pool=.:0"]:
        name, _, where = spec.partition("=")
        checkout, _, mb = where.partition(":")
        variants[name] = (checkout, mb or None)
    names = [n for n in WORKLOADS
             if not opts.only or any(word in n for word in opts.only.split(","))]
    samples: dict[tuple[str, str], list[float]] = {}
    for round_ in range(opts.rounds):
        for work in names:
            for variant, (checkout, mb) in variants.items():
                samples.setdefault((work, variant), []).extend(
                    sample(checkout, mb, work, opts.calls))
        print(f"round {round_ + 1}/{opts.rounds} done", file=sys.stderr)
    print(f"{'workload':28}" + "".join(f"{v:>12}" for v in variants))
    for work in names:
        print(f"{work:28}" + "".join(f"{statistics.median(samples[work, v]):12.2f}"
                                     for v in variants))


if __name__ == "__main__":
    main()
