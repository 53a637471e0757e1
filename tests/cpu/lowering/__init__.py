"""Lowering to LLVM: the CPU backend against the reference interpreter, loop nests, math
routines and their ULP bounds, reduction order, matrix products, compile budgets."""
