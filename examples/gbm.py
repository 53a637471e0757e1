"""Monte-Carlo geometric Brownian motion: many steps, one compiled kernel, reused.

Run:  python examples/gbm.py [N]          (N paths, default 2_000_000)
"""

import sys

import numpy as np

from autojit import autoroute, config


@autoroute
def gbm_step(S, Z, drift, scale):
    return S * np.exp(drift + scale * Z)


def simulate(S0, normals, drift, scale):
    S = S0
    for Z in normals:  # every step has the same signature: compiled once, then cache hits
        S = gbm_step(S, Z, drift, scale)
    return S


def main(n: int, steps: int = 20) -> None:
    rate, sigma, dt = 0.03, 0.2, 1.0 / 252.0
    drift, scale = (rate - 0.5 * sigma**2) * dt, sigma * dt**0.5
    rng = np.random.default_rng(0)
    S0 = np.full(n, 100.0)
    normals = rng.standard_normal((steps, n))

    got = simulate(S0, normals, drift, scale)
    with config(force="python"):  # the same code as plain NumPy, for comparison
        want = simulate(S0, normals, drift, scale)
    print("matches NumPy:", "yes" if np.allclose(got, want, rtol=1e-10) else "no")
    print(f"mean price after {steps} steps: {got.mean():.4f}")

    ins = gbm_step.inspect(S0, normals[0], drift, scale)
    print(f"route: {ins.route}, kernels: {len(ins.kernels)}")
    print(ins.kernels_text)
    print("stats:", gbm_step.stats())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
