"""Differential fuzzing of ``@autoroute`` against plain NumPy, for long runs.

    python -m tests.fuzz.run_fuzz --seed 1 --count 500          # from the repo root
    python -m tests.fuzz.run_fuzz --seed 7 --minutes 20 --jobs 2 --out /tmp/fz

Prints programs, calls, failures, the fallback rate and its top reasons, and the distinct
failure signatures; writes each (shrunk) repro to ``--out`` (runnable: ``python FILE``).
``--show SEED`` prints one program's repro without running anything.
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import sys
import time
from pathlib import Path

from tests.fuzz.pool import Pool, summary, write_repro


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", default="0", help="run seed; program i is SEED:i")
    parser.add_argument("--count", type=int, default=None, help="number of programs")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds one program's calls may take (then: a failure)")
    parser.add_argument("--shrink-seconds", type=float, default=60.0,
                        help="time to shrink each failure (0: do not shrink)")
    parser.add_argument("--max-shrinks", type=int, default=None,
                        help="shrink at most this many failures (the rest as found)")
    parser.add_argument("--warnings", action="store_true",
                        help="also compare the warning categories of every call")
    parser.add_argument("--out", default=None, help="folder for the repros")
    parser.add_argument("--json", default=None, help="write every failure record here")
    parser.add_argument("--show", default=None, help="print the repro of one seed and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        from tests.fuzz.gen import generate
        print(generate(args.show).repro(f"seed {args.show}"))
        return 0
    count = args.count if args.count is not None or args.minutes else 100
    seeds = (f"{args.seed}:{i}" for i in (range(count) if count is not None
                                          else itertools.count()))
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None

    out = Path(args.out) if args.out else Path(f"/tmp/autojit-fuzz-{args.seed}")
    log = out / "failures.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    log.write_text("")

    def progress(record: dict) -> None:
        """Each failure as it comes: printed, its repro written, a line in failures.jsonl
        (so a run that is killed keeps what it found)."""
        path = write_repro(record, out)
        with log.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"FAIL {record['failure']['text'][:200]}\n     -> {path}", flush=True)

    signal.signal(signal.SIGTERM, _interrupt)
    pool = Pool(args.jobs, args.timeout, args.shrink_seconds, args.warnings,
                max_shrinks=args.max_shrinks)
    results = pool.run(seeds, deadline, progress)
    print(summary(results))
    if results.failures:
        print(f"{len(results.failures)} repros in {out} (records: {log})")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "programs": results.programs, "calls": results.calls,
            "numpy_raised": results.numpy_raised, "fallback_calls": results.fallback_calls,
            "compiled_programs": results.compiled_programs,
            "reasons": results.reasons.most_common(), "records": results.records,
            "harness_errors": results.harness_errors, "seconds": results.seconds}, indent=1))
    return 1 if results.failures or results.harness_errors else 0


if __name__ == "__main__":
    sys.exit(main())
