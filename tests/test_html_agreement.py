"""Console, HTML and JSON agree figure for figure for every example and test capture: each is
analyzed once, its console report written as the terminal would (wide, unwrapped), its HTML
page's <main> read back as text (html.parser: cells, paragraphs), and the two hold the same
multiset of figures; the JSON's key figures appear on the page as the console writes them.
(The same in a real browser, for one capture of each kind: tests/test_html_browser.py.)"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from gpuscope.reports.html_render import console_text
from tests.conftest import DATA, EXAMPLES
from tests.test_html_browser import JSON_FIGURES, _at, _figures

CAPTURES = sorted(
    [*EXAMPLES.glob("*.log"),
     *(DATA / "h200_bounds" / "smi").glob("*"),
     *(p for p in (DATA / "h200_bounds" / "runs").iterdir() if p.is_dir()),
     *(DATA / "h200_bounds" / "traces").iterdir(),
     *(p for p in (DATA / "h200_foreign" / "runs").iterdir() if p.is_dir()),
     *(DATA / "h200_foreign" / "traces").iterdir(),
     DATA / "h200_foreign" / "train_slow_dmon.txt",
     *(p for p in (DATA / "h200_contention").iterdir() if p.is_dir())])


class _MainText(HTMLParser):
    """The text of <main>, a tab between cells and a line per row or paragraph."""

    BREAKS = {"p", "tr", "h2", "div", "br", "li"}

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.out = False, []

    def handle_starttag(self, tag, attrs):
        if tag == "main":
            self.inside = True
        elif self.inside and tag in ("td", "th"):
            self.out.append("\t")
        elif self.inside and tag in self.BREAKS:
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag == "main":
            self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.out.append(data)


def _main_text(page: str) -> str:
    p = _MainText()
    p.feed(page)
    return "".join(p.out)


@pytest.mark.parametrize("path", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_console_html_and_json_agree(path):
    from gpuscope.analysis import analyze
    from gpuscope.reports.console import summary_renderables
    from gpuscope.reports.html import analysis_html
    from gpuscope.sources import open_source

    a = analyze(open_source(path))
    console = console_text(summary_renderables(a), width=320)
    page = analysis_html(a, None)
    text = _main_text(page)
    assert _figures(text) == _figures(console), {"only on the page": _figures(text) - _figures(console),
                                                 "only on the console": _figures(console) - _figures(text)}
    doc = a.document()
    for p, write in JSON_FIGURES:
        v = _at(doc, p)
        if v is None or isinstance(v, bool):
            continue
        want = write(v)
        if want and want != "-":
            assert want in text, (p, v, want)
