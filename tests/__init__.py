"""autojit's test suite, a package: shared helpers import as ``tests.support.<module>``; the
tiers are ``unit`` (no compiler), ``cpu`` (LLVM end to end), ``inspect``, ``cuda_compile``
(NVRTC and the CUDA emulation, no GPU), ``gpu`` (a device), ``faults`` and ``fuzz``."""
