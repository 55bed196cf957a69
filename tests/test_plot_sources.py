"""Pictures and exports of every source: an nvidia-smi capture's utilization.gpu drawn and
exported (its only activity figure), dmon with and without `-o DT`, each GPU its own colour
with its legend clear of the data, the format by the suffix, and a clear exit when there is
nothing to export."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from tests.conftest import DATA

SMI = DATA / "h200_bounds" / "smi"
RUNS = DATA / "h200_foreign" / "runs"
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _strip_date_time(src, dst):
    """The dmon capture as `nvidia-smi dmon` writes it without `-o DT`."""
    out = []
    for line in src.read_text().splitlines():
        if line.startswith("#"):
            head, *rest = line[1:].split()
            out.append("#" + " ".join(rest[1:] if head in ("Date", "YYYYMMDD") else [head, *rest]))
        else:
            out.append(" ".join(line.split()[2:]))
    dst.write_text("\n".join(out) + "\n")
    return dst


def _two_gpus(src, dst):
    """A dmon capture of two GPUs: every row again as GPU 1, its utilization halved."""
    out = []
    for line in src.read_text().splitlines():
        out.append(line)
        if not line.startswith("#"):
            f = line.split()
            f[2] = "1"
            f[6] = str(int(f[6]) // 2)  # sm %: utilization.gpu
            out.append(" ".join(f))
    dst.write_text("\n".join(out) + "\n")
    return dst


def _figure(path):
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.reports.plot import render_timeline
    from gpuscope.sources import open_source

    tv = timeline_view(open_source(path))
    return tv, render_timeline(tv.phases, tv.samples, title="t", origin=tv.origin, intervals=tv.intervals,
                               counters=tv.counters, line_rate_gbs=tv.line_rate_gbs, lane_noun=tv.lane_noun)


def _legend_texts(ax):
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg is not None else []


@pytest.mark.parametrize("name", ["hbm_bound_query.csv", "hbm_bound_dmon.txt"])
def test_an_nvidia_smi_capture_draws_its_utilization(name):
    tv, fig = _figure(SMI / name)
    act = [ax for ax in fig.axes if ax.get_ylabel() == "activity %"]
    assert act, [ax.get_ylabel() for ax in fig.axes]
    assert "utilization.gpu (a kernel ran)" in _legend_texts(act[0])
    # the drawn line reaches what analyze reads: the capture's busy stretch at ~100%
    ys = [max(line.get_ydata()) for line in act[0].get_lines()]
    assert max(ys) >= 95


def test_legends_sit_right_of_their_panels_clear_of_the_data():
    _, fig = _figure(SMI / "hbm_bound_dmon.txt")
    fig.canvas.draw()
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        assert leg.get_window_extent().x0 >= ax.get_window_extent().x1 - 1, ax.get_ylabel()


def test_each_gpu_has_its_own_colour_named_in_one_legend(tmp_path):
    tv, fig = _figure(_two_gpus(SMI / "hbm_bound_dmon.txt", tmp_path / "two_dmon.txt"))
    act = next(ax for ax in fig.axes if ax.get_ylabel() == "activity %")
    colours = {line.get_color() for line in act.get_lines()}
    assert len(colours) == 2
    names = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert names == ["GPU 0", "GPU 1"]
    gpu_colours = {h.get_color() for leg in fig.legends for h in leg.legend_handles}
    assert gpu_colours == colours
    # the series are told apart by their style, drawn in black in the panel's legend
    pcie = next(ax for ax in fig.axes if ax.get_ylabel() == "PCIe GB/s")
    from matplotlib.lines import Line2D

    series = [h for h in pcie.get_legend().legend_handles if isinstance(h, Line2D)]
    assert series and {h.get_color() for h in series} == {"black"}


def test_dmon_without_date_and_time_plots_and_exports(tmp_path):
    f = _strip_date_time(SMI / "hbm_bound_dmon.txt", tmp_path / "nodt_dmon.txt")
    r = cli("plot", f, "-o", tmp_path / "t.png")
    assert r.exit_code == 0, r.output
    assert "no wall-clock time" in r.output
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = cli("export", f, "--perfetto", tmp_path / "t.json")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["metadata"]["t0_epoch_s"] is None
    util = [e for e in doc["traceEvents"] if e.get("name") == "utilization.gpu %"]
    vals = [e["args"]["gpu_util_pct"] for e in util]  # one event per change of the 16 rows' figure, and the last
    assert 2 <= len(util) <= 16 and max(vals) == 100 and all(a != b for a, b in zip(vals[:-2], vals[1:-1], strict=True))


@pytest.mark.parametrize("name", ["hbm_bound_query.csv", "hbm_bound_dmon.txt"])
def test_export_of_a_capture_has_its_counter_tracks(tmp_path, name):
    r = cli("export", SMI / name, "--perfetto", tmp_path / "t.json")
    assert r.exit_code == 0, r.output
    assert " 0 counter events" not in r.output
    doc = json.loads((tmp_path / "t.json").read_text())
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
    assert {"utilization.gpu %", "power W", "SM clock MHz", "memory used MiB"} <= names


def test_nothing_to_export_is_exit_4_and_writes_nothing(tmp_path):
    f = tmp_path / "samples.csv"
    f.write_text("t_wall,t_mono,gpu,mem_clock_mhz\n1796168000.0,0,0,\n1796168001.0,1,0,\n")
    r = cli("export", f, "--perfetto", tmp_path / "t.json")
    assert r.exit_code == 4 and "nothing to export" in r.output
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize(("suffix", "magic"), [(".svg", b"<?xml"), (".pdf", b"%PDF"), (".png", b"\x89PNG"),
                                               (".jpg", b"\xff\xd8"), (".eps", b"%!PS")])
def test_the_suffix_picks_the_format(tmp_path, suffix, magic):
    out = tmp_path / f"t{suffix}"
    r = cli("plot", SMI / "hbm_bound_dmon.txt", "-o", out)
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[: len(magic)] == magic
    assert "PostScript backend" not in r.output


@pytest.mark.parametrize("name", ["t.foo", "t", "t.PNG.txt"])
def test_an_unknown_suffix_is_refused_before_reading(tmp_path, name):
    r = cli("plot", tmp_path / "missing-input.log", "-o", tmp_path / name)
    assert r.exit_code == 2 and "say the picture format by the suffix" in r.output and ".svg" in r.output
    assert not (tmp_path / name).exists()


def test_a_training_loop_lane_is_not_named_by_the_provers_worker():
    tv, fig = _figure(RUNS / "train_slow")
    lanes = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert lanes == ["host (CPU) work", "GPU work"]  # drawn bottom up
    assert not any("worker" in lab for lab in lanes)


def test_ranks_sharing_a_gpu_keep_their_own_busy_track(tmp_path):
    """Two ranks' traces on one GPU: one busy line per rank in the picture and one counter
    track per rank in the export (their bins interleaved on one track would draw a comb)."""
    ranks2 = DATA / "h200_bounds" / "traces" / "ranks2"
    _, fig = _figure(ranks2)
    busy = next(ax for ax in fig.axes if ax.get_ylabel() == "busy %")
    assert len(busy.get_lines()) == 2 and len({ln.get_color() for ln in busy.get_lines()}) == 2
    assert [t.get_text() for t in busy.get_legend().get_texts()][:2] == ["rank 0 (GPU 0) busy", "rank 1 (GPU 0) busy"]
    for line in busy.get_lines():  # each a time series that only moves forward
        x = line.get_xdata()
        assert all(b >= a for a, b in zip(x, x[1:], strict=False))
    r = cli("export", ranks2, "--perfetto", tmp_path / "t.json")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in doc if e["name"] == "process_name"}
    for rank in (0, 1):
        pid = next(p for p, n in procs.items() if n == f"rank {rank}, GPU 0")
        ts = [e["ts"] for e in doc if e["ph"] == "C" and e["pid"] == pid]
        assert len(ts) > 100 and ts == sorted(ts)
        # the rank's streams and its own record_function ranges sit in its own processes
        threads = {e["args"]["name"] for e in doc if e["name"] == "thread_name" and procs[e["pid"]].startswith(f"rank {rank},")}
        assert f"rank {rank} stream 7" in threads and any("record_function" in t for t in threads)
    lanes = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "rank 0 stream 7" in lanes and "rank 1 stream 7" in lanes and not any("(2)" in t for t in lanes)


def test_one_record_is_one_step_in_the_title():
    from gpuscope.reports.titles import timeline_title

    assert timeline_title("x", records=1, units="steps", unit="step") == "gpuscope timeline: x (1 step)"
    assert timeline_title("x", records=3, units="steps", unit="step") == "gpuscope timeline: x (3 steps)"


def _captures():
    from tests.test_html_agreement import CAPTURES

    return CAPTURES


@pytest.mark.parametrize("path", _captures(), ids=[f"{p.parent.name}/{p.name}" for p in _captures()])
def test_every_capture_draws_and_exports(path):
    """Every example and test capture gives a picture with what it measured and a non-empty
    export, or (the article's excerpt: no time stamps) the clear 'nothing to draw'."""
    from gpuscope.analysis.timeline_view import timeline_view
    from gpuscope.errors import NoDataError
    from gpuscope.reports.trace import build_trace
    from gpuscope.sources import open_source

    src = open_source(path)
    try:
        tv = timeline_view(src)
    except NoDataError as e:
        assert path.name == "article_excerpt.log" and "nothing to draw" in str(e)
        return
    _, fig = _figure(path)
    labels = [ax.get_ylabel() for ax in fig.axes]
    doc = build_trace(tv.phases, tv.samples, counters=tv.counters, lane_noun=tv.lane_noun)
    kinds = {e["ph"] for e in doc["traceEvents"]}
    assert kinds & {"X", "C"}
    if len(tv.phases):
        assert "X" in kinds
    s = tv.samples
    if s is not None and len(s) and s["gpu_util_pct"].notna().any():
        act = next(ax for ax in fig.axes if ax.get_ylabel() in ("activity %", "SM active %"))
        assert "utilization.gpu (a kernel ran)" in _legend_texts(act), labels
        assert any(e["name"] == "utilization.gpu %" for e in doc["traceEvents"])
