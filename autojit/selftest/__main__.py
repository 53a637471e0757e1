"""``python -m autojit.selftest``: the command line of :mod:`autojit.selftest` (prints)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import autojit.selftest as selftest
from autojit.selftest import EXIT_NO_GPU, EXIT_USAGE, no_gpu_reason, run_selftest


def _print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'workload':<10} {'n':>10} {'route':<5} {'cpu ms':>9} {'gpu ms':>9}  reason")
    for r in rows:
        gpu = "-" if r["gpu_s"] is None else f"{r['gpu_s'] * 1e3:9.3f}"
        print(f"{r['workload']:<10} {r['n']:>10} {r['route']:<5} {r['cpu_s'] * 1e3:9.3f} "
              f"{gpu:>9}  {r['reason']}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selftest; return 0 on success, 1 on a failed check, 2 on bad usage, 3 when
    ``--gpu`` was asked for on a machine without a usable GPU."""
    parser = argparse.ArgumentParser(prog="python -m autojit.selftest",
                                     description=selftest.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="run the GPU checks")
    parser.add_argument("--simulated", action="store_true",
                        help="calibrate and sweep on the simulated devices instead")
    parser.add_argument("--out", default="autojit-selftest.json", help="JSON report path")
    parser.add_argument("--budget", type=float, default=280.0, help="seconds (default 280)")
    parser.add_argument("--skip-tests", action="store_true", help="do not run tests/gpu")
    args = parser.parse_args(argv)
    if not (args.gpu or args.simulated):
        parser.print_usage(sys.stderr)
        print("autojit selftest: choose --gpu (or --simulated)", file=sys.stderr)
        return EXIT_USAGE
    if args.gpu and not args.simulated:
        reason = no_gpu_reason()
        if reason is not None:
            _write(args.out, {"mode": "gpu", "gpu": False, "error": reason})
            print(f"autojit selftest: no usable GPU ({reason}); the GPU checks did not run. "
                  f"Run it on a machine with a CUDA device and driver, or use --simulated.",
                  file=sys.stderr)
            return EXIT_NO_GPU
    report, code = run_selftest(args)
    _write(args.out, report)
    _print_rows(report["sweep"])
    print(f"summary: {json.dumps(report['summary'])}\nreport: {os.path.abspath(args.out)}")
    return code


def _write(path: str, report: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    sys.exit(main())
