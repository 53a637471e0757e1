"""A signature entry is kept by the array's layout (kind, dtype, shape, strides) for the warm
full call path; what it answers must be exactly the entry walked from scratch, and the one
part of an entry a layout does not fix, the alignment, is still read at every call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.oracle import assert_calls_match_numpy

from autojit import autoroute
from autojit.dispatch import signature


def _layouts() -> list[np.ndarray]:
    arrays = []
    for dtype in (np.float64, np.float32, np.int64, np.int8, np.uint16, np.bool_, "l", "q",
                  ">f8", np.complex128, np.float16):
        base = np.zeros((6, 5, 4), dtype)
        arrays += [base, base[::2], base[:, ::-1], base.T, base[1:, :, 2], base[..., :1],
                   base[0:0], base[0, 0, 0], np.broadcast_to(base[:1], (3, 5, 4)),
                   base.reshape(-1), base[:, 1:3, ::3], np.asfortranarray(base)]
    records = np.zeros(10, dtype=[("a", "f8"), ("b", "i4")])
    raw = np.zeros(10)
    return [*arrays, records["a"], records["b"],
            np.lib.stride_tricks.as_strided(raw, (3, 1), (16, 3)),
            np.lib.stride_tricks.as_strided(raw, (3, 2), (16, 0))]


def _walked(value: Any) -> Any:
    """The entry computed with nothing kept."""
    signature._BY_LAYOUT.clear()
    return signature.argument_key(value)


@pytest.mark.parametrize("index", range(len(_layouts())))
def test_a_kept_layout_answers_the_walked_entry(index: int) -> None:
    value = _layouts()[index]
    expected = _walked(value)
    for _ in range(2):   # the first call keeps it, the second answers from what was kept
        assert signature.argument_key(value) == expected
        assert type(signature.argument_key(value)) is type(expected)


def _same_layout_pair() -> tuple[np.ndarray, np.ndarray]:
    """Two float64 arrays of one shape and strides, the second misaligned."""
    memory = np.zeros(81, np.uint8)
    aligned, misaligned = memory[:80].view(np.float64), memory[1:].view(np.float64)
    assert aligned.shape == misaligned.shape and aligned.strides == misaligned.strides
    assert aligned.flags.aligned and not misaligned.flags.aligned
    return aligned, misaligned


def test_alignment_is_read_at_every_call_of_a_kept_layout() -> None:
    aligned, misaligned = _same_layout_pair()
    signature._BY_LAYOUT.clear()
    assert signature.argument_key(aligned) is not None
    assert signature.argument_key(misaligned) is None
    assert signature.argument_key(aligned) is not None


def test_misaligned_array_after_an_aligned_one_of_its_layout_runs_as_numpy() -> None:
    aligned, misaligned = _same_layout_pair()
    aligned[:] = np.arange(10.0)
    misaligned[...] = np.linspace(-1.0, 1.0, 10)
    f = autoroute(lambda a: a * 2.0 + 1.0)
    assert_calls_match_numpy(f, [(aligned,), (misaligned,), (aligned,)])
