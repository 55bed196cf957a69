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
