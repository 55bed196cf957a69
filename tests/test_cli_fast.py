"""`gpuscope analyze`, `plot` and `export` run without typer for their usual command lines
(gpuscope/cli/fast.py): the same stdout, stderr, exit code and files as through the typer
application, and typer reads everything the fast path does not."""

from __future__ import annotations

import pytest

from gpuscope import cli
from gpuscope.cli import fast
from tests.conftest import DATA, EXAMPLES

ART = str(EXAMPLES / "article_excerpt.log")
DAEMON = str(EXAMPLES / "cuzk_daemon.log")
RUN = str(DATA / "h200_contention" / "pageable-c8")

HANDLED = [
    ["analyze", ART],
    ["analyze", ART, "--json"],
    ["analyze", "--json", ART],
    ["analyze", ART, "--records", "-v"],
    ["analyze", ART, "--verbose", "--format", "kv"],
    ["analyze", ART, "--format=condensed", "--json"],
    ["analyze", DAEMON, "--json", "--line-rate", "55.5"],
    ["analyze", DAEMON, "--line-rate=1e1", "--abc-bytes", "1.5G"],
    ["analyze", RUN, "--json", "--what-if"],
    ["analyze", ART, "--format", "xml"],            # usage error, exit 2
    ["analyze", ART, "--format="],                  # empty format: usage error
    ["analyze", "/nonexistent/x.log"],              # exit 3
    ["analyze", ART, "--abc-bytes", "lots"],        # bad size
    ["analyze", ART, "--model", "/nonexistent.toml"],
    ["analyze", DAEMON, "--samples", "/nonexistent.csv"],
]
NOT_HANDLED = [
    ["analyze"], ["analyze", "--help"], ["analyze", ART, "-h"], ["analyze", ART, "--jsn"],
    ["analyze", ART, "--json", "--json"], ["analyze", ART, ART], ["analyze", ART, "--line-rate", "nan"],
    ["analyze", ART, "--line-rate", "-5"], ["analyze", ART, "--csv"], ["analyze", ART, "--json=1"],
    ["analyze", "--", ART], ["analyze", ART, "-vv"], ["info"], [],
    ["plot", ART], ["plot", ART, "-o"], ["plot", ART, "-o", "x.png", "--json"], ["plot", ART, "-o", "-"],
    ["plot", ART, "-o", "x.png", "--start", "-5"], ["plot", ART, "-o", "x.png", "--end", "inf"],
    ["plot", ART, "--output", "x.png", "-o", "y.png"], ["plot", "-h"], ["export", ART, "--perfetto"],
    ["export", ART, "--perfetto", "x.json", "--what-if"], ["compare", ART, ART],
]


def _run(argv, capsys, monkeypatch, *, fast_path: bool):
    if not fast_path:
        monkeypatch.setattr(fast, "run", lambda words: None)
    code = 0
    try:
        cli.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out = capsys.readouterr()
    monkeypatch.undo()
    return code, out.out, out.err


@pytest.mark.parametrize("argv", HANDLED, ids=lambda a: " ".join(a[1:])[-60:])
def test_the_fast_path_answers_as_typer_does(argv, capsys, monkeypatch):
    assert fast.parse(argv) is not None
    assert _run(argv, capsys, monkeypatch, fast_path=True) == _run(argv, capsys, monkeypatch, fast_path=False)


@pytest.mark.parametrize("argv", NOT_HANDLED, ids=lambda a: " ".join(a) or "(none)")
def test_anything_else_goes_to_typer(argv):
    assert fast.parse(argv) is None


def test_csv_and_html_through_the_fast_path(tmp_path, capsys, monkeypatch):
    for fast_path in (True, False):
        d = tmp_path / ("fast" if fast_path else "typer")
        argv = ["analyze", DAEMON, "--csv", str(d / "csv"), "--html", str(d / "r.html")]
        d.mkdir()
        code, out, err = _run(argv, capsys, monkeypatch, fast_path=fast_path)
        assert code == 0 and "wrote" in err
    for name in ("components.csv", "records.csv", "stats.csv"):
        assert (tmp_path / "fast" / "csv" / name).read_bytes() == (tmp_path / "typer" / "csv" / name).read_bytes()
    assert (tmp_path / "fast" / "r.html").stat().st_size > 1000


