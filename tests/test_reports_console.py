"""Golden-text tests of the terminal tables (rich Console, width 100, no colour).

Regenerate after an intended change: GPUSCOPE_UPDATE_GOLDEN=1 pytest tests/test_reports_console.py
"""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.parsers import parse_log
from gpuscope.reports import console as C
from tests.analysis_builders import LogBuilder, src
from tests.conftest import DATA, EXAMPLES

GOLDEN = DATA / "golden"


def _render(a, **kw) -> str:
    con = Console(width=100, color_system=None, record=True, file=io.StringIO(), highlight=False)
    C.render_summary(a, con, **kw)
    return con.export_text()


def _check(name: str, text: str) -> None:
    p = GOLDEN / name
    if os.environ.get("GPUSCOPE_UPDATE_GOLDEN"):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    assert p.exists(), f"missing golden {p} (run with GPUSCOPE_UPDATE_GOLDEN=1)"
    assert text == p.read_text()


@pytest.fixture(scope="module")
def article():
    parsed = parse_log(EXAMPLES / "article_excerpt.log")
    parsed.source = "examples/article_excerpt.log"   # stable across checkouts
    return analyze(src(parsed), AnalyzeOptions(abc_bytes=int(1.5 * 2**30)))


def test_golden_article_summary(article):
    _check("article_summary.txt", _render(article))


def test_golden_article_records_verbose(article):
    text = _render(article, records=True, verbose=True)
    _check("article_records_verbose.txt", text)
    assert "inconsistent (+521)" in text


def test_golden_timeline_and_bounds():
    from tests.test_analysis_timeline import _timeline_log

    b = _timeline_log()
    b.tenure(2000, ntt_kernels=800, msm_invoke=1000)
    b.value("prep_msm", 1800)
    _check("timeline_summary.txt", _render(analyze(src(b.build("timeline-fixture")))))


def test_formatters():
    assert C.ms(1354.5) == "1,354.5" and C.ms(float("nan")) == "-"
    assert C.cms(14460.0) == "14,460" and C.cms(12.34) == "12.3"
    assert C.pct(8613 / 14460) == "59.6%"
    assert C.bar(0.5, 10) == "█" * 5 and C.bar(0.001, 10) == "█" and C.bar(0, 10) == ""
    assert C.bar(float("nan")) == "" and C.bar(2.0, 10) == "█" * 10


def test_no_rule_fired_and_no_records_text():
    b = LogBuilder()
    b.value("prep_msm", 10)
    text = _render(analyze(src(b.build("side-only"))))
    assert "nothing stands out" in text
    assert "GPU-lock time split" not in text  # no tenures: no split table
