"""Numbers in prose or settings are no durations (issue 33, class 3): a bare number after
`of`, `is`, `in` (`11737 of 20000` was 20,000 s), help text (`between 1 second and 60`), the
label `seconds:` after a counter is the unit of the value after it (not of the counter),
configuration echoes (`min_duration (ms): 600000`), and a unit-less latency (ms as often as s)
is not assumed seconds. What must still read: `epoch 3 took 1.2s`, `Done in 3.2s`."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from tests.conftest import DATA

STEPS = "".join(f"step {i} time: 0.5{i}s\n" for i in range(6))


def _names(text: str) -> set[str]:
    return set(parsers.parse_log(text, "lines").components["component"])


@pytest.mark.parametrize("prose", [
    "Iteration 0: step 11737 of 20000, loss 0.5\n",
    "GPU clock is: 1000 MHz\n",
    "In 1 gpu mode\n",
    "  --interval N   sample every N seconds, between 1 second and 60\n",
    "  -i N           sample every N seconds, between 1 second and 60\n",
    "min_duration (ms): 600000\nmax_duration (ms): 0\ntarget_latency (ns): 0\n",
])
def test_prose_and_settings_make_no_component(prose):
    assert _names(prose + STEPS) == {"time"}


def test_seconds_after_a_counter_is_the_unit_of_its_value():
    p = parsers.parse_log("".join(f"completed step: {i}, seconds: 18.66{i}\n" for i in range(6)), "lines")
    c = p.components
    assert set(c["component"]) == {"step_time"} and c["value_ms"].tolist()[:2] == [18660.0, 18661.0]


def test_a_unitless_latency_is_not_assumed_seconds():
    with pytest.raises(NoDataError):
        parsers.parse_log("".join(f"Total Latency: 236.{i}\n" for i in range(6)), "lines")
    assert _names("".join(f"Total Latency: 236.{i} ms\n" for i in range(6))) == {"Total_Latency"}


def test_what_prose_still_says_is_read():
    assert _names("".join(f"epoch {i} took 1.{i}s\n" for i in range(6))) == {"took"}
    assert _names("".join(f"Done in 3.{i}s\n" for i in range(6))) == {"Done"}


def test_loadgen_summary_settings_are_no_measurements():
    """MLPerf LoadGen's summary: statistics of the latency (ns), its Test Parameters settings."""
    p = parsers.parse_log(DATA / "corpus/mlperf/loadgen_summary.txt")
    names = set(p.components["component"])
    assert names == {"latency.min", "latency.max", "latency.mean", "latency.percentile"}
    assert p.components["value_ms"].max() == pytest.approx(11.269418)
