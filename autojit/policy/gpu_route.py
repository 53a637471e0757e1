"""Running a plan on the GPU: move NumPy inputs over, keep CuPy inputs where they are."""

from __future__ import annotations

from typing import Any

import numpy as np

from autojit.policy.signature import is_cupy_array


def _to_host(value: Any) -> Any:
    if is_cupy_array(value):
        host = value.get()
        return host[()] if host.ndim == 0 else host
    return value


def run_on_gpu(dispatcher: Any, entry: Any, args: tuple, sizes: dict[str, int],
               to_host: bool | None = None) -> Any:
    """Run ``entry``'s plan through CuPy; return its results, copied to the host when
    ``to_host`` (None: when the inputs came from the host). Inputs are copied to the device,
    so a failure part-way never changes a host argument."""
    import cupy

    from autojit.policy.backends import run_plan
    from autojit.policy.dispatcher import BACKENDS

    from_host = not any(is_cupy_array(a) for a in args) if to_host is None else to_host
    device_args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    programs = dispatcher.programs(entry, "gpu")
    result = run_plan(entry.plan, programs, BACKENDS["gpu"], device_args, sizes)
    cupy.cuda.get_current_stream().synchronize()
    if not from_host:
        return result
    if isinstance(result, tuple):
        return tuple(_to_host(r) for r in result)
    return _to_host(result)
