"""``choose_route``: CPU, GPU or plain Python for one call, with the reason.

v0 rules: a forced route wins; CuPy inputs run on the GPU; NumPy inputs run on the GPU only
when a device is really usable and the call is at least ``gpu_min_elems`` elements large.
"""

from __future__ import annotations

import ctypes.util
import functools
import logging
from collections.abc import Sequence
from typing import Any

from autojit.errors import DeviceUnavailableError
from autojit.policy.config import Settings
from autojit.policy.signature import is_cupy_array

_LOGGER = logging.getLogger("autojit")


@functools.cache
def gpu_usable() -> bool:
    """Return True when a CUDA device can run kernels; probed once per process.

    Without a CUDA driver library CuPy is not even imported (it would only fail later).
    """
    if ctypes.util.find_library("cuda") is None:
        _LOGGER.debug("no CUDA driver library: GPU route disabled")
        return False
    try:
        from autojit.lower_gpu import gpu_available
        return gpu_available()
    except Exception as exc:  # a broken CUDA install must not break CPU users
        _LOGGER.debug("GPU probe failed: %s", exc)
        return False


def call_elements(args: Sequence[Any]) -> int:
    """Return the largest argument's element count (the work size of an elementwise call)."""
    return max((getattr(a, "size", 1) for a in args), default=1)


def choose_route(settings: Settings, args: Sequence[Any]) -> tuple[str, str]:
    """Return (route, reason) for this call."""
    if settings.force:
        if settings.force == "gpu" and not gpu_usable():
            raise DeviceUnavailableError(
                "AUTOJIT_FORCE/force='gpu' but no usable CUDA device was found; "
                "use force='cpu' or unset it")
        return settings.force, f"forced {settings.force}"
    if any(is_cupy_array(a) for a in args):
        return "gpu", "CuPy arguments live on the GPU"
    elements = call_elements(args)
    if "gpu" not in settings.backends or elements < settings.gpu_min_elems:
        return "cpu", f"{elements} elements < AUTOJIT_GPU_MIN_ELEMS={settings.gpu_min_elems}"
    if not gpu_usable():
        return "cpu", "no usable GPU"
    return "gpu", f"{elements} elements >= AUTOJIT_GPU_MIN_ELEMS={settings.gpu_min_elems}"
