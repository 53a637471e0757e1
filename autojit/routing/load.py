"""Device load, sampled off the hot path: a daemon thread asks every device for its load
(NVML for the GPU, the OS for the CPU) at most every 100 ms and wakes breakers whose
cool-down has passed. A call never waits for a sample; it reads the latest one.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from autojit.runtime.devices import Load

_LOGGER = logging.getLogger("autojit")


class LoadSampler:
    """Calls ``router.tick()`` every ``interval`` seconds on a daemon thread until stopped."""

    def __init__(self, router: Any, interval: float = 0.1) -> None:
        self.router, self.interval = router, max(interval, 0.1)   # never more often
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="autojit-load", daemon=True)
        self.samples = 0

    def start(self) -> None:
        """Start sampling (returns at once)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and wait for the thread to finish its current sample."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.router.tick()
                self.samples += 1
            except Exception as exc:  # sampling is best effort; routing keeps the last one
                _LOGGER.debug("load sampler: %s", exc)


def load_changed(old: Load | None, new: Load) -> bool:
    """Return True when ``new`` moved enough from ``old`` to redo routing decisions:
    utilisation by 5 points, or free memory by 1/64 of the total."""
    if old is None:
        return True
    step = max(new.total_bytes // 64, 1)
    return (abs(new.utilisation - old.utilisation) >= 0.05
            or abs(new.free_bytes - old.free_bytes) >= step)
