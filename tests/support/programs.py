"""The coverage issue's array programs, written once for every test that runs them."""

import numpy as np


def chain(x):
    return np.tanh(np.cos(np.exp(np.sin(x))))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def image_norm(x):
    """Per-image standardisation of a (B, H, W) stack."""
    mean = x.mean(axis=(1, 2), keepdims=True)
    return (x - mean) / (x.std(axis=(1, 2), keepdims=True) + 1e-5)
