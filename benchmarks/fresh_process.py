"""How long a fresh process takes to its first result when the disk cache is warm.

Run:  .venv/bin/python benchmarks/fresh_process.py [--runs 15] [--cpu-only]

One cold process fills a private cache; then each warm process imports autojit, decorates a
function and calls it once, timing from just after ``import autojit`` to the result (the
decoration, cache key, disk reads, object-code linking and the call itself). Bytecode
caching is switched on (``PYTHONPYCACHEPREFIX``) as in an installed package. Prints the
median and spread and each run's counters. ``--cpu-only`` sets ``AUTOJIT_BACKENDS=cpu``, which
leaves out the router's one-time GPU probe (not part of the cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent('''
    import json, sys, time
    started = time.perf_counter()
    import numpy as np
    import autojit
    imported = time.perf_counter()

    @autojit.autoroute
    def chain(x):
        return np.tanh(np.cos(np.exp(np.sin(x)))) * 2.0 + x

    x = np.linspace(0.0, 1.0, 10_000)
    before = time.perf_counter()
    y = chain(x)
    done = time.perf_counter()
    assert np.allclose(y, np.tanh(np.cos(np.exp(np.sin(x)))) * 2.0 + x)
    stats = chain.stats()
    print(json.dumps({"import_ms": 1e3 * (imported - started),
                      "first_result_ms": 1e3 * (done - imported),
                      "call_ms": 1e3 * (done - before),
                      "disk_hits": stats["disk_hits"], "compiles": stats["compiles"],
                      "llvm_imported": "llvmlite.binding" in sys.modules}))
''')


def _run(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    """Run the measurement; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cpu-only", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, AUTOJIT_CACHE_DIR=os.path.join(folder, "cache"),
                   PYTHONPYCACHEPREFIX=os.path.join(folder, "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if options.cpu_only:
            env["AUTOJIT_BACKENDS"] = "cpu"
        cold = _run(env)
        _run(env)                                   # writes the remaining bytecode caches
        warm = [_run(env) for _ in range(options.runs)]
    figures = sorted(r["first_result_ms"] for r in warm)
    sys.stdout.write(f"cold: {cold}\n")
    for row in warm:
        sys.stdout.write(f"warm: {row}\n")
    sys.stdout.write(f"warm first result after import: median {statistics.median(figures):.2f} ms, "
                     f"min {figures[0]:.2f}, max {figures[-1]:.2f} ({len(figures)} runs); "
                     f"import autojit median "
                     f"{statistics.median(r['import_ms'] for r in warm):.0f} ms\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
