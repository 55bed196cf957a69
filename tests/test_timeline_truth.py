"""The timeline shows what the log measured (issue 13): an upload the log prints on its own
line (`h2d_ms`, inside ntt_kernels) is drawn once, at the start of ntt_kernels, not a second
time over the MSM on a phantom lane; ntt_kernels is then the NTT kernels (ntt_kernels -
h2d); coset_intt_sync is named for what it is; ntt_kernels without an h2d field is "upload
+ NTT", not an upload."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuscope import parsers
from gpuscope.analysis.evidence.log.attribution import display_phases
from gpuscope.analysis.evidence.log.phases import build_phases, from_log_lines
from gpuscope.cli import app
from gpuscope.reports.lanes import JITTER_S, assign_lanes
from gpuscope.reports.phase_style import style_for
from gpuscope.rolemodel import load_model
from gpuscope.sources import open_source
from tests.conftest import DATA, EXAMPLES

C8 = DATA / "h200_contention" / "pageable-c8"


@pytest.fixture(scope="module")
def c8():
    src = open_source(C8)
    ph, basis = display_phases(src)
    return src, ph, basis


def test_the_measured_upload_is_drawn_once_where_it_ran(c8):
    src, ph, _ = c8
    tenures = int(src.log.records["complete"].sum())
    h2d = ph[ph["phase"] == "h2d"]
    assert len(h2d) == tenures == 16
    assert "ntt_kernels" not in set(ph["phase"])  # the log prints h2d: ntt_kernels is split, not an upload
    comps = src.log.components
    logged = comps.loc[comps["component"] == "h2d", "value_ms"].sort_values().to_numpy()
    assert np.sort((h2d["t_end"] - h2d["t_start"]).to_numpy() * 1000) == pytest.approx(logged, abs=0.01)
    for _, t in ph[ph["worker"] >= 0].groupby("worker"):
        t = t.sort_values("t_start")
        order = t["phase"].tolist()
        # each upload follows the device allocation and comes before the NTT kernels and their sync
        for i, p in enumerate(order):
            if p == "h2d":
                assert order[i - 1] == "d_b_alloc" and order[i + 1: i + 3] == ["ntt", "coset_intt_sync"]
                assert t["t_start"].iloc[i] == pytest.approx(t["t_end"].iloc[i - 1], abs=1e-6)


def test_no_phantom_lanes_and_nothing_overlaps_on_a_worker(c8):
    _, ph, _ = c8
    lanes = assign_lanes(ph)
    labels = [lane.label for lane in lanes]
    assert "worker 0" in labels and "worker 1" in labels
    assert not [x for x in labels if x.startswith("worker") and "(" in x], labels
    for lane in lanes:
        m = lane.main.sort_values("t_start")
        assert (m["t_start"].to_numpy()[1:] >= m["t_end"].to_numpy()[:-1] - 1e-9).all()


def test_legend_names_what_the_log_measured(c8):
    from gpuscope.reports.plot import render_timeline

    _, ph, _ = c8
    fig = render_timeline(ph, None, title="c8")
    legend = [t.get_text() for t in fig.get_axes()[0].get_legend().get_texts()]
    assert legend.count("upload H2D") == 1
    assert "NTT" in legend and "NTT sync (coset_intt_sync)" in legend
    assert not [x for x in legend if "ntt_kernels" in x]


def test_the_analysis_joins_samples_to_the_upload_where_it_ran(c8):
    """The phases the samples are joined to (spans.csv's words): one h2d per tenure, the NTT
    kernels and their sync as `ntt`."""
    src, _, _ = c8
    ph, _ = build_phases(None, src.log.components, src.log.timeline, src.model)
    assert (ph["phase"] == "h2d").sum() == 16
    assert (ph["phase"] == "ntt").sum() == 32
    assert not {"ntt_kernels", "coset_intt_sync"} & set(ph["phase"])


def test_perfetto_export_one_upload_per_tenure_on_the_worker_threads(tmp_path):
    out = tmp_path / "c8.json"
    r = CliRunner().invoke(app, ["export", str(C8), "--perfetto", str(out)])
    assert r.exit_code == 0, r.stderr
    tr = json.loads(out.read_text())
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"}
    assert not [n for n in threads.values() if n.startswith("worker") and "(" in n]
    xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
    uploads = [e for e in xs if e["name"] == "upload H2D"]
    assert len(uploads) == 16 and all(threads[(e["pid"], e["tid"])].startswith("worker") for e in uploads)
    names = {e["name"] for e in xs}
    assert {"NTT", "NTT sync (coset_intt_sync)", "MSM"} <= names
    by_thread: dict = {}
    for e in xs:
        by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))


def test_ntt_kernels_without_an_h2d_field_is_upload_plus_ntt():
    src = open_source(EXAMPLES / "cuzk_daemon.log")
    ph, _ = display_phases(src)
    assert "h2d" not in set(ph["phase"]) and (ph["phase"] == "ntt_kernels").any()
    st_ = style_for("ntt_kernels")
    assert st_.group == "upload" and st_.hatch and "upload + NTT" in st_.label
    assert style_for("coset_intt_sync").group == "compute"
    # the analysis keeps the role model's reading: ntt_kernels is the upload
    a, _ = build_phases(None, src.log.components, src.log.timeline, src.model)
    assert (a["phase"] == "h2d").any() and "ntt_kernels" not in set(a["phase"])


# -- any tenure: the contained upload never overlaps, and no time is lost or invented ---------

@st.composite
def tenure_log(draw):
    """Stamped CuZK tenures, each with ntt_kernels and (mostly) an explicit h2d inside it, one
    or two GPUs per call."""
    t, lines = 1_800_000_000.0, []
    gpus = draw(st.integers(1, 2))
    for _ in range(draw(st.integers(1, 4))):
        def stamp(s: float) -> str:
            return pd.Timestamp(s, unit="s", tz="UTC").strftime("%Y-%m-%dT%H:%M:%S.%fZ")

        t += draw(st.integers(0, 500)) / 1000
        lines.append(f"{stamp(t)} CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms={draw(st.integers(0, 300))}")
        held = 0
        for g in range(gpus):
            ntt = draw(st.integers(0, 2000))
            h2d = draw(st.one_of(st.none(), st.integers(0, ntt)))
            sync, msm = draw(st.integers(0, 200)), draw(st.integers(0, 900))
            total = 3 + ntt + sync + msm
            t += total / 1000
            lines.append(f"{stamp(t)} CUZK_NTT_H: d_b_alloc=3ms ntt_kernels={ntt}ms coset_intt_sync={sync}ms "
                         f"msm_init=0ms msm_invoke={msm}ms msm_dtor=0ms total={total}ms")
            if h2d is not None:
                lines.append(f"{stamp(t)} CUZK_TIMING: gpu_tid={g} h2d_ms={h2d} h2d_bytes=2147483648")
            lines.append(f"{stamp(t)} CUZK_TIMING: gpu_tid={g} ntt_msm_h_ms={total}")
            held += total
        lines.append(f"{stamp(t)} CUZK_TIMING: mutex_held_ms={held + 1} total_start_fn_ms={held + 2}")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tenure_log(), st.booleans())
def test_contained_uploads_nest_inside_their_outer_phase(text, display):
    parsed = parsers.parse_log(text)
    model = load_model(None)
    ph = from_log_lines(parsed.components, model, display=display)
    comps = parsed.components
    dur = (ph["t_end"] - ph["t_start"]) * 1000
    h2d_logged = comps.loc[comps["component"] == "h2d", "value_ms"].sum()
    ntt_logged = comps.loc[comps["component"] == "ntt_kernels", "value_ms"].sum()
    if display:  # ntt_kernels = its upload (h2d, where printed) + the NTT kernels; nothing lost or added
        parts = dur[ph["phase"].isin(["h2d", "ntt_kernels", "ntt"])].sum()
        assert parts == pytest.approx(ntt_logged, abs=1e-3)
        assert dur[ph["phase"] == "h2d"].sum() == pytest.approx(h2d_logged, abs=1e-3)
    else:  # one upload phase per ntt_kernels: the explicit h2d, else ntt_kernels itself
        assert (ph["phase"] == "h2d").sum() == (comps["component"] == "ntt_kernels").sum()
    # per GPU, the GPU-side phases of a tenure never overlap (the upload is not drawn twice);
    # zero-length phases draw nothing
    gpu_side = ph[(ph["gpu"] >= 0) & (ph["t_end"] > ph["t_start"] + 1e-6)].sort_values("t_start")
    for _, g in gpu_side.groupby("gpu"):
        s, e = g["t_start"].to_numpy(), g["t_end"].to_numpy()
        assert (s[1:] >= e[:-1] - JITTER_S).all()


# -- lane names say only what the input supports ---------------------------------------------

def test_a_printed_steps_log_has_one_gpu_lane_no_lock_and_no_cpu_claim():
    """copy_pageable prints h2d, compute and a step time: no GPU lock, no worker; the 2 ms its
    fields do not itemise stay beside them, not on a CPU lane of their own."""
    ph, _ = display_phases(open_source(DATA / "h200_foreign" / "runs" / "copy_pageable"))
    lanes = assign_lanes(ph)
    assert [lane.label for lane in lanes] == ["GPU (worker not logged)"]
    assert "other" in set(lanes[0].main["phase"])
    assert style_for("other").label == "other (not itemised)"


def test_overlapping_unattributed_cpu_work_is_named_for_what_it_is():
    from gpuscope.analysis.timeline_view import timeline_view

    ph = pd.DataFrame({"worker": -1, "gpu": -1, "partition": -1, "phase": ["prep", "prep", "b_g2_msm"],
                       "t_start": [0.0, 0.5, 2.0], "t_end": [1.0, 1.5, 2.5]})
    assert [lane.label for lane in assign_lanes(ph)] == ["CPU (worker not logged)",
                                                         "CPU (worker not logged), thread 2"]
    tv = timeline_view(open_source(DATA / "h200_foreign" / "traces" / "train_slow.json.gz"))
    labels = [lane.label for lane in assign_lanes(tv.phases, noun=tv.lane_noun)]
    assert "CPU (record_function ranges), depth 2" in labels
    assert not [x for x in labels if x.endswith(")") and "(2)" in x]
