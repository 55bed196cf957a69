"""Issue 33 class 7 in the picture: a log printing every K-th step (the PyTorch examples'
ProgressMeter at print-freq 10) is drawn as what it says, each printed step once, and the
caption says each mark stands for K steps and that the K - 1 between two marks are not drawn,
so the gaps read as unprinted steps, not as a host idle 90% of the time. A log printing every
step gets no such caption (the false-fire side)."""

from __future__ import annotations

from gpuscope.analysis.timeline_view import timeline_view
from gpuscope.reports.plot import render_timeline
from gpuscope.sources import open_source
from tests.test_steps_per_record import _progressmeter


def _caption(tv) -> str:
    fig = render_timeline(tv.phases, tv.samples, title="t", origin=tv.origin, lane_noun=tv.lane_noun,
                          steps_per_record=tv.steps_per_record)
    return fig.axes[-1].get_xlabel()


def test_every_tenth_step_is_said_under_the_picture(tmp_path):
    tv = timeline_view(open_source(_progressmeter(tmp_path / "b.log", 400, 10)))
    assert tv.steps_per_record == 10 and tv.records == 40
    cap = _caption(tv)
    assert "one step in 10" in cap and "standing for 10" in cap and "the 9 between two marks" in cap
    # drawn: the 40 printed steps' phases, nothing for the unprinted ones
    assert tv.phases["t_start"].min() >= 0 and len(tv.phases) <= 40 * 3


def test_a_log_printing_every_step_has_no_such_caption(tmp_path):
    tv = timeline_view(open_source(_progressmeter(tmp_path / "a.log", 100, 1)))
    assert tv.steps_per_record == 1
    assert "one step in" not in _caption(tv)


def test_plot_of_every_tenth_step_writes_the_picture(tmp_path):
    from typer.testing import CliRunner

    from gpuscope.cli import app

    out = tmp_path / "t.png"
    r = CliRunner().invoke(app, ["plot", str(_progressmeter(tmp_path / "b.log", 400, 10)), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 1000


def test_the_title_counts_the_steps_in_all(tmp_path):
    from gpuscope.cli._common import source_title

    src = open_source(_progressmeter(tmp_path / "b.log", 400, 10))
    assert "40 records, each standing for 10 steps: 400 in all" in source_title(src, 40)
    one = open_source(_progressmeter(tmp_path / "a.log", 100, 1))
    assert "standing for" not in source_title(one, 100)
