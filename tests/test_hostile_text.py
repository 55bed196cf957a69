"""Hostile text in inputs (issue 13): what a log, a file name or a trace says is shown
literally and safely everywhere. Terminal escape sequences (`ESC[2J` clears the screen, an
OSC sets the title), C1 controls, bidi overrides never reach the output raw; Rich markup
(`[red]BOOM[/red]`) and emoji codes are not interpreted, so no character is lost to them.
One helper does it: reports.safe_text."""

from __future__ import annotations

import io
import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from gpuscope.analysis import analyze
from gpuscope.cli import app
from gpuscope.errors import GpuscopeError
from gpuscope.reports.console import render_summary
from gpuscope.reports.safe_text import LiteralTable, mpl, text, visible
from gpuscope.sources import open_source

# what must never come out: C0 controls but tab and line feed, DEL, C1, bidi controls
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

PIECES = ["\x1b[2J", "\x1b]0;pwned\x07", "\x1b]8;;http://e.x/\x1b\\", "\x9b31m", "\x9d2;t\x9c", "\x07", "\x08",
          "\x7f", "\u202e", "\x1bc", "[red]", "[/red]", "[/]", "[bold]", "[link=http://e.x]", ":smile:", "$x^2$",
          "\\", "[", "]", "BOOM", "a", "_", "x1"]
name_st = st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map(lambda p: "k" + "".join(p))


def _console_text(a, width=300) -> str:
    buf = io.StringIO()
    render_summary(a, Console(file=buf, width=width, color_system=None, emoji=True), records=True, verbose=True)
    return buf.getvalue()


def test_visible_shows_every_control_and_keeps_the_rest():
    assert visible("a\x1b[2Jb") == "a␛[2Jb"
    assert visible("\x1b]0;t\x07") == "␛]0;t␇"
    assert visible("\x9b31m") == "\\x9b31m" and visible("\u202eabc") == "\\u202eabc"
    assert visible("tab\there\nline") == "tab␉here␊line"
    assert visible("two\nlines", newlines=True) == "two\nlines"
    assert visible("[red]BOOM[/red] ünïcode ✓") == "[red]BOOM[/red] ünïcode ✓"
    assert mpl("cost $5") == r"cost \$5" and mpl("a\x1bb") == r"a\x1bb"


def test_literal_table_never_reads_markup():
    t = LiteralTable(title="[red]T[/red] \x1b[2J")
    t.add_column("[bold]h[/bold]")
    t.add_row("[red]BOOM[/red]_ms :smile:")
    t.caption = "[blink]c[/blink]"
    buf = io.StringIO()
    Console(file=buf, width=120, color_system=None).print(t)
    out = buf.getvalue()
    for s in ("[red]T[/red] ␛[2J", "[bold]h[/bold]", "[red]BOOM[/red]_ms :smile:", "[blink]c[/blink]"):
        assert s in out
    assert "\x1b" not in out
    assert text("[red]x[/red]").plain == "[red]x[/red]"


def test_a_log_with_escape_sequences_and_markup_in_its_keys(tmp_path):
    log = tmp_path / "h.log"
    log.write_text("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=3\n"
                   "CUZK_TIMING: gpu_tid=0 \x1b[2J[red]BOOM[/red]_ms=38 \x1b]0;pwned\x07t_ms=4\n"
                   "CUZK_TIMING: mutex_held_ms=50\n"
                   "CUZK_TIMING: gpu_tid=0 \x1b[2Jbad\x9b_ms=zz\n")
    r = CliRunner().invoke(app, ["analyze", str(log), "-v"])
    assert r.exit_code == 0, r.stderr
    assert not RAW.search(r.stdout) and not RAW.search(r.stderr)
    assert "␛[2J[red]BOOM[/red]" in r.stdout and "␛]0;pwned␇t" in r.stdout
    assert "␛[2Jbad\\x9b_ms" in r.stderr  # the skipped line, as the log has it


def test_a_hostile_file_name_in_errors_and_labels(tmp_path):
    d = tmp_path / "run\x1b]0;x\x07[red]A[bold]"
    d.mkdir()
    r = CliRunner().invoke(app, ["analyze", str(d / "missing.log")])
    assert r.exit_code == 3 and not RAW.search(r.stderr) and "␛]0;x␇[red]A[bold]" in r.stderr


