"""The PNG timeline: a real PNG of sensible size, lanes per worker, legend, sample panels."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from reports.plot import render_timeline, timeline_png, write_timeline_png
from tests.timeline_fixture import phases, samples

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_writes_a_real_png_with_samples(tmp_path):
    out = tmp_path / "timeline.png"
    size = write_timeline_png(out, phases(), samples(), title="unit: pageable", line_rate_gbs=55.0)
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC and size == len(data) > 20_000
    img = Image.open(io.BytesIO(data))
    img.verify()
    w, h = Image.open(io.BytesIO(data)).size
    assert w >= 1400 and 500 <= h <= 2000


def test_lanes_legend_and_panels():
    fig = render_timeline(phases(), samples(), title="unit run", line_rate_gbs=55.0)
    axes = fig.get_axes()
    assert len(axes) == 3  # lanes, PCIe, SM
    lanes = [t.get_text() for t in axes[0].get_yticklabels()]
    assert lanes == ["GPU0 worker 1", "GPU0 worker 0", "synthesis 1", "synthesis 0"]
    legend = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert legend[:4] == ["synthesis (CPU)", "lock wait", "upload H2D", "NTT"]
    assert "barrier (GPU idle, waits on CPU prep)" in legend and "prep (CPU thread)" in legend
    assert axes[1].get_ylabel() == "PCIe GB/s" and axes[2].get_ylabel() == "SM active %"
    pcie_labels = [t.get_text() for t in axes[1].get_legend().get_texts()]
    assert pcie_labels == ["PCIe RX (H2D)", "PCIe TX (D2H)", "pinned line rate 55 GB/s"]
    assert fig._suptitle.get_text() == "unit run"
    assert axes[-1].get_xlabel() == "time since first phase (s)"


def test_without_samples_only_the_lanes():
    fig = render_timeline(phases(), None, title="no samples")
    assert len(fig.get_axes()) == 1
    assert timeline_png(phases(), None, title="x")[:8] == PNG_MAGIC


def test_no_phases_is_a_clear_error():
    with pytest.raises(ValueError, match="no phase intervals"):
        render_timeline(phases().iloc[:0], None, title="x")
