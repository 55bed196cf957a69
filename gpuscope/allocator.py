"""Memory for long inputs (issue 21): glibc's malloc told to keep the memory a command frees for
its next arrays, and numpy's arrays made without the huge-page hint (small_pages).

A million-line log's analysis makes and frees many arrays of 8-64 MB. By default glibc maps
each one fresh (its mmap threshold) and unmaps it when freed, so every new array is faulted
in again page by page: on a virtual machine ~10 us a page, 0.3-1 CPU-s of system time per
million lines. With arrays up to 32 MB served from the heap, and the heap's freed top kept
(trimmed only beyond 512 MB), a freed array's pages are reused without a fault; the peak
memory stays what was alive at once. Linux with glibc only; anything else (musl, macOS), or
GPUSCOPE_MALLOC_DEFAULTS=1, leaves the allocator as it is.

`give_back` (malloc_trim) returns the freed memory a stage leaves to the system: where a reader or
the analysis has freed more than the next stage's arrays will reuse (an Nsight export of 10M
kernels: its host pass, its GPU tables' parts, the views' sorts; issue 32), at the cost of those
pages faulted in again when next used.

`for_long_inputs` is what `analyze`, `compare`, `plot` and `export` call: each, for the rest of
the process (a command's arrays are written once and read a few times: 4 KB pages fault in at
a steady ~0.3 CPU-s per million log lines; with numpy's huge-page hint the same run's system
time moved between 0.6 and 1.2 CPU-s on this project's 2-core VM, the kernel compacting memory
for 2 MB pages on the faults). The verbs that draw a 10^6-line log read what analyze reads:
without it, their system time was ~1.0 CPU-s against ~0.4 with it (plot, 3 runs each).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # (glibc's malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 512 << 20
TOP_PAD = 64 << 20


def keep_freed_memory() -> bool:
    """Set the three options; True when glibc took them."""
    if not sys.platform.startswith("linux") or os.environ.get("GPUSCOPE_MALLOC_DEFAULTS", "") not in ("", "0"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(opt, value) == 1 for opt, value in (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))


def give_back() -> bool:
    """glibc's malloc_trim(0): the free memory of every arena (its heap's top and the free pages
    inside it) returned to the system; True when it returned some. Linux with glibc only; else a no-op."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return bool(trim(0))


def for_long_inputs() -> None:
    """keep_freed_memory, and numpy's arrays made without the huge-page hint from now on
    (GPUSCOPE_MALLOC_DEFAULTS=1 leaves both as they are)."""
    if not keep_freed_memory():
        return
    flip = _hugepage_switch()
    if flip is not None:
        flip(False)


def _hugepage_switch():
    import numpy as np

    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    return getattr(switch, "_set_madvise_hugepage", None)


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's arrays made inside without its transparent-huge-page hint (restored after). A
    long samples file's columns and the grid's arrays are written once, in order: where the
    kernel compacts memory to find a 2 MB page on the fault (THP `defrag=madvise`, a busy
    virtual machine) that costs several times the 4 KB faults (4M rows: the reader's system
    time 0.5-0.8 CPU-s with the hint, 0.3 without). No numpy with the switch: nothing changes.
    Shared by the samples reader (parsers.samples) and the grid (analysis.evidence.samples)."""
    flip = _hugepage_switch()
    if flip is None:
        yield
        return
    prev = flip(False)
    try:
        yield
    finally:
        flip(prev)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: a reader making millions of small containers (a log's
    scan, a trace's events) or an import of ~10^5 long-lived objects (matplotlib, pandas) makes
    little garbage, and each collection of the oldest generation rescans every object of the
    process. Collection resumes after, if it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
