"""Memory traffic of a kernel for one call: bytes read and written, pass by pass."""

from __future__ import annotations

import math
from dataclasses import dataclass

from autojit.ir.kernel import Kernel
from autojit.ir.ops import Op


@dataclass(frozen=True)
class Traffic:
    """Bytes a kernel moves for one call (row passes that reload a buffer count again)."""

    kernel: str
    read_bytes: int
    write_bytes: int
    passes: int

    def __str__(self) -> str:
        return (f"{self.kernel}: reads {self.read_bytes:,} B, writes {self.write_bytes:,} B, "
                f"{self.passes} pass(es) over each row")


def _elements(kernel: Kernel, buffer: int, extent: list[int]) -> int:
    """Distinct elements of a buffer the loop nest touches (broadcast dims count once)."""
    strides = kernel.buffers[buffer].strides
    return math.prod(n for n, s in zip(extent, strides, strict=True) if s != 0)


def kernel_traffic(kernel: Kernel, sizes: dict[str, int]) -> Traffic:
    """Return the bytes ``kernel`` reads and writes for the size values ``sizes``."""
    extent = [math.prod(sizes[s] for s in product) for product in kernel.loop_sizes]
    loads = {(ins.attr, ins.phase, ins.level) for ins in kernel.body if ins.op is Op.LOAD}
    stores = {ins.attr for ins in kernel.body if ins.op is Op.STORE}
    read = sum(_elements(kernel, b, extent) * kernel.buffers[b].dtype.itemsize
               for b, _, _ in loads)
    written = sum(_elements(kernel, b, extent) * kernel.buffers[b].dtype.itemsize
                  for b in stores)
    return Traffic(kernel.name, read, written, kernel.phases)
