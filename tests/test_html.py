"""The self-contained HTML report: structure, escaping, inlined PNG, and a golden file. (In a
real browser, against the console and the JSON: tests/test_html_browser.py.)"""

from __future__ import annotations

import base64
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuscope.reports.html import analysis_html, compare_html, esc
from gpuscope.reports.plot import timeline_png
from tests.timeline_fixture import phases, samples

GOLDEN = Path(__file__).parent / "data" / "timeline" / "compare_golden.html"

DOC = {
    "a": {"label": "pinned", "source": "runs/a", "format": "cuzk", "partitions": 16, "throughput_ppm": 31.5,
          "lock_held_fraction": 0.97, "gpu_busy_fraction": 0.97, "sm_active_mean": 0.874, "upload_field": "h2d",
          "upload_ms_median": 30.2, "upload_gbs": 53.3,
          "diagnoses": [{"id": "lock_convoy", "severity": "low", "summary": "workers queue for the lock",
                         "evidence": {}, "recommendation": "fewer workers"}]},
    "b": {"label": "pageable <x>", "source": "runs/b", "format": "cuzk", "partitions": 16, "throughput_ppm": 16.9,
          "lock_held_fraction": 0.99, "gpu_busy_fraction": 0.99, "sm_active_mean": 0.512, "upload_field": "h2d",
          "upload_ms_median": 1720.0, "upload_gbs": 0.94123,
          "diagnoses": [{"id": "h2d_bound", "severity": "high", "summary": "uploads take 46% of the lock",
                         "evidence": {}, "recommendation": "pin the buffers"}]},
    "components": {"mutex_held": {"a_count": 16, "b_count": 16, "a_median_ms": 1677.0, "a_p10_ms": 1425.0, "a_p90_ms": 3034.0,
                                  "b_median_ms": 3258.5, "b_p10_ms": 1994.0, "b_p90_ms": 5030.0,
                                  "ratio": 1.943, "ci_low": 1.44, "ci_high": 2.43},
                   "prep_msm": {"a_count": 16, "b_count": 0, "a_median_ms": 40.0, "a_p10_ms": 39.0, "a_p90_ms": 41.0,
                                "b_median_ms": None, "b_p10_ms": None, "b_p90_ms": None, "ratio": None,
                                "ci_low": None, "ci_high": None}},
    "verdict": "pinned cut mutex_held 1.9x (1.4-2.4), throughput +1.9x",
    "bootstrap": {"n": 2000, "seed": 0, "confidence": 0.95},
    "prediction": {"from": "runs/b", "against": "pinned", "held_ms_predicted": 1449.0, "held_ms_measured": 1677.0,
                   "held_error": -0.136, "throughput_ppm_predicted": 35.5, "throughput_ppm_measured": 31.6,
                   "throughput_error": 0.124},
}


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.srcs, self.open = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a:
                self.srcs.append(a[k])


def test_compare_html_golden():
    got = compare_html(DOC, {"pinned": None})
    if os.environ.get("GPUSCOPE_REGEN_GOLDEN"):  # pragma: no cover - deliberate regeneration
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text()


def test_compare_html_speaks_to_a_reader():
    """The console's rows and words, not JSON keys; the rows the console drops dropped; the
    significance mark; each side's diagnosis beside the report."""
    got = compare_html(DOC, {"pinned": None})
    for raw in ("throughput_ppm", "gpu_busy_fraction", "lock_held_fraction", "upload_ms_median", "sm_active_mean"):
        assert raw not in got
    assert "GPU lock held (share of span)" in got and "SM activity (NVML GPM, mean)" in got
    assert "87.4%" in got and "51.2%" in got and "0.9 GB/s" in got and "0.94123" not in got
    assert "prep_msm" not in got  # one side has none: the console drops the row, so does the page
    assert "<td class='txt nw'>*</td>" in got and "*: the 95% interval excludes 1" in got
    assert "Diagnosis: A pinned" in got and "uploads take 46% of the lock" in got
    main = got.split("<main>")[1].split("</main>")[0]
    assert "uploads take 46%" not in main  # the console's compare has no diagnoses: they sit beside it


def test_self_contained_with_inlined_png_and_escaped_text():
    png = timeline_png(phases(), samples(), title="t")
    text = compare_html(DOC, {"pinned": png, "pageable <x>": None})
    p = _Collect()
    p.feed(text)
    assert p.tags.count("table") == 3 and p.tags.count("img") == 1  # components, run, what-if
    assert all(s.startswith("data:image/png;base64,") for s in p.srcs)  # nothing fetched from outside
    data = base64.b64decode(p.srcs[0].split(",", 1)[1])
    assert data == png
    assert "pageable <x>" not in text and "pageable &lt;x&gt;" in text
    assert "-13.6%" in text and "+12.4%" in text


