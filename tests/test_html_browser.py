"""Every kind of HTML report rendered in a real browser (headless chromium, tests/browser.py):
no horizontal overflow at 1280 and 800 px, every console section present, nothing unescaped,
and the page's text, as the browser lays it out, agrees with the console figure for figure
and with the JSON for the figures the JSON holds.

The page is the console's report (reports.html_render), so the numbers of <main> must be the
numbers `analyze -v` (with --what-if) or `compare` print: the same multiset of figures."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.reports.numbers import ms, pct, secs
from tests import browser
from tests.conftest import DATA, EXAMPLES

BIN, WHY = browser.chromium()
pytestmark = pytest.mark.skipif(BIN is None, reason=WHY)

FOREIGN, BOUNDS = DATA / "h200_foreign", DATA / "h200_bounds"
WIDE = {"COLUMNS": "320"}  # the console unwrapped, so a figure is never cut across lines

# (name, report kind, argv after the command)
CASES = [
    ("cuzk_log", "analyze", [EXAMPLES / "cuzk_daemon.log"]),
    ("article_log", "analyze", [EXAMPLES / "article_excerpt.log"]),
    ("training_run", "analyze", [FOREIGN / "runs" / "train_slow"]),
    ("smi_query", "analyze", [BOUNDS / "smi" / "hbm_bound_query.csv"]),
    ("smi_dmon", "analyze", [BOUNDS / "smi" / "upload_pageable_dmon.txt"]),
    ("samples_only", "analyze", [FOREIGN / "runs" / "copy_pageable" / "samples.csv"]),
    ("trace", "analyze", [FOREIGN / "traces" / "train_slow.json.gz"]),
    ("run_with_trace", "analyze", [BOUNDS / "runs" / "upload_pageable", "--trace",
                                   BOUNDS / "traces" / "upload_pageable.json.gz"]),
    ("compare_training", "compare", [FOREIGN / "runs" / "train_slow", FOREIGN / "runs" / "train_fast"]),
    ("compare_cuzk", "compare", [DATA / "h200_contention" / "pinned-c8", DATA / "h200_contention" / "pageable-c8"]),
    ("compare_traces", "compare", [FOREIGN / "traces" / "copy_pageable.json.gz",
                                   FOREIGN / "traces" / "copy_pinned.json.gz"]),
]
runner = CliRunner()


def _invoke(*args, env=None):
    r = runner.invoke(app, [str(a) for a in args], env=env)
    assert r.exit_code == 0, r.output
    return r.stdout


def _report(tmp_path_factory, name, kind, argv):
    out = tmp_path_factory.mktemp(name) / f"{name}.html"
    extra = ["--bootstrap", "300"] if kind == "compare" else []
    _invoke(kind, *argv, "--html", out, *extra)
    console = _invoke(kind, *argv, *(["--what-if"] if kind == "analyze" else []), *extra, env=WIDE)
    doc = json.loads(_invoke(kind, *argv, "--json", *extra))
    return out, console, doc


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def report(request, tmp_path_factory):
    name, kind, argv = request.param
    page, console, doc = _report(tmp_path_factory, name, kind, argv)
    return {"name": name, "kind": kind, "page": page, "console": console, "doc": doc,
            "r1280": browser.render(page, 1280), "r800": browser.render(page, 800)}


FIGURE = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")


def _figures(text: str) -> Counter:
    return Counter(FIGURE.findall(text))


def _console_part(console: str) -> str:
    # what the page leaves out: `--what-if` of a source with nothing to project says so on the console
    return "\n".join(ln for ln in console.splitlines() if not ln.startswith("what-if: not available"))


def test_no_horizontal_overflow_at_1280_and_800(report):
    for w in ("r1280", "r800"):
        r = report[w]
        assert r["scrollWidth"] <= r["innerWidth"], (report["name"], w, r["scrollWidth"], r["innerWidth"])
    assert report["r1280"]["scrolling_tables"] == [], report["r1280"]["scrolling_tables"]
    assert report["r800"]["scrolling_tables"] == [], report["r800"]["scrolling_tables"]
    for natural, shown in report["r800"]["images"]:
        assert 0 < shown <= 800 and natural > 0


def _console_titles(console: str) -> list[str]:
    """The console's section titles: each table's (the line three above its header's rule) and
    the bold section lines (Diagnosis)."""
    lines = console.splitlines()
    out = [lines[i - 3].strip() for i, ln in enumerate(lines) if i >= 3 and set(ln.strip()) == {"─"}]
    return out + [ln.strip() for ln in lines if ln.strip() in ("Diagnosis",)]


def test_every_console_section_is_on_the_page(report):
    heads = [h.strip() for h in report["r1280"]["h2"]]
    titles = _console_titles(report["console"])
    assert titles, report["console"][:400]
    missing = [t for t in titles if not any(t in h for h in heads)]  # a long title wraps on the console
    assert not missing, (report["name"], missing, heads)
    if report["kind"] == "analyze":
        assert "Diagnosis" in heads and "Timeline picture" in heads


def test_the_page_has_the_consoles_figures_and_no_other(report):
    page, con = _figures(report["r1280"]["text"]), _figures(_console_part(report["console"]))
    assert page == con, (report["name"], {"only on the page": page - con, "only on the console": con - page})


def test_the_significance_mark_is_where_the_console_has_it(report):
    text = report["r1280"]["text"]
    starred = sum(1 for ln in report["console"].splitlines() if ln.rstrip().endswith(" *"))
    assert sum(1 for ln in text.splitlines() if ln.rstrip().endswith("\t*")) == starred
    if starred:
        assert "*: the 95% interval excludes 1" in text


def test_nothing_unescaped_and_no_raw_json_keys(report):
    text = report["r1280"]["text"]
    for raw in ("wall_s", "synth_parallelism", "rx_share_of_line_rate", "gpu_busy_fraction", "busy_fraction",
                "throughput_ppm", "<td", "<span", "&lt;", "&amp;", "[bold", "[/"):
        assert raw not in text, (report["name"], raw)
    assert not re.search(r"\d\.\d+e-\d\d", text)  # no 1.61e-05


def test_a_training_loop_is_not_told_in_the_provers_words(report):
    if report["name"] not in ("training_run", "compare_training"):
        pytest.skip("a training loop's words only")
    text = report["r1280"]["text"]
    for word in ("records (complete tenures)", "GPU lock held", "tenure", "mutex_held", "worker not logged"):
        assert word not in text, word


def _at(doc, path):
    if path and path[0] == "@activity":  # the activity a report shows: the trace's (exact), else the samples'
        doc = (doc.get("trace") or {}).get("activity") or (doc.get("samples") or {}).get("activity")
        path = path[1:]
    for k in path:
        if isinstance(doc, list):
            doc = doc[k] if len(doc) > k else None
        elif isinstance(doc, dict):
            doc = doc.get(k)
        if doc is None:
            return None
    return doc


# (JSON path, how the console writes it): what the JSON holds, the page must show
JSON_FIGURES = [
    (("log", "split", "held_ms"), lambda v: ms(v)),
    (("log", "timeline", "wall_s"), secs),
    (("log", "records"), lambda v: f"{v}" if v else None),
    (("@activity", "busy_fraction"), pct),
    (("@activity", "idle_fraction"), pct),
    (("@activity", "active", "busy_fraction"), pct),
    (("trace", "top_kernels", 0, "count"), lambda v: f"{v:,}"),
    (("trace", "top_kernels", 0, "share"), pct),
    (("a", "throughput_ppm"), lambda v: f"{v:.1f}"),
    (("a", "activity", "busy_fraction"), pct),
    (("b", "activity", "busy_fraction"), pct),
    (("a", "memcpy", 0, "gbs"), lambda v: f"{v:.1f}"),
    (("b", "throughput_ppm"), lambda v: f"{v:.1f}"),
]


def test_the_page_shows_the_jsons_figures(report):
    text = report["r1280"]["text"]
    shown = 0
    for path, write in JSON_FIGURES:
        v = _at(report["doc"], path)
        if v is None or isinstance(v, bool):
            continue
        want = write(v)
        if want is None or want == "-":
            continue
        assert want in text, (report["name"], path, v, want)
        shown += 1
    assert shown >= 1, report["name"]


def test_screenshots_of_each_report_kind(report, tmp_path):
    for width in (1280, 800):
        height = report[f"r{width}"]["scrollHeight"]
        png = browser.screenshot(report["page"], tmp_path / f"{report['name']}-{width}.png", width, height)
        from PIL import Image

        with Image.open(png) as im:
            assert im.size[0] == width and im.size[1] >= 600


def test_indented_rows_keep_their_indent(report):
    """A table's sub-rows ("  idle gaps total" under "idle gaps") are indented on the page as on
    the console."""
    subs = [ln.split("  ")[1] for ln in report["console"].splitlines()
            if ln.startswith("   ") and not ln.startswith("    ") and len(ln.split("  ")) > 2 and ln.split("  ")[1]]
    subs = [s.strip() for s in subs if s.strip() and not s.strip()[0].isdigit()]
    lines = report["r1280"]["text"].splitlines()
    for s in subs[:5]:
        if any(ln.lstrip().startswith(s) for ln in lines):
            assert any(ln.startswith("  " + s) for ln in lines), (report["name"], s)
