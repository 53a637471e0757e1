"""Generated CUDA C: NVRTC compiles it and its CPU emulation matches NumPy (no GPU)."""
