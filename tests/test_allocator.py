"""gpuscope.allocator: `analyze` and `compare` take numpy's arrays without the huge-page hint and
glibc keeping freed memory (issue 21), and GPUSCOPE_MALLOC_DEFAULTS=1 leaves both alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = ("import numpy as np; from gpuscope.allocator import for_long_inputs; "
         "flip = np._core.multiarray._set_madvise_hugepage; before = flip(True); for_long_inputs(); "
         "print(before, flip(True))")


def _probe(**env: str) -> str:
    e = {k: v for k, v in os.environ.items() if k != "GPUSCOPE_MALLOC_DEFAULTS"} | env
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=e,
                          check=True).stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_long_inputs_turn_the_hint_off():
    assert _probe() == ["True", "False"]  # (the second: what it was before being set back on)


def test_malloc_defaults_leave_the_hint():
    assert _probe(GPUSCOPE_MALLOC_DEFAULTS="1") == ["True", "True"]


GIVE_BACK = """
import numpy as np
from gpuscope.allocator import give_back, keep_freed_memory
def rss():
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmRSS")) >> 10
assert keep_freed_memory()  # (freed arrays up to 32 MB kept by glibc: what analyze runs with)
held = [np.ones(1 << 17) for _ in range(400)]  # 400 MB of 1 MB arrays on the heap
pin = [np.ones(1) for _ in range(400)]
del held
before = rss()
print(give_back(), before - rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim: Linux only")
def test_give_back_returns_what_glibc_kept():
    """Freed heap memory that glibc keeps (analyze's settings) goes back to the system."""
    out = subprocess.run([sys.executable, "-c", GIVE_BACK], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True" and int(out[1]) > 300  # (MiB)
