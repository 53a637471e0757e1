#!/bin/bash
# Side by side on one machine, in the same minutes: compare.py and bench_call_overhead.py for
# two checkouts in alternating processes, ROUNDS times (each its own fresh disk cache).
#   BASE=/path/to/old/checkout NEW=/path/to/new/checkout [ROUNDS=3] [OUT=dir] benchmarks/ab_checkouts.sh
# An old checkout needs its own native build (python setup.py build_ext --inplace in it).
# Results: $OUT/compare_{base,new}_N.{txt,json} and $OUT/overhead_{base,new}_N.txt.
set -u
PYTHON=${PYTHON:-python}; ROUNDS=${ROUNDS:-3}; OUT=${OUT:-ab}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
for r in $(seq 1 "$ROUNDS"); do
  for side in base new; do
    if [ "$side" = base ]; then dir=$BASE; else dir=$NEW; fi
    (cd "$dir" && AUTOJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH="$dir" timeout 900 "$PYTHON" \
      benchmarks/compare.py --peers numpy,autojit --repeat 7 --quiet \
      --json "$OUT/compare_${side}_$r.json" > "$OUT/compare_${side}_$r.txt" 2>&1)
    (cd "$dir" && AUTOJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH="$dir" timeout 600 "$PYTHON" \
      benchmarks/bench_call_overhead.py > "$OUT/overhead_${side}_$r.txt" 2>&1)
  done
done
