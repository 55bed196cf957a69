"""Phases rebuilt from printed timing lines (format `lines`): the parts of a line laid out
in print order, ending at the line's stamp; the whole is not a phase; what the parts do
not cover is `other`; no phase overlaps another line's."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope import parsers
from gpuscope.analysis import analyze
from gpuscope.analysis.evidence.log.phases import from_log_lines
from gpuscope.rolemodel import model_for
from gpuscope.sources import open_source
from tests.conftest import DATA

RUNS = DATA / "h200_foreign" / "runs"


def _phases(text_or_path):
    p = parsers.parse_log(text_or_path)
    return p, from_log_lines(p.components, model_for(p))


def test_copy_pageable_h2d_then_compute_ending_at_the_stamp():
    p, ph = _phases(RUNS / "copy_pageable")
    assert "step" not in set(ph["phase"])  # the whole is not a phase
    line1 = p.components[p.components["line"] == 1]
    stamp = line1["ts"].iloc[0]
    first = ph.iloc[:2]
    assert first["phase"].tolist() == ["h2d", "compute"]
    assert first["t_end"].iloc[1] == pytest.approx(stamp)
    assert first["t_end"].iloc[0] == pytest.approx(stamp - 0.2275)
    assert first["t_start"].iloc[0] == pytest.approx(stamp - 0.2275 - 0.1823)
    assert (ph["t_end"] >= ph["t_start"]).all()
    s, e = ph["t_start"].to_numpy(), ph["t_end"].to_numpy()
    assert (s[1:] >= e[:-1] - 1e-6).all()  # in time order, never overlapping


def test_the_uploads_run_where_the_samples_say():
    a = analyze(open_source(RUNS / "copy_pageable", line_rate=55.48))
    pc = a.log.pcie.set_index("phase")
    assert 8.0 < pc.at["h2d", "rx_gbs_median"] < 11.0  # pageable: ~9.4 GB/s, not 0.0
    assert pc.at["compute", "rx_gbs_median"] < 1.0
    assert a.log.split["upload_gbs"] == pytest.approx(9.1, abs=0.3)  # 1,610,612,736 B / h2d_ms
    a = analyze(open_source(RUNS / "copy_pinned", line_rate=55.48))
    assert a.log.pcie.set_index("phase").at["h2d", "rx_gbs_median"] > 45.0


def test_what_the_parts_do_not_cover_is_other_before_them():
    text = ("2026-12-01T09:00:01.000Z step=1 h2d_ms=100 compute_ms=200 step_ms=400\n"
            "2026-12-01T09:00:02.000Z step=2 h2d_ms=100 compute_ms=200 step_ms=300.1\n")
    _, ph = _phases(text)
    t1 = ph[ph["t_end"] <= ph["t_end"].min() + 0.31]
    assert t1["phase"].tolist() == ["other", "h2d", "compute"]
    assert (t1["t_end"] - t1["t_start"]).tolist() == pytest.approx([0.1, 0.1, 0.2])
    assert ph["phase"].tolist().count("other") == 1  # 0.1 of 300.1 ms: rounding, no phase


def test_a_line_never_overlaps_the_one_before():
    # the second line's parts (0.9 s) exceed the 0.5 s since the first line's stamp
    text = ("2026-12-01T09:00:01.000Z iter 1: prep 100 ms, kernel 200 ms\n"
            "2026-12-01T09:00:01.500Z iter 2: prep 600 ms, kernel 300 ms\n")
    _, ph = _phases(text)
    s, e = ph["t_start"].to_numpy(), ph["t_end"].to_numpy()
    order = np.argsort(s)
    assert (s[order][1:] >= e[order][:-1] - 1e-6).all()
    second = ph.iloc[2:]
    assert second["phase"].tolist() == ["prep", "kernel"]
    assert second["t_end"].iloc[1] - second["t_start"].iloc[1] == pytest.approx(0.3)
    assert second["t_end"].iloc[0] - second["t_start"].iloc[0] == pytest.approx(0.2)  # cut at the first stamp


def test_a_record_of_only_its_whole_is_other():
    _, ph = _phases(RUNS / "launch_bound")
    assert set(ph["phase"]) == {"other"} and len(ph) == 30
