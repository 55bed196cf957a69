"""halo2's proving times by circuit size (`K-8 - 28 ms` ... `K-24 - 272.58 s`): a sweep over
sizes, one time a configuration, is refused as what it is (parsers/log/sweep.py), never named
by the prose line nearest to it; per-device lines of the same shape are not called a sweep."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.sweep import sweep_of


def test_a_sweep_over_sizes_is_refused_as_one():
    text = "Proving time measured on a 32 core machine.\nn-10 - 12 ms\nn-12 - 95 ms\nn-14 - 1.2 s\nn-16 - 9.8 s\n"
    with pytest.raises(NoDataError, match=r"a sweep over n \('n-10 - 12 ms'") as e:
        parsers.parse_log(text)
    assert "no unit or time word" not in str(e.value)


@pytest.mark.parametrize("text", [
    "GPU-0 - 28 ms\nGPU-1 - 29 ms\nGPU-2 - 28 ms\nGPU-3 - 30 ms\n",  # devices: times alike
    "K-8 - 28 ms\nK-15 - 630 ms\n",  # two rows: too few to tell
    "K-24 - 272 s\nK-22 - 57 s\nK-20 - 15 s\n",  # sizes falling
])
def test_lines_of_that_shape_that_are_no_sweep(text):
    assert sweep_of(text) is None
