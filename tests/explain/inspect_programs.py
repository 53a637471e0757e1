"""The coverage programs the escape report is checked on (positions are pinned by goldens:
append new programs at the end)."""

import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def mean_sq_error(x, y):
    return np.mean((x - y) ** 2)


def dense_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


def normalise_stack(x):
    m = x.mean(axis=(1, 2), keepdims=True)
    s = x.std(axis=(1, 2), keepdims=True)
    y = np.maximum((x - m) / s * 1.0123 - 0.02, 0) ** 1.8
    return y, np.mean((y - x) ** 2)


def matmul_chain(x, w):
    a = np.exp(x @ w)
    b = (a @ w) * 2.0
    return (b @ w).sum()


def scale_into(out, x):
    out[...] = x * 2.0
    return out.sum()


def _rng():
    return np.random.default_rng(0)


#: name -> (function, example arguments, --args spec giving the same shapes)
PROGRAMS = {
    "softmax": (softmax, lambda: (_rng().random((64, 128), np.float32),), "f32[R,C], R=64, C=128"),
    "layer_norm": (layer_norm, lambda: (_rng().random((64, 256), np.float32),),
                   "f32[R,C], R=64, C=256"),
    "mean_sq_error": (mean_sq_error, lambda: (_rng().random(5000), _rng().random(5000)),
                      "f64[n], f64[n], n=5000"),
    "dense_relu": (dense_relu, lambda: (_rng().random((32, 16), np.float32),
                                        _rng().random((16, 24), np.float32),
                                        _rng().random(24, np.float32)),
                   "f32[N,K], f32[K,M], f32[M], N=32, K=16, M=24"),
    "normalise_stack": (normalise_stack, lambda: (_rng().random((4, 64, 64), np.float32),),
                        "f32[B,H,W], B=4, H=64, W=64"),
    "matmul_chain": (matmul_chain, lambda: (_rng().random((32, 32)), _rng().random((32, 32))),
                     "f64[n,n], f64[n,n], n=32"),
}


def mixed_chain(x, w, w32):
    a = np.exp(x @ w)
    b = (a @ w).astype(np.float32) + np.float32(1)
    return ((b @ w32) * 2).sum()


PROGRAMS["mixed_chain"] = (
    mixed_chain, lambda: (_rng().random((16, 16)), _rng().random((16, 16)),
                          _rng().random((16, 16), np.float32)),
    "f64[n,n], f64[n,n], f32[n,n], n=16")
