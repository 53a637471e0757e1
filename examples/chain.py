"""Fuse a chain of four NumPy ufuncs into one compiled kernel.

Run:  python examples/chain.py [N]        (N elements, default 10_000_000)
"""

import sys

import numpy as np

from autojit import autoroute, config


@autoroute
def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def main(n: int) -> None:
    x = np.random.default_rng(0).uniform(-3.0, 3.0, n)
    got = chain(x)  # first call: trace, fuse, compile; later calls reuse the kernel
    with config(force="python"):  # the same function as plain NumPy, for comparison
        want = chain(x)
    print("matches NumPy:", "yes" if np.allclose(got, want, rtol=1e-10, atol=1e-12) else "no")

    ins = chain.inspect(x)
    print(f"route: {ins.route}, kernels: {len(ins.kernels)}")
    print(ins.kernels_text)
    print("stats:", chain.stats())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
