"""NumPy semantics end to end through the oracle: promotion, scalars, casts, the op matrix,
reductions, scans, creation, derived sizes, fuzzer regressions."""
