"""Text that came from an input, shown literally and safely: the one helper every report and
the CLI's stderr lines use for component and phase names, skipped lines, source paths,
labels, kernel and annotation names, and the sentences that embed them.

- `visible(s)`: control characters made visible, so none reaches a terminal: C0 controls
  and DEL as their Unicode control pictures (ESC -> ␛, BEL -> ␇, LF -> ␊), C1 controls
  (CSI U+009B, OSC U+009D, ...) and the characters that reorder or break lines (bidi
  overrides, U+2028) as `\\x9b` / `\\u202e`. Everything else is left as it is.
- `text(s)`: a rich Text of `visible(s, newlines=True)` (a line break stays one: reports
  write sentences on several lines): never read as markup (`[red]` stays `[red]`) nor as
  emoji codes.
- `LiteralTable`: a rich Table whose string cells, column headers, title and caption are
  such Text: a report's table never interprets what it shows.
- `mpl(s)`: for matplotlib: controls as `\\x1b` (its fonts have no control pictures), and
  `$` escaped (no mathtext).
- A file name's bytes that are not UTF-8 (Python's surrogate escapes, U+DC80..U+DCFF) are
  shown by all three as the byte's text `\\x9b`: never the raw byte (0x9b is CSI on an 8-bit
  terminal), never a surrogate (matplotlib and the encoders refuse them).

Pure: no I/O. `visible` and `mpl` need nothing but `re` (the CLI's stderr lines use them
without loading rich); `text` and `LiteralTable` load rich when first used.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

# C0 (but not the pictures' own range), DEL, C1; bidi embeddings/overrides/isolates, marks
# that flip the direction, line and paragraph separators
_UNSAFE = re.compile("[\x00-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\udc80-\udcff]")  # (the last: a file name's bytes that are not UTF-8, surrogate-escaped)


def _show(m: re.Match) -> str:
    c = ord(m.group())
    if c < 0x20:
        return chr(0x2400 + c)      # ␀ .. ␟
    if c == 0x7F:
        return "\u2421"             # ␡
    if c <= 0xFF:
        return f"\\x{c:02x}"
    if 0xDC80 <= c <= 0xDCFF:       # an undecodable byte of a file name: the byte, as text
        return f"\\x{c - 0xDC00:02x}"
    return f"\\u{c:04x}"


def visible(s: Any, *, newlines: bool = False) -> str:
    """`s` as a str with every control character made visible (see the module doc);
    `newlines`: leave line feeds as they are."""
    s = s if isinstance(s, str) else str(s)
    if not _UNSAFE.search(s):
        return s
    if newlines:
        return "\n".join(_UNSAFE.sub(_show, part) for part in s.split("\n"))
    return _UNSAFE.sub(_show, s)


def text(s: Any, style: str = "") -> Text:
    """A rich Text that shows `s` literally (no markup, no emoji codes, no controls but line
    feeds)."""
    from rich.text import Text

    return s if isinstance(s, Text) else Text(visible(s, newlines=True), style=style)


def mpl(s: Any) -> str:
    """A matplotlib label that shows `s` literally: controls as `\\x1b` (its fonts lack the
    control pictures), `$` not mathtext."""
    s = s if isinstance(s, str) else str(s)
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) <= 0xFF else _show(m),
                       s).replace("$", r"\$")


def _literal_table() -> type:
    from rich.table import Table

    class LiteralTable(Table):
        """A rich Table that shows its strings literally: every str cell, column header,
        title and caption becomes `text(...)`. Pass a Text for deliberate styling."""

        def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
            super().add_column(text(header) if isinstance(header, str) else header, *args, **kwargs)

        def add_row(self, *cells: Any, **kwargs: Any) -> None:
            super().add_row(*(text(c) if isinstance(c, str) else c for c in cells), **kwargs)

        def __rich_console__(self, console, options):
            for attr, style in (("title", self.title_style or "table.title"),
                                ("caption", self.caption_style or "table.caption")):
                v = getattr(self, attr)
                if isinstance(v, str):
                    setattr(self, attr, text(v, style=str(style)))
            yield from super().__rich_console__(console, options)

    return LiteralTable


def __getattr__(name: str) -> Any:  # LiteralTable, made when first asked for (rich loads then)
    if name == "LiteralTable":
        cls = _literal_table()
        globals()[name] = cls
        return cls
    raise AttributeError(name)


# where a name may break when its column is too narrow for it, best first: after a `.`,
# `/`, `:` or space (gpu_timing. / total_overhead); also after `_`, `-`, `(`, `#`, `,`;
# also between the humps of a CamelCase word (SingleProcess / DataLoader). Never elsewhere
# inside a word, unless one piece alone is wider than the column.
_LEVELS = (re.compile(r"[^./:\s]*[./:\s]+|[^./:\s]+"),
           re.compile(r"[^._/:\-\s(#,]*[._/:\-\s(#,]+|[^._/:\-\s(#,]+"),
           re.compile(r"[^._/:\-\s(#,]*?(?:[._/:\-\s(#,]+|(?<=[a-z0-9])(?=[A-Z])|$)"))


class _Name:
    """A name in a table cell: shown literally, and when the column is narrower than the
    name, broken where _LEVELS allow (the coarsest level whose pieces fit)."""

    def __init__(self, s: Any, style: str = "") -> None:
        self.s = visible(s)
        self.style = style
        self.levels = [[p for p in rx.findall(self.s) if p] or [self.s] for rx in _LEVELS]

    def __rich_measure__(self, console, options):
        from rich.cells import cell_len
        from rich.measure import Measurement

        shortest = max(cell_len(p) for p in self.levels[-1])
        return Measurement(shortest, cell_len(self.s)).with_maximum(options.max_width)

    def __rich_console__(self, console, options):
        from rich.cells import cell_len
        from rich.text import Text

        width, lines, cur = max(1, options.max_width), [], ""
        parts = next((lv for lv in self.levels if max(cell_len(p) for p in lv) <= width), self.levels[-1])
        for p in parts:
            if cur and cell_len(cur) + cell_len(p) > width:
                lines.append(cur)
                cur = ""
            cur += p
        lines.append(cur)
        t = Text("\n".join(line.rstrip() if i < len(lines) - 1 else line for i, line in enumerate(lines)),
                 style=self.style)
        yield from t.__rich_console__(console, options.update(overflow="fold"))


def name(s: Any, style: str = "") -> Any:
    """A table cell for a name (component, phase, kernel, label): literal, and broken only
    between its words when the column is too narrow (see _Name)."""
    return _Name(s, style)
