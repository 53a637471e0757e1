"""Normalise a stack of float32 images in one fused pass: subtract, scale, clip, gamma.

Run:  python examples/image_normalise.py [ROWS]   (4 frames of ROWS x 1920, default 1080)
"""

import sys

import numpy as np

from autojit import autoroute, config


@autoroute
def normalise(img, mean, inv_std):
    # mean and inv_std are Python floats: NumPy keeps the result float32 (NEP 50).
    return np.clip((img - mean) * inv_std * 1.0123 - 0.02, 0.0, None) ** 1.8


def main(rows: int) -> None:
    rng = np.random.default_rng(0)
    img = rng.random((4, rows, 1920), dtype=np.float32) * np.float32(255.0)
    mean, inv_std = float(img.mean()), float(1.0 / img.std())

    got = normalise(img, mean, inv_std)
    with config(force="python"):  # the same function as plain NumPy, for comparison
        want = normalise(img, mean, inv_std)
    same = got.dtype == want.dtype and np.allclose(got, want, rtol=1e-5, atol=1e-6)
    print("matches NumPy:", "yes" if same else "no", f"(dtype {got.dtype}, shape {got.shape})")

    ins = normalise.inspect(img, mean, inv_std)
    print(f"route: {ins.route}, kernels: {len(ins.kernels)}")
    print(ins.kernels_text)
    print("stats:", normalise.stats())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1080)