def test_analysis_html_from_a_real_analysis():
    from gpuscope.analysis import analyze
    from gpuscope.sources import open_source
    from tests.conftest import EXAMPLES

    a = analyze(open_source(EXAMPLES / "article_excerpt.log"))
    text = analysis_html(a, None)
    assert "<h2>Diagnosis</h2>" in text and "h2d_bound" in text
    assert re.search(r"<tr class='b'><td class='txt'>held</td><td class='num'>14,460.0</td>", text), text[:3000]
    assert "(no picture: the input has nothing on a time axis)" in text
    assert "idle_gaps" not in text and "<h2>Bounds</h2>" in text


def test_png_guard_and_escaping():
    with pytest.raises(ValueError):
        compare_html(DOC, {"x": b"GIF89a not a png"})
    assert esc("<a href='x'>") == "&lt;a href=&#x27;x&#x27;&gt;"
    from rich.text import Text

    from gpuscope.reports.html_render import html
    assert html([Text("[red]x[/red] <b>")]) == ["<p>[red]x[/red] &lt;b&gt;</p>"]  # no markup read


def test_compare_report_draws_both_timelines_on_one_x_scale(monkeypatch):
    from types import SimpleNamespace

    from gpuscope.reports import html as H
    from gpuscope.reports import plot

    calls = []
    png = timeline_png(phases(), None, title="t")
    monkeypatch.setattr(plot, "timeline_png", lambda ph, sm, **kw: calls.append(kw) or png)
    short, long_ = phases(), phases()
    long_ = long_.assign(t_end=long_["t_end"] + (long_["t_end"].max() - long_["t_start"].min()))
    sides = [SimpleNamespace(label="a", source="x", phases=short, samples=None),
             SimpleNamespace(label="b", source="y", phases=long_, samples=None)]
    H.compare_report(DOC, sides)
    widths = {kw["view"][1] - kw["view"][0] for kw in calls}
    assert len(calls) == 2 and len(widths) == 1
    assert widths.pop() == float(long_["t_end"].max() - long_["t_start"].min())


def test_the_html_of_a_trace_and_of_samples_alone(tmp_path):
    from typer.testing import CliRunner

    from gpuscope.cli import app
    from tests.conftest import DATA

    for src, want, absent in (
        (DATA / "h200_foreign" / "traces" / "train_slow.json.gz", ["GPU activity over the traced span", "Copies",
                                                                   "Longest GPU idle gaps", "Top kernels"],
         ["time split", "Bounds"]),
        (DATA / "h200_foreign" / "runs" / "train_slow" / "samples.csv", ["GPU activity from NVML samples",
                                                                          "PCIe, memory, power, clocks"],
         ["time split", "Components"]),
    ):
        out = tmp_path / "r.html"
        r = CliRunner().invoke(app, ["analyze", str(src), "--html", str(out)])
        assert r.exit_code == 0, r.stderr
        text = out.read_text()
        assert all(w in text for w in want) and not any(a in text for a in absent)
        assert "<img alt='timeline'" in text


def test_compare_html_of_traces_and_of_samples(tmp_path):
    from typer.testing import CliRunner

    from gpuscope.cli import app
    from tests.conftest import DATA

    fd = DATA / "h200_foreign"
    cases = ((fd / "traces" / "copy_pageable.json.gz", fd / "traces" / "copy_pinned.json.gz",
              ["ProfilerStep", "Copies (profiler trace)", "GPU activity", "*: the 95% interval excludes 1"]),
             (fd / "runs" / "train_slow" / "samples.csv", fd / "runs" / "train_fast" / "samples.csv",
              ["GPU activity", "busier"]))
    for a, b, want in cases:
        out = tmp_path / "c.html"
        r = CliRunner().invoke(app, ["compare", str(a), str(b), "--html", str(out), "--bootstrap", "200"])
        assert r.exit_code == 0, r.stderr
        text = out.read_text()
        assert all(w in text for w in want) and text.count("<img") == 2
        assert "<h2>Run</h2>" not in text


def test_hostile_names_in_a_table_are_shown_literally():
    from gpuscope.reports.html_render import html
    from gpuscope.reports.safe_text import LiteralTable, name

    t = LiteralTable(title="Components <b>")
    t.add_column("component")
    t.add_column("ms", justify="right", no_wrap=True)
    t.add_row(name("<img src=x onerror=alert(1)>\x1b[31m"), "[red]5[/red]")
    got = "".join(html([t]))
    assert "<img" not in got and "&lt;img" in got and "\u241b[31m" in got and "\x1b" not in got
    assert "[red]5[/red]" in got and "<h2>Components &lt;b&gt;</h2>" in got
    assert "<td class='num nw'>[red]5[/red]</td>" in got
