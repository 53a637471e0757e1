"""Issue 15, wave 3 (regions): ``np.flip`` in loop bodies, in-place updates of arrays
computed inside the function and carried through a loop, branches on array data that
write into arrays, ``and``/``or`` in conditions. Every case goes through the oracle and
must compile (no call runs as Python)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy, assert_matches_numpy


def _compiled(jitted) -> None:
    stats = jitted.stats()
    assert stats["routes"]["python"] == 0, stats["fallbacks"]


# -- np.flip: a view with negative strides ---------------------------------------------------
def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def reversed_prefix(r):
    y = np.zeros_like(r)
    for k in range(1, r.shape[0]):
        y[:k] += 0.5 * r[:k][::-1]
    return y


def test_flip_in_a_loop_body_compiles() -> None:
    _compiled(assert_calls_match_numpy(durbin, [(0.5 ** np.arange(1.0, 9.0),),
                                                (0.5 ** np.arange(1.0, 40.0),), (np.ones(1),)],
                                       rtol=1e-12))
    _compiled(assert_calls_match_numpy(reversed_prefix, [(np.arange(6.0),), (np.arange(1.0),),
                                                         (np.arange(30.0),)]))


@pytest.mark.parametrize("fn", [
    lambda a: np.flip(a), lambda a: np.flip(a, 1) + 1, lambda a: np.flip(a, (0, 1)),
    lambda a: np.flip(a, -1), lambda a: np.fliplr(a) * 2, lambda a: np.flipud(a) * 2,
    lambda a: np.flip(a, 2), lambda a: np.fliplr(a[0]), lambda a: np.flip(a[0, 0]),
    lambda a: np.flip(a, (0, 0)),
], ids=["all", "axis1", "both", "negative", "lr", "ud", "axis_error", "lr_1d", "scalar",
        "repeated"])
def test_flip_is_numpys_view(fn) -> None:
    assert_matches_numpy(fn, np.arange(6.0).reshape(2, 3), compiled=False)
