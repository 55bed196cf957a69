"""The console's renderables as HTML: the report model the terminal and the page share.

Every report (analyze, compare, the what-if) is built once, as rich renderables (tables,
texts, groups: reports.console, compare_console, activity_console, trace_console); the
terminal prints them and `html(renderables)` writes the same sections, rows, words and
figures as HTML, so the page cannot say other than the console. A table becomes a heading
(its title), an HTML table (its columns' headers and justification, its rows; a bold row
stays bold, a red one is marked) and a caption; a text a paragraph (a bold one-line text, a
section title such as "Diagnosis", a heading); a group its parts in order. Every string is
escaped with its control characters made visible (reports.safe_text). No I/O.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from gpuscope.reports.safe_text import visible

# rich style words -> the page's classes (reports.html CSS)
STYLE_CLASSES = (("red", "red"), ("yellow", "yellow"), ("cyan", "cyan"), ("dim", "dim"))


def esc(v: Any) -> str:
    return _html.escape(visible(v, newlines=True), quote=True)


def _classes(style: Any) -> list[str]:
    words = str(style or "").split()
    return [cls for word, cls in STYLE_CLASSES if word in words]


def _bold(style: Any) -> bool:
    return "bold" in str(style or "").split()


def plain(r: Any) -> str:
    """The text of a cell, a header or a title: a Text's plain string, a name cell's name
    (safe_text.name), a str as it is, any other renderable as the console writes it."""
    if r is None:
        return ""
    if isinstance(r, str):
        return r
    if hasattr(r, "plain"):
        return r.plain
    if _is_name(r):
        return r.s
    return console_text([r]).rstrip("\n")


def _is_name(r: Any) -> bool:
    """A name cell (reports.safe_text.name)."""
    return isinstance(getattr(r, "s", None), str) and hasattr(r, "levels")


def inline(r: Any) -> str:
    """A Text (or str) as escaped HTML, its styled spans as <strong> / <span class>, its line
    feeds as <br>."""
    from rich.text import Text

    if _is_name(r):  # a name cell: may break after its punctuation, as the console breaks it
        pieces = re.split(r"(?<=[._#(:/,\]>-])", r.s)
        return _wrap("<wbr>".join(esc(p) for p in pieces), [r.style])
    if not isinstance(r, Text):
        return _wrap(esc(plain(r)).replace("\n", "<br>"), [getattr(r, "style", None)])
    s = r.plain
    marks: list[list[Any]] = [[] for _ in range(len(s))]
    for span in r.spans:
        for i in range(max(0, span.start), min(len(s), span.end)):
            marks[i].append(span.style)
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and marks[j] == marks[i]:
            j += 1
        out.append(_wrap(esc(s[i:j]).replace("\n", "<br>"), marks[i]))
        i = j
    return _wrap("".join(out), [r.style])


def _wrap(body: str, styles: list[Any]) -> str:
    cls = [c for st in styles for c in _classes(st)]
    if cls:
        body = f"<span class='{' '.join(dict.fromkeys(cls))}'>{body}</span>"
    if any(_bold(st) for st in styles):
        body = f"<strong>{body}</strong>"
    return body


def table_html(t: Any) -> str:
    """A rich Table: its title as <h2>, the table (scrolling inside its box when wider than the
    page), its caption."""
    out = []
    if t.title:
        out.append(f"<h2>{inline(t.title)}</h2>")
    cols = t.columns
    # the console's alignment, and its columns that never wrap (a cause, a role, a figure) kept whole
    align = [("num" if c.justify == "right" else "txt") + (" nw" if c.no_wrap else "") for c in cols]
    head = "".join(f"<th class='{a}'>{inline(c.header)}</th>" for c, a in zip(cols, align, strict=True))
    rows = []
    n = max((len(c._cells) for c in cols), default=0)
    for i in range(n):
        style = t.rows[i].style if i < len(t.rows) else None
        cls = " ".join((["b"] if _bold(style) else []) + _classes(style))
        cells = "".join(
            f"<td class='{a}{' dim' if 'dim' in _classes(c.style) else ''}'>"
            f"{inline(c._cells[i]) if i < len(c._cells) else ''}</td>"
            for c, a in zip(cols, align, strict=True))
        rows.append(f"<tr class='{cls}'>{cells}</tr>" if cls else f"<tr>{cells}</tr>")
    show_head = t.show_header and any(plain(c.header) for c in cols)
    out.append("<div class='wrap'><table>" + (f"<thead><tr>{head}</tr></thead>" if show_head else "")
               + "<tbody>" + "".join(rows) + "</tbody></table></div>")
    if t.caption:
        out.append(f"<p class='caption'>{inline(t.caption)}</p>")
    return "\n".join(out)


def text_html(t: Any) -> str:
    from rich.text import Text

    s = plain(t)
    if isinstance(t, Text) and "\n" not in s.strip() and len(s) <= 60 and _whole_bold(t):
        return f"<h2>{esc(s.strip())}</h2>"  # a section title (Diagnosis)
    if s.startswith("Verdict:"):  # compare's last word, set off as the console sets it in bold
        return f"<p class='verdict'>{inline(t)}</p>"
    return f"<p>{inline(t)}</p>"


def _whole_bold(t: Any) -> bool:
    if _bold(t.style):
        return True
    return any(_bold(sp.style) and sp.start <= 0 and sp.end >= len(t.plain) for sp in t.spans)


def html(renderables: list[Any]) -> list[str]:
    """The renderables in order, each as HTML (a list of page parts)."""
    from rich.console import Group
    from rich.table import Table

    out: list[str] = []
    for r in renderables:
        if r is None:
            continue
        if isinstance(r, Table):
            out.append(table_html(r))
        elif isinstance(r, Group):
            out.extend(html(list(r.renderables)))
        else:
            out.append(text_html(r))
    return out


def console_text(renderables: list[Any], width: int = 200) -> str:
    """The renderables as the terminal prints them at `width` columns (plain text): what a
    test holds the page's text against."""
    import io

    from rich.console import Console

    con = Console(width=width, record=True, file=io.StringIO(), color_system=None, highlight=False,
                  emoji=False, soft_wrap=False)
    for i, r in enumerate(renderables):
        if i:
            con.print()
        con.print(r)
    return con.export_text()
