"""Per-image mean/std normalisation of a (B, H, W) stack, then the mean squared change.

Run:     python examples/normalise_stack.py [B] [H] [W]     (default 8 x 512 x 512)
Inspect: autojit inspect examples/normalise_stack.py:normalise_stack \\
             --args "f32[B,H,W], B=8, H=512, W=512" -m -m
"""

import sys

import numpy as np

from autojit import autoroute


@autoroute
def normalise_stack(x):
    m = x.mean(axis=(1, 2), keepdims=True)
    s = x.std(axis=(1, 2), keepdims=True)
    y = np.maximum((x - m) / s * 1.0123 - 0.02, 0) ** 1.8
    return y, np.mean((y - x) ** 2)


def main(shape: tuple[int, int, int]) -> None:
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    y, err = normalise_stack(x)
    want_y, want_err = normalise_stack.__wrapped__(x)
    same = np.allclose(y, want_y, rtol=1e-4, atol=1e-5) and np.isclose(err, want_err, rtol=1e-4)
    print("matches NumPy:", "yes" if same else "no", f"(mean squared change {err:.6f})")
    ins = normalise_stack.inspect(x)
    ins.measure_numpy(normalise_stack, x)
    print(ins.report(verbosity=1))


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:4]]
    main(tuple(sizes + [8, 512, 512][len(sizes):]))  # type: ignore[arg-type]
