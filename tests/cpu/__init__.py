"""End-to-end tests through LLVM on the CPU, by concern."""
