"""Cold start: the one-time start-up, and the first (compiling) call of the chain in a process
where autojit has already compiled another function, split into its stages.

Run:  .venv/bin/python benchmarks/cold_start.py [--runs 7]

Each run is a fresh process with the disk cache off (every kernel really compiles):
  start-up   = ``import autojit`` + the first call of an unrelated function (``x + 1.0``):
               imports, LLVM initialisation, libmvec loading, the router's device probe
               (NumPy's own import, which any NumPy program pays, is shown apart);
  chain      = the first call of ``tanh(cos(exp(sin x)))`` on 1,000 float64 (running it
               takes microseconds, so this is the compile path): trace, fuse, LLVM render
               + parse, O3 optimise, codegen + link, and the rest (signature, routing, run).
Prints the median of each over the runs (this machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
    import json, time
    begun = time.perf_counter()
    import numpy as np
    started = time.perf_counter()
    import autojit
    imported = time.perf_counter()
    from autojit.lower_cpu import jit
    from autojit.dispatch import dispatcher

    spent = {"trace": 0.0, "fuse": 0.0}
    def timed(name, fn):
        def wrapper(*args, **kwargs):
            begin = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - begin
        return wrapper
    dispatcher.trace_function = timed("trace", dispatcher.trace_function)
    dispatcher.plan_kernels = timed("fuse", dispatcher.plan_kernels)

    other = autojit.autoroute(lambda x: x + 1.0)
    other(np.ones(10))
    warmed = time.perf_counter()

    @autojit.autoroute
    def chain(x):
        return np.tanh(np.cos(np.exp(np.sin(x))))

    x = np.linspace(0.0, 1.0, 1000)
    spent = dict.fromkeys(spent, 0.0)
    compile_before = dict(jit.COMPILE_SECONDS)
    begin = time.perf_counter()
    y = chain(x)
    first = time.perf_counter() - begin
    assert np.allclose(y, np.tanh(np.cos(np.exp(np.sin(x)))), rtol=1e-12)
    llvm = {k: jit.COMPILE_SECONDS[k] - compile_before[k] for k in jit.COMPILE_PHASES}
    stages = {**spent, **llvm}
    stages["rest"] = first - sum(stages.values())
    print(json.dumps({"numpy_ms": 1e3 * (started - begun),
                      "import_ms": 1e3 * (imported - started),
                      "startup_ms": 1e3 * (warmed - started),
                      "first_call_ms": 1e3 * first,
                      "stages_ms": {k: 1e3 * v for k, v in stages.items()}}))
''')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    env = {**os.environ, "AUTOJIT_CACHE_MAX_MB": "0", "PYTHONDONTWRITEBYTECODE": "0"}
    runs = []
    for _ in range(options.runs):
        done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                              text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def median(values: list[float]) -> str:
        return f"{statistics.median(values):7.1f} ms"

    print(f"cold start, median of {options.runs} fresh processes (disk cache off)")
    print(f"  import numpy (not ours)   {median([r['numpy_ms'] for r in runs])}")
    print(f"  import autojit            {median([r['import_ms'] for r in runs])}")
    print(f"  one-time start-up         {median([r['startup_ms'] for r in runs])}"
          "   (import autojit + first call of another function: LLVM, libmvec, probes)")
    print(f"  first call of the chain   {median([r['first_call_ms'] for r in runs])}")
    for stage in runs[0]["stages_ms"]:
        print(f"    {stage:22s}  {median([r['stages_ms'][stage] for r in runs])}")


if __name__ == "__main__":
    main()
