"""The PNG timeline: a real PNG of sensible size, lanes per worker, legend, sample panels."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from gpuscope.reports.plot import render_timeline, timeline_png
from tests.timeline_fixture import phases, samples

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_a_real_png_with_samples():
    data = timeline_png(phases(), samples(), title="unit: pageable", line_rate_gbs=55.0)
    assert data[:8] == PNG_MAGIC and len(data) > 20_000
    img = Image.open(io.BytesIO(data))
    img.verify()
    w, h = Image.open(io.BytesIO(data)).size
    assert w >= 1400 and 500 <= h <= 2000


def test_lanes_legend_and_panels():
    fig = render_timeline(phases(), samples(), title="unit run", line_rate_gbs=55.0)
    axes = fig.get_axes()
    assert len(axes) == 3  # lanes, PCIe, SM
    lanes = [t.get_text() for t in axes[0].get_yticklabels()]
    assert lanes == ["worker 1", "worker 0", "synthesis 1", "synthesis 0"]
    legend = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert legend[:4] == ["synthesis (CPU)", "lock wait", "upload H2D", "NTT"]
    assert "barrier (GPU idle, waits on CPU prep)" in legend and "prep (CPU thread)" in legend
    assert axes[1].get_ylabel() == "PCIe GB/s" and axes[2].get_ylabel() == "SM active %"
    pcie_labels = [t.get_text() for t in axes[1].get_legend().get_texts()]
    assert pcie_labels == ["PCIe RX (H2D)", "PCIe TX (D2H)", "pinned line rate 55 GB/s"]
    assert fig._suptitle.get_text() == "unit run"
    assert axes[-1].get_xlabel() == "time since the first phase (s)"


def test_without_samples_only_the_lanes():
    fig = render_timeline(phases(), None, title="no samples")
    assert len(fig.get_axes()) == 1
    assert timeline_png(phases(), None, title="x")[:8] == PNG_MAGIC


def test_no_phases_is_a_clear_error():
    from gpuscope.errors import NoDataError  # (exit 4 "nothing to draw", issue 34 class 13)

    with pytest.raises(NoDataError, match="no phase intervals"):
        render_timeline(phases().iloc[:0], None, title="x")


def test_lanes_clip_jitter_spill_real_overlap_and_drop_zero_length():
    import pandas as pd

    from gpuscope.reports.lanes import assign_lanes

    rows = [  # worker 0: msm then batch_add overlapping by 0.3 ms (ms rounding), a real overlap, a zero-length
        (0, 0, 0, "msm", 0.0, 1.0), (0, 0, 0, "batch_add", 0.9997, 1.4), (0, 0, 0, "held", 0.5, 1.2),
        (0, 0, 0, "barrier", 1.4, 1.4),
        (-1, -1, -1, "h2d", 2.0, 3.0), (-1, -1, -1, "b_g2_msm", 2.0, 2.5), (-1, -1, -1, "prep", 2.0, 2.7),
    ]
    ph = pd.DataFrame(rows, columns=["worker", "gpu", "partition", "phase", "t_start", "t_end"])
    lanes = {lane.label: lane for lane in assign_lanes(ph)}
    assert list(lanes) == ["worker 0", "worker 0 (2)", "GPU (worker not logged)", "CPU (worker not logged)"]
    w0 = lanes["worker 0"].main
    assert list(w0["phase"]) == ["msm", "batch_add"] and w0["t_start"].iloc[1] == 1.0  # clipped
    assert list(lanes["worker 0 (2)"].main["phase"]) == ["held"]
    assert list(lanes["CPU (worker not logged)"].side["phase"]) == ["prep"]


def test_attribute_workers_from_timeline_gpu_intervals():
    import pandas as pd

    from gpuscope.analysis.evidence.log.attribution import attribute_workers

    gpu = pd.DataFrame({"worker": [0, 1], "gpu": -1, "partition": [0, 1], "phase": "gpu",
                        "t_start": [10.0, 14.0], "t_end": [13.0, 16.0]})
    ph = pd.DataFrame({"worker": -1, "gpu": [0, 0, -1, -1, 0], "partition": -1,
                       "phase": ["h2d", "msm", "lock_wait", "prep", "tail_msm"],
                       "t_start": [10.0, 14.5, 11.0, 11.0, 20.0], "t_end": [12.0, 15.0, 14.0, 12.0, 21.0]})
    out = attribute_workers(ph, gpu)
    # h2d inside worker 0's interval; msm inside worker 1's; the lock wait ends as worker 1
    # starts; prep is CPU-side; the tail_msm is outside every interval.
    assert list(out["worker"]) == [0, 1, 1, -1, -1]
    assert list(ph["worker"]) == [-1] * 5  # input untouched


def test_window_keeps_the_run_time_scale_and_sparse_gpm_draws_as_steps():
    ph, sm = phases(), samples()
    origin = float(ph["t_start"].min())
    sm = sm.copy()
    sm.loc[sm.index[1::2], "sm_active"] = float("nan")  # GPM answers every other row
    fig = render_timeline(ph, sm, title="w", origin=origin, view=(origin + 0.2, origin + 0.6))
    assert fig.axes[-1].get_xlim() == pytest.approx((0.2, 0.6))
    fig = render_timeline(ph, sm, title="all")
    xs = fig.axes[-1].lines[0].get_xdata()
    assert len(xs) == sm["sm_active"].notna().sum()  # NaN rows dropped, not drawn as gaps


def test_lanes_with_more_intervals_than_pixels_are_drawn_aggregated():
    """A lane of 20,000 phases: stacked share columns (one image per lane row), a note that
    says so, the legend of the phases drawn; few phases keep their rectangles."""
    import numpy as np
    import pandas as pd

    from gpuscope.reports import plot as P

    n = 20_000
    t = np.arange(n, dtype=float)
    ph = pd.DataFrame({"worker": 0, "gpu": 0, "partition": np.arange(n), "phase": np.where(t % 4 < 1, "h2d", "msm"),
                       "t_start": 1.7e9 + t, "t_end": 1.7e9 + t + 0.5})
    fig = P.render_timeline(ph, None, title="big")
    ax = fig.axes[0]
    assert len(ax.images) == 1 and not ax.collections
    assert any("aggregated" in txt.get_text() for txt in ax.texts)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 0 (20,000)"]  # too thin to see: counted
    assert {h.get_label() for h in ax.get_legend().legend_handles} == {"upload H2D", "MSM"}
    labels, sh = P.shares(ph, 1.7e9, 1.7e9 + n, 100)
    assert labels == ["upload H2D", "MSM"]
    assert np.allclose(sh.sum(axis=0), 0.5) and np.allclose(sh[0], 0.125)  # a quarter of the busy half
    small = P.render_timeline(ph.iloc[:50], None, title="small")
    assert not small.axes[0].images and small.axes[0].collections
    assert [t.get_text() for t in small.axes[0].get_yticklabels()] == ["worker 0"]