@pytest.mark.parametrize("shape", ["cuzk", "json lines"])
def test_the_json_path_loads_neither_typer_nor_pandas_nor_rich(shape, tmp_path):
    """Also a log of JSON dict lines: its head starts like a trace or a Prometheus answer, and
    the sniff that tells them apart must not load their readers (pandas: ~0.25 CPU-s)."""
    import subprocess
    import sys

    log = DAEMON
    if shape == "json lines":
        log = str(tmp_path / "train.log")
        with open(log, "w") as f:
            f.writelines(f'{{"step": {i}, "data_ms": {1 + i % 3}.5, "compute_ms": 30.25}}\n' for i in range(50))
    probe = (f"import sys; from gpuscope.cli import main; main(['analyze', {log!r}, '--json']); "
             "print(sorted(m for m in ('typer', 'pandas', 'rich', 'matplotlib') if m in sys.modules), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[]"


def test_the_console_of_a_log_loads_no_pandas():
    """The table a user reads first (a log's console summary, --records too) is drawn from the
    analysis tables: rich loads, pandas (0.2 s of start-up) does not."""
    import subprocess
    import sys

    probe = (f"import sys; from gpuscope.cli import main; main(['analyze', {DAEMON!r}, '--records']); "
             "print(sorted(m for m in ('typer', 'pandas', 'rich', 'matplotlib') if m in sys.modules), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "Components (ms" in p.stdout and "Tenures (ms" in p.stdout  # the records table too
    assert p.stderr.strip().splitlines()[-1] == "['rich']"


def _generator():
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("gen_fast_options", REPO / "tools" / "gen_fast_options.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_fast_tables_are_the_typer_commands():
    """gpuscope/cli/_fast_options.py is what tools/gen_fast_options.py renders from the typer
    commands today: an option added to analyze.py, plot.py or export.py without running the
    tool fails here."""
    gen = _generator()
    assert gen.OUT.read_text() == gen.render(), "run: .venv/bin/python tools/gen_fast_options.py"
    assert set(fast.TABLES) == set(gen.COMMANDS) == set(fast.RUNNERS)
    for name in gen.COMMANDS:
        assert fast.TABLES[name] == gen.tables(name) and fast.TABLES[name]["arguments"] == ("source",)
    assert fast.TABLES["analyze"]["typed"] == {"line_rate": ("float", "LINE_RATE")}
    assert fast.TABLES["plot"]["typed"] == {"start": ("float", "START"), "end": ("float", "END")}
    assert fast.TABLES["plot"]["required"] == ("output",) and not fast.TABLES["export"]["required"]


def test_an_option_the_tables_do_not_type_goes_to_typer(monkeypatch):
    """A typed option the fast path cannot check (no bound, an int) is left to typer, not passed as text."""
    typed = fast.TABLES["analyze"]["typed"]
    monkeypatch.setitem(typed, "line_rate", ("float", None))
    assert fast.parse(["analyze", ART, "--line-rate", "5"]) is None
    monkeypatch.setitem(typed, "line_rate", ("int", "LINE_RATE"))
    assert fast.parse(["analyze", ART, "--line-rate", "5"]) is None
    monkeypatch.undo()
    assert fast.parse(["analyze", ART, "--line-rate", "5"]) == {"source": ART, "line_rate": 5.0}


DRAWN = [
    ["plot", DAEMON, "-o", "{out}/t.png"],
    ["plot", DAEMON, "--output={out}/t.png", "--start", "0", "--end=60", "--title", "a window"],
    ["plot", RUN, "-o", "{out}/t.png"],
    ["plot", DAEMON, "-o", "{out}/t.txt"],                      # no picture format: usage error
    ["plot", "/nonexistent/x.log", "-o", "{out}/t.png"],       # exit 3
    ["plot", DAEMON, "-o", "{out}/t.png", "--start", "1e300"],  # past its bound: typer says why
    ["export", DAEMON, "--perfetto", "{out}/t.json"],
    ["export", RUN, "--perfetto={out}/t.json", "--format", "cuzk"],
    ["export", DAEMON],                                         # nothing to export: usage error
    ["export", ART, "--perfetto", "{out}/t.json", "--format", "xml"],
]


@pytest.mark.parametrize("argv", DRAWN, ids=lambda a: " ".join(a[:1] + a[2:])[-60:])
def test_plot_and_export_draw_the_same_through_the_fast_path(argv, tmp_path, capsys, monkeypatch):
    """The same exit code, stdout and stderr (the file's name aside), and the same bytes written."""
    seen = []
    for fast_path in (True, False):
        out = tmp_path / ("fast" if fast_path else "typer")
        out.mkdir()
        words = [w.replace("{out}", str(out)) for w in argv]
        handled = fast.parse(words) is not None
        code, stdout, stderr = _run(words, capsys, monkeypatch, fast_path=fast_path)
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        seen.append((handled, code, stdout.replace(str(out), "OUT"), stderr.replace(str(out), "OUT"), files))
    (handled, code, *fast_side), (_, _, *typer_side) = seen
    assert handled == ("1e300" not in argv)
    assert fast_side == typer_side and (code == 0) == bool(fast_side[-1])
