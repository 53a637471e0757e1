"""Differential fuzzing of ``@autoroute`` against plain NumPy.

``gen`` writes random programs as source text (knowing NumPy, not autojit), ``runner`` calls
each several times through NumPy and autojit and compares (``compare``), ``shrink`` reduces a
failure to a small repro, ``pool`` runs many in worker processes, ``run_fuzz.py`` is the
command line, ``test_fuzz_ci.py`` the fixed-seed budget, ``found.py`` the classes found.
"""
