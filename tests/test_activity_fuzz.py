"""activity_from_samples and sample_diagnoses never crash on odd sample frames (hypothesis):
rows out of order, repeated times, NaN anywhere, several GPUs, every column of the samples
schema including the clock-event reasons; the JSON is serialisable and the shares hold."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.analysis.evidence import collect
from gpuscope.analysis.evidence.samples.activity import activity_from_samples
from gpuscope.analysis.rules.registry import run_rules
from gpuscope.schemas import SAMPLE_SCHEMA, frame


def sample_diagnoses(a, **kw):
    """The sample rules' findings of `a` (through the one engine)."""
    return run_rules(collect(activity=a, **kw))

NUM = st.one_of(st.just(math.nan), st.floats(0, 120, allow_nan=False), st.sampled_from([0.0, 0.02, 0.5, 1.0, 55.0]))
ROW = st.fixed_dictionaries({
    "t_wall": st.one_of(st.floats(1.8e9, 1.8e9 + 30, allow_nan=False), st.just(math.nan)),
    "gpu": st.integers(0, 2),
    "rx_gbs": NUM, "tx_gbs": NUM,
    "sm_active": st.one_of(st.just(math.nan), st.floats(0, 1)),
    "gpu_util_pct": st.one_of(st.just(math.nan), st.floats(0, 100)),
    "mem_used_mib": NUM, "power_w": NUM, "sm_clock_mhz": NUM,
    "clock_event_reasons": st.one_of(st.just(math.nan), st.integers(0, 511).map(float)),
    "wrap_suspect": st.integers(0, 1),
    "pcie_source": st.sampled_from(["counter", "gpm", "throughput", None]),
})


@settings(max_examples=80, deadline=None)
@given(st.lists(ROW, max_size=60), st.booleans())
def test_odd_frames_never_crash(rows, with_meta):
    cols = {c: [r.get(c, math.nan if t == "float64" else None) for r in rows] for c, t in SAMPLE_SCHEMA.items()}
    cols["t_mono"] = [0.0] * len(rows)
    cols["wrap_suspect"] = [r["wrap_suspect"] for r in rows]
    s = frame(cols, SAMPLE_SCHEMA)
    meta = {"gpus": [{"index": 0, "memory_total_mib": 1000.0,
                      "pcie_link": {"gen_now": 1, "gen_max": 5, "width_now": 8, "width_max": 16, "downgraded": True}}]}
    a = activity_from_samples(s, meta=meta if with_meta else None, line_rate_gbs=55.5, line_rate_source="test")
    j = a.to_json()
    json.dumps(j, allow_nan=False)
    for g in a.gpus:
        shares = [v for v in g.figures["classes"].values() if v is not None]
        if g.grid.n and g.grid.dt.sum() > 0:
            assert sum(shares) == pytest.approx(1.0)
        bf = g.figures["busy_fraction"]
        assert bf is None or math.isnan(bf) or 0.0 <= bf <= 1.0
    ds = sample_diagnoses(a)
    assert len({d.id for d in ds}) == len(ds)
    for d in ds:
        json.dumps(d.to_json(), allow_nan=False)


def test_line_rate_must_be_positive():
    with pytest.raises(ValueError):
        activity_from_samples(frame({}, SAMPLE_SCHEMA), meta=None, line_rate_gbs=0.0, line_rate_source="x")
