"""The output pool (autojit/runtime/output_pool.py): big results are NumPy arrays that own
their data (a NEP 49 allocator handler), their blocks recycled once the array and every
view of it are gone, never while anything still references the memory."""

import gc
import mmap
import os
import pickle
import threading

import numpy as np
import pytest

from autojit.runtime import output_pool
from autojit.runtime.output_pool import MIN_BYTES, OutputPool

BIG = (MIN_BYTES // 8,)          # float64 elements filling exactly MIN_BYTES
BLOCK = MIN_BYTES + mmap.PAGESIZE   # its mapping: the data and a header page

pytestmark = pytest.mark.skipif(output_pool._native is None,
                                reason="autojit._native.pool not built")


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


def test_big_results_own_their_memory_as_numpy_s_do():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty((2, BIG[0] // 2), np.float64)
    plain = np.empty((2, BIG[0] // 2), np.float64)
    assert array.flags.owndata and array.base is None
    assert (array.flags.c_contiguous, array.flags.writeable) == (
        plain.flags.c_contiguous, plain.flags.writeable)
    assert type(array) is np.ndarray and array.dtype == plain.dtype
    assert array.ctypes.data % 64 == 0
    view = array[1]
    assert view.base is array and np.shares_memory(view, array)
    assert not np.shares_memory(array, plain)


def test_resize_works_and_keeps_the_values():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    array[:] = np.arange(BIG[0])
    array.resize((BIG[0] + 1000,))                       # grows: a bigger block
    assert array.flags.owndata and array.base is None
    assert array[BIG[0] - 1] == BIG[0] - 1 and np.all(array[BIG[0]:] == 0.0)
    array.resize((5,))                                  # shrinks below MIN_BYTES
    assert list(array) == [0.0, 1.0, 2.0, 3.0, 4.0] and array.flags.owndata
    array.resize((BIG[0] * 2,))                          # and grows back over it
    assert list(array[:5]) == [0.0, 1.0, 2.0, 3.0, 4.0]
    del array
    view_holder = pool.empty(BIG, np.float64)
    _ = view_holder[::2]
    with pytest.raises(ValueError):                     # NumPy's refusal, as for np.empty
        view_holder.resize((10,))


def test_pickle_round_trip_and_copies():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    array[:] = 2.5
    plain = np.full(BIG, 2.5)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(array, protocol=protocol))
        like = pickle.loads(pickle.dumps(plain, protocol=protocol))
        assert np.array_equal(back, array) and not np.shares_memory(back, array)
        assert back.flags.owndata == like.flags.owndata
        assert type(back.base) is type(like.base)
    copy = array.copy()
    assert copy.flags.owndata and copy.base is None and not np.shares_memory(copy, array)


def test_a_block_is_not_reused_while_a_view_is_alive():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    view = array[::2]
    del array
    other = pool.empty(BIG, np.float64)               # the view keeps the first block busy
    assert not np.shares_memory(other, view) and pool.mapped == 2
    view[:] = 2.0
    other[:] = 3.0
    assert np.all(view == 2.0)
    del other
    gc.collect()
    third = pool.empty(BIG, np.float64)               # other's block, not the view's
    assert not np.shares_memory(third, view) and pool.reused == 1
    third[:] = 4.0
    assert np.all(view == 2.0)


def test_many_big_arrays_alive_at_once_are_distinct_and_recycled():
    pool = OutputPool(8 * BLOCK)
    arrays = [pool.empty(BIG, np.float64) for _ in range(12)]
    for i, array in enumerate(arrays):
        array[::4096] = i
    assert all(np.all(a[::4096] == i) for i, a in enumerate(arrays))
    assert len({a.ctypes.data for a in arrays}) == 12 and pool.mapped == 12
    del arrays
    assert pool.idle_bytes == 8 * BLOCK
    again = [pool.empty(BIG, np.float64) for _ in range(8)]
    assert pool.reused == 8 and pool.mapped == 12
    del again


def test_arrays_outlive_their_pool():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    array[:] = 7.0
    del pool
    gc.collect()
    assert np.all(array[::4096] == 7.0)
    del array                                          # freed through the handler it kept


def test_other_allocations_keep_numpy_s_allocator():
    pool = OutputPool(4 * MIN_BYTES)
    array = pool.empty(BIG, np.float64)
    name = np._core.multiarray.get_handler_name
    assert name(array) == "autojit_output_pool"
    assert name(np.empty(BIG)) == name(np.empty(3)) == name() == "default_allocator"
    assert name(array + 1.0) == "default_allocator"


def test_idle_blocks_are_bounded_and_zero_turns_recycling_off():
    pool = OutputPool(BLOCK)
    arrays = [pool.empty(BIG, np.float64) for _ in range(3)]
    del arrays
    assert pool.idle_bytes == BLOCK
    pool.clear()
    assert pool.idle_bytes == 0
    off = OutputPool(0)
    array = off.empty(BIG, np.float64)
    assert array.base is None and off.mapped == 0


def test_turning_recycling_off_unmaps_the_blocks_still_out_when_they_die():
    pool = OutputPool(4 * BLOCK)
    out = pool.empty(BIG, np.float64)
    plain = pool.empty(BIG, np.float64, limit_bytes=0)   # a call with output_pool_mb=0
    assert plain.flags.owndata and pool.mapped == 1
    del out
    assert pool.idle_bytes == 0


def test_a_size_the_system_cannot_map_raises_numpy_s_memory_error():
    pool = OutputPool(4 * MIN_BYTES)
    with pytest.raises(MemoryError, match="Unable to allocate"):
        pool.empty((10 ** 12,), np.float64)
    assert pool.refused == 1
    assert pool.empty(BIG, np.float64).flags.owndata


def test_threads_allocating_and_dropping_concurrently():
    pool = OutputPool(8 * MIN_BYTES)
    errors = []

    def work(seed: int) -> None:
        for i in range(20):
            array = pool.empty(BIG, np.float64)
            array[::4096] = seed * 100 + i
            if not np.all(array[::4096] == seed * 100 + i):
                errors.append(seed)
            if not array.flags.owndata or np._core.multiarray.get_handler_name() != (
                    "default_allocator"):
                errors.append(-seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and pool.reused > 0


def test_a_forked_child_allocates_and_frees_while_the_parent_s_threads_churn():
    pool = OutputPool(4 * BLOCK)
    kept = pool.empty(BIG, np.float64)
    kept[:] = 1.0
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            array = pool.empty(BIG, np.float64)
            array[::4096] = 2.0
            del array

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(5):
            pid = os.fork()
            if pid == 0:                                # the child: never return into pytest
                ok = False
                try:
                    fresh = pool.empty(BIG, np.float64)
                    fresh[::4096] = 3.0
                    ok = bool(np.all(kept[::4096] == 1.0)) and fresh.flags.owndata
                    del fresh
                    kept.resize((10,), refcheck=False)
                finally:
                    os._exit(0 if ok else 1)
            assert os.waitpid(pid, 0)[1] == 0
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert np.all(kept[::4096] == 1.0)
