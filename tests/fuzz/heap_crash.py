"""Replay the program sequence after which a fuzzing worker died of heap corruption (glibc:
``free(): invalid next size (fast)``, ``corrupted size vs. prev_size``, ``double free or
corruption``): the shrinker's candidates of seed ``2:13887`` (31 programs, most of them
``a1[-1::3, -9:5:3] = True`` on a (3, 11, 11) or empty float64 argument), in one process
over one disk cache. No single program of it aborts.

    MALLOC_CHECK_=3 AUTOJIT_CACHE_DIR=$(mktemp -d) python -m tests.fuzz.heap_crash   # repo root
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

SEQUENCE = Path(__file__).with_name("data") / "heap_crash_sequence.txt"


def main(rounds: int = 1) -> None:
    """Run each program's own repro (``check_repro``: NumPy, ``autoroute(f)``, ``force="cpu"``)
    in one process, in order, ``rounds`` times."""
    import runpy
    import tempfile
    warnings.simplefilter("ignore")
    sources = [s for s in SEQUENCE.read_text().split("=====\n") if s.strip()]
    folder = Path(tempfile.mkdtemp(prefix="autojit-heap-crash-"))
    for r in range(rounds):
        for i, source in enumerate(sources):
            print(f"round {r} program {i}", flush=True)
            path = folder / f"p{i:03d}.py"
            path.write_text(source)
            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_path(str(path), run_name="__main__")
    print("survived: no abort this time")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
