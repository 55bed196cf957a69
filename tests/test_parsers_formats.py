"""The one table of formats (parsers/log/formats.py) is the one list: detection's markers, the
scanner's formats, FORMATS, and the `--format` help of every command that takes one."""

from __future__ import annotations

from gpuscope import parsers
from gpuscope.parsers.log import detect, formats, scanners
from tests.conftest import REPO


def test_formats_detection_and_scanners_come_from_the_table():
    assert parsers.FORMATS == formats.NAMES == ("cuzk", "condensed", "kv", "lines")
    assert detect.CUZK_MARKERS == formats.BY_NAME["cuzk"].markers
    assert detect.CONDENSED_KEYS == formats.BY_NAME["condensed"].markers
    assert formats.NATIVE == {"cuzk", "condensed", "kv"}
    assert scanners.NATIVE is formats.NATIVE


def test_every_format_option_help_is_the_tables():
    """(the CLI keeps the text literal so that `--help` loads no parser; this holds them equal:
    one `--format` option, gpuscope/cli/options.py, that every command taking one uses)"""
    text = (REPO / "gpuscope" / "cli" / "options.py").read_text()
    at = text.find("Force the log format")
    assert at >= 0 and text[at:text.find('"', at)] == formats.help_text()
    for name in ("analyze", "compare", "plot", "export"):
        assert "fmt: options.Format" in (REPO / "gpuscope" / "cli" / f"{name}.py").read_text(), name


def test_closest_line_prefers_a_time_hint():
    text = "starting\nbatchSize=64 workers=2\nepoch 3 took 12\n"
    assert formats.closest_line(text) == "epoch 3 took 12"
    assert formats.closest_line("no digits here\n") is None
