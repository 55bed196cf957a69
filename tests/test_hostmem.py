"""Host-memory modes: the pinned pool's logic and registration bookkeeping, with a fake allocator."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from gpuscope.errors import EXIT_RESOURCE, EXIT_USAGE, ResourceError, UsageError
from gpuscope.workload.hostalloc import AllocationFailed
from gpuscope.workload.hostmem import HostMemory, normalize_mode
from gpuscope.workload.pinned_pool import PinnedPool


class FakeAllocator:
    """Backs 'pinned' memory with numpy buffers and records every call."""

    def __init__(self, fail_over: int | None = None):
        self.fail_over = fail_over  # refuse allocations that would pin more than this
        self.live: dict[int, np.ndarray] = {}
        self.registered: dict[int, int] = {}
        self.calls: list[tuple] = []
        self._next = 1 << 20

    def host_alloc(self, nbytes: int) -> int:
        self.calls.append(("alloc", nbytes))
        if self.fail_over is not None and sum(a.nbytes for a in self.live.values()) + nbytes > self.fail_over:
            raise AllocationFailed("cudaErrorMemoryAllocation: out of memory")
        buf = np.zeros(nbytes, dtype=np.uint8)
        ptr = int(buf.ctypes.data)
        self.live[ptr] = buf
        return ptr

    def free_host(self, ptr: int) -> None:
        self.calls.append(("free", ptr))
        del self.live[ptr]

    def host_register(self, ptr: int, nbytes: int) -> None:
        self.calls.append(("register", nbytes))
        assert ptr not in self.registered, "registered twice"
        self.registered[ptr] = nbytes

    def host_unregister(self, ptr: int) -> None:
        self.calls.append(("unregister", ptr))
        del self.registered[ptr]

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        return self.live[ptr][:nbytes]


def test_normalize_mode_alias_and_unknown():
    assert normalize_mode("unpinned") == "pageable"
    assert normalize_mode("Pinned") == "pinned"
    with pytest.raises(UsageError) as e:
        normalize_mode("locked")
    assert e.value.exit_code == EXIT_USAGE
    assert "pinned, pageable" in e.value.one_line()


def test_pool_reuses_exact_sizes_and_counts():
    fa = FakeAllocator()
    pool = PinnedPool(10_000, fa)
    a = pool.acquire(1000)
    pool.release(a)
    b = pool.acquire(1000)  # same size: a hit, no new allocation
    assert b is a
    c = pool.acquire(500)  # another size: a new allocation
    assert c is not a
    assert pool.counters.allocations == 2
    assert pool.counters.hits == 1
    assert pool.counters.bytes == 1500
    assert pool.counters.in_use_bytes == 1500
    pool.release(b)
    pool.release(c)
    assert pool.counters.in_use_bytes == 0
    assert pool.free_bytes == 1500
    pool.close()
    assert fa.live == {}
    assert pool.counters.frees == 2 and pool.counters.bytes == 0


def test_pool_evicts_idle_buffers_of_other_sizes_to_fit_budget():
    fa = FakeAllocator()
    pool = PinnedPool(3000, fa)
    x = pool.acquire(2000)
    pool.release(x)
    y = pool.acquire(1500)  # 2000 idle + 1500 > 3000: the idle 2000 goes
    assert pool.counters.evictions == 1
    assert pool.counters.bytes == 1500
    assert len(fa.live) == 1
    pool.release(y)
    pool.close()


def test_pool_waits_for_release_under_budget_backpressure():
    fa = FakeAllocator()
    pool = PinnedPool(2000, fa)
    a = pool.acquire(1000)
    b = pool.acquire(1000)
    got = []

    def taker():
        got.append(pool.acquire(1000, timeout_s=5))

    t = threading.Thread(target=taker)
    t.start()
    time.sleep(0.15)
    assert not got, "acquire must block while the budget is in use"
    pool.release(a)
    t.join(5)
    assert got and got[0] is a  # the released buffer is reused
    assert pool.counters.waits == 1
    assert pool.counters.allocations == 2
    pool.release(b)
    pool.release(got[0])
    pool.close()


def test_pool_stop_event_ends_a_wait():
    pool = PinnedPool(1000, FakeAllocator())
    held = pool.acquire(1000)
    stop = threading.Event()
    stop.set()
    with pytest.raises(InterruptedError):
        pool.acquire(1000, stop=stop)
    pool.release(held)
    pool.close()


def test_pool_request_larger_than_budget_names_the_flag():
    pool = PinnedPool(1 << 20, FakeAllocator())
    with pytest.raises(ResourceError) as e:
        pool.acquire(3 << 20)
    assert e.value.exit_code == EXIT_RESOURCE
    msg = e.value.one_line()
    assert "3.0 MiB" in msg and "--pinned-budget-mib" in msg


def test_pool_allocation_failure_is_a_resource_error():
    fa = FakeAllocator(fail_over=1500)
    pool = PinnedPool(10_000, fa)
    a = pool.acquire(1000)
    with pytest.raises(ResourceError) as e:
        pool.acquire(1000)
    assert e.value.exit_code == EXIT_RESOURCE
    assert "could not pin" in e.value.one_line() and "--pinned-budget-mib" in e.value.one_line()
    pool.release(a)
    pool.close()
    assert fa.live == {}


def test_pool_double_release_is_an_error():
    pool = PinnedPool(1000, FakeAllocator())
    a = pool.acquire(100)
    pool.release(a)
    with pytest.raises(RuntimeError):
        pool.release(a)


def test_pool_close_with_buffer_in_use_frees_it_on_release():
    fa = FakeAllocator()
    pool = PinnedPool(1000, fa)
    a = pool.acquire(100)
    pool.close()
    assert len(fa.live) == 1
    pool.release(a)
    assert fa.live == {}


def test_pinned_block_is_one_buffer_with_writable_views():
    fa = FakeAllocator()
    mem = HostMemory("pinned", allocator=fa, pinned_budget_bytes=1 << 20)
    blk = mem.new_block([(16, 8)] * 3, np.uint32)
    assert [a.shape for a in blk.arrays] == [(16, 8)] * 3
    assert fa.calls == [("alloc", 3 * 16 * 8 * 4)]
    blk.arrays[1][:] = 7
    raw = fa.live[blk.pinned.ptr].view(np.uint32)
    assert (raw[16 * 8: 32 * 8] == 7).all() and (raw[: 16 * 8] == 0).all()
    mem.release(blk)
    blk2 = mem.new_block([(16, 8)] * 3, np.uint32)
    assert mem.pool.counters.hits == 1 and mem.pool.counters.allocations == 1
    mem.release(blk2)
    mem.close()
    assert fa.live == {}
    assert mem.stats()["pool"]["peak_bytes"] == 3 * 16 * 8 * 4


def test_registered_mode_registers_before_and_unregisters_after():
    fa = FakeAllocator()
    mem = HostMemory("registered", allocator=fa)
    blk = mem.new_block([(8, 8)] * 3, np.uint32)
    assert fa.calls == []  # plain heap arrays
    mem.prepare_upload(blk)
    assert len(fa.registered) == 3 and mem.registered_bytes == 3 * 8 * 8 * 4
    mem.prepare_upload(blk)  # idempotent
    assert len(fa.registered) == 3
    mem.finish_upload(blk)
    assert fa.registered == {} and mem.registered_bytes == 0
    assert mem.stats()["registrations"] == 3


def test_registered_leftovers_are_unregistered_on_close():
    fa = FakeAllocator()
    mem = HostMemory("registered", allocator=fa)
    blk = mem.new_block([(8, 8)] * 2, np.uint32)
    mem.prepare_upload(blk)
    mem.close()  # e.g. Ctrl-C between upload and unregister
    assert fa.registered == {}
    mem.release(blk)  # nothing left to do, and no double unregister
    assert fa.registered == {}


def test_pageable_mode_never_calls_cuda():
    mem = HostMemory("unpinned")
    assert mem.mode == "pageable"
    blk = mem.new_block([(4, 8)], np.uint32)
    assert mem.prepare_upload(blk) == 0.0
    mem.release(blk)
    mem.close()
    assert mem.stats() == {"mode": "pageable"}


def test_registered_arrays_start_on_their_own_pages():
    fa = FakeAllocator()
    mem = HostMemory("registered", allocator=fa)
    blk = mem.new_block([(5, 8), (5, 8), (3, 8)], np.uint32)
    starts = [a.ctypes.data for a in blk.arrays]
    assert all(p % 4096 == 0 for p in starts)
    assert len({p // 4096 for p in starts}) == 3
    blk.arrays[0][:] = 1
    assert (blk.arrays[1] == blk.arrays[1]).all() and not np.shares_memory(blk.arrays[0], blk.arrays[1])


def test_prewarm_pins_up_to_the_budget_then_serves_hits():
    fa = FakeAllocator()
    pool = PinnedPool(2500, fa)
    assert pool.prewarm(1000, 5) == 2  # the budget holds two
    assert pool.counters.allocations == 2 and pool.free_bytes == 2000
    a = pool.acquire(1000)
    b = pool.acquire(1000)
    assert pool.counters.hits == 2 and pool.counters.allocations == 2
    pool.release(a)
    pool.release(b)
    pool.close()
    assert fa.live == {}


def test_view_from_address_is_the_memory_there_not_a_copy():
    """CudaHostAllocator.view's address -> numpy view (run on host memory: no GPU needed)."""
    from gpuscope.workload.hostalloc import _view_from_address

    backing = np.arange(64, dtype=np.uint8)
    v = _view_from_address(int(backing.ctypes.data), 48)
    assert v.dtype == np.uint8 and v.shape == (48,) and v.tolist() == list(range(48))
    v[3] = 200
    backing[5] = 77
    assert backing[3] == 200 and v[5] == 77
