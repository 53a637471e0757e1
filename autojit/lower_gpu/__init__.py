"""GPU lowering: Kernel -> CUDA C (``render_cuda``) -> cubin (``compile_cuda``, NVRTC) ->
launch (``launch``, CuPy). ``run_emulated`` runs the same CUDA C on the CPU with g++.

Nothing here imports ``cuda`` or ``cupy`` at import time.
"""

from autojit.lower_gpu.compile import CudaBinary, compile_cuda, nvrtc_version
from autojit.lower_gpu.cuda_rules import cuda_reduce_gaps, cuda_rule_gaps
from autojit.lower_gpu.device import device_arch, gpu_available, launch
from autojit.lower_gpu.emulate import run_emulated
from autojit.lower_gpu.render import render_cuda

__all__ = [
    "CudaBinary",
    "compile_cuda",
    "cuda_reduce_gaps",
    "cuda_rule_gaps",
    "device_arch",
    "gpu_available",
    "launch",
    "nvrtc_version",
    "render_cuda",
    "run_emulated",
]