def _hostile_log(d, names, fname):
    lines = []
    for i in range(3):
        lines.append(f"2026-11-30T14:00:{10 + 4 * i:02d}.000Z CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=3")
        parts = " ".join(f"{n}_ms={5 + i + j}" for j, n in enumerate(names))
        lines.append(f"2026-11-30T14:00:{11 + 4 * i:02d}.000Z CUZK_TIMING: gpu_tid=0 h2d_ms=20 {parts}")
        lines.append(f"2026-11-30T14:00:{12 + 4 * i:02d}.000Z CUZK_TIMING: mutex_held_ms=90")
    lines.append(f"CUZK_TIMING: gpu_tid=0 {names[0]}_ms=oops")  # a damaged line: listed by -v
    log = d / f"log{fname.replace('/', '_')}.log"
    log.write_text("\n".join(lines) + "\n")
    return log


HOSTILE = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@settings(HOSTILE, max_examples=40)
@given(names=st.lists(name_st, min_size=1, max_size=3, unique=True), fname=st.sampled_from(PIECES))
def test_hostile_names_in_the_console_and_csv_shown_whole_and_inert(tmp_path_factory, names, fname):
    from gpuscope.reports.csvout import frames, safe_frame

    log = _hostile_log(tmp_path_factory.mktemp("hostile"), names, fname)
    try:
        a = analyze(open_source(log))
    except GpuscopeError:
        return
    out = _console_text(a)
    assert not RAW.search(out)
    for comp in a.log.components.index:  # each name shown whole: nothing read as markup or emoji
        assert visible(str(comp)) in out, (comp, out)
    for name, df in frames(a).items():
        assert not RAW.search(safe_frame(df).to_csv(index=False)), name
    doc = json.loads(json.dumps(a.document()))
    assert set(doc["log"]["components"]) == {str(c) for c in a.log.components.index}  # JSON keeps the names exactly


@settings(HOSTILE, max_examples=8)
@given(names=st.lists(name_st, min_size=1, max_size=3, unique=True), fname=st.sampled_from(PIECES))
def test_hostile_names_through_the_cli_never_reach_the_terminal_raw(tmp_path_factory, names, fname):
    d = tmp_path_factory.mktemp("hostile")
    log = _hostile_log(d, names, fname)
    run = CliRunner()
    r = run.invoke(app, ["analyze", str(log), "-v", "--records", "--csv", str(d / "csv"),
                         "--html", str(d / "r.html")])
    assert r.exit_code == 0, r.stderr
    assert not RAW.search(r.stdout) and not RAW.search(r.stderr)
    assert "line 10:" in r.stderr  # -v lists the damaged line
    for f in (d / "csv").iterdir():
        assert not RAW.search(f.read_text()), f.name
    assert not RAW.search((d / "r.html").read_text())
    r = run.invoke(app, ["analyze", str(log), "--json"])
    assert r.exit_code == 0 and not RAW.search(r.stdout)
    r = run.invoke(app, ["compare", str(log), str(log), "--bootstrap", "100"])
    assert r.exit_code == 0, r.stderr
    assert not RAW.search(r.stdout) and not RAW.search(r.stderr)


@settings(HOSTILE, max_examples=6)
@given(names=st.lists(name_st, min_size=2, max_size=3, unique=True))
def test_hostile_kernel_and_annotation_names_of_a_trace(tmp_path_factory, names):
    from tools.gen_trace import TraceBuilder

    b = TraceBuilder()
    t = 0.0
    for _ in range(3):
        b.annotation(names[0], t, 2000.0)
        t += 2010.0
        for _k in range(4):
            b.launch(t, t + 6.0, 30.0, op=names[1])
            b.kernel(t + 40.0, 20.0, name=names[-1])
            t += 90.0
    p = tmp_path_factory.mktemp("trace") / "t.json"
    b.write(p)
    r = CliRunner().invoke(app, ["analyze", str(p), "-v"])
    assert r.exit_code == 0, r.stderr
    assert not RAW.search(r.stdout) and not RAW.search(r.stderr)
    assert visible(names[0]) in r.stdout.replace("\n", "") or "Phases" not in r.stdout
    r = CliRunner().invoke(app, ["plot", str(p), "-o", str(p.with_suffix(".png"))])  # no mathtext, no crash
    assert r.exit_code == 0, r.stderr
    assert not RAW.search(r.stdout)


def test_the_picture_shows_names_literally():
    import pandas as pd

    from gpuscope.reports.plot import render_timeline

    ph = pd.DataFrame({"worker": -1, "gpu": -1, "partition": -1, "phase": ["a$x^2$\x1b[2J"],
                       "t_start": [0.0], "t_end": [1.0]})
    fig = render_timeline(ph, None, title="t$1$ \x9b")
    legend = [t.get_text() for t in fig.get_axes()[0].get_legend().get_texts()]
    assert legend == [r"a\$x^2\$\x1b[2J"] and fig._suptitle.get_text() == r"t\$1\$ \x9b"
