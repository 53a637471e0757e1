"""The output pool (autojit/runtime/output_pool.py): big blocks are recycled once the array
and every view of it are gone, never while anything still references the block."""

import threading

import numpy as np

from autojit.runtime.output_pool import MIN_BYTES, OutputPool

BIG = (MIN_BYTES // 8,)          # float64 elements filling exactly MIN_BYTES


def test_a_dropped_big_array_s_block_is_reused():
    pool = OutputPool(4 * MIN_BYTES)
    first = pool.empty(BIG, np.float64)
    assert first.flags.writeable and first.flags.c_contiguous and first.flags.aligned
    first[:] = 1.0
    address = first.ctypes.data
    del first
    again = pool.empty(BIG, np.float64)
    assert again.ctypes.data == address and (pool.reused, pool.mapped) == (1, 1)
    assert pool.empty((3, 4), np.float32).base is None      # small: plain np.empty


def test_a_block_is_not_reused_while_a_view_or_its_base_is_alive():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    view = array[::2]
    del array
    other = pool.empty(BIG, np.float64)               # the view keeps the first block busy
    assert not np.shares_memory(other, view) and pool.mapped == 2
    kept_base = other.base
    del other
    assert pool.dropped == 1                           # its base is still referenced
    third = pool.empty(BIG, np.float64)
    assert third.base is not kept_base
    view[:] = 2.0                                      # still its own memory
    third[:] = 3.0
    assert np.all(view == 2.0)


def test_idle_blocks_are_bounded_and_zero_turns_recycling_off():
    pool = OutputPool(MIN_BYTES)
    arrays = [pool.empty(BIG, np.float64) for _ in range(3)]
    del arrays
    assert pool.idle_bytes <= MIN_BYTES
    pool.clear()
    assert pool.idle_bytes == 0
    off = OutputPool(0)
    array = off.empty(BIG, np.float64)
    assert array.base is None and off.mapped == 0


def test_threads_allocating_and_dropping_concurrently():
    pool = OutputPool(8 * MIN_BYTES)
    errors = []

    def work(seed: int) -> None:
        for i in range(20):
            array = pool.empty(BIG, np.float64)
            array[::4096] = seed * 100 + i
            if not np.all(array[::4096] == seed * 100 + i):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and pool.reused > 0
