"""Round three of the hostile-input probe (issue 22, tools/probe_gen3.py): the classes it found,
one regression test each."""

from __future__ import annotations

import pytest

from tests.hostile_check import problems, run_cli

from .conftest import EXAMPLES

LOG = EXAMPLES / "article_excerpt.log"
LONG = "n" * 300  # longer than any file name may be (NAME_MAX 255)


@pytest.mark.parametrize("argv", [
    ["analyze", LONG], ["analyze", str(LOG), "--model", LONG], ["plot", LONG, "-o", "x.png"], ["compare", LONG, LONG],
    ["analyze", str(LOG), "--csv", "{tmp}/" + LONG], ["analyze", str(LOG), "--samples", "{tmp}/" + LONG],
])
def test_a_name_too_long_for_any_file_is_one_line_exit_3(tmp_path, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err, secs = run_cli(argv)
    assert problems(code, out, err, secs) == []
    assert code == 3 and "File name too long" in err and len(err) < 300, (code, err)


def test_an_output_name_near_the_limit_is_written(tmp_path):
    out = tmp_path / ("n" * 245 + ".html")  # the temporary name beside it must fit too
    code, _, err, _ = run_cli(["analyze", str(LOG), "--html", str(out)])
    assert code == 0 and out.is_file(), err
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


def test_a_loop_of_links_is_one_line_exit_3(tmp_path):
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop.name)
    for argv in (["analyze", str(loop)], ["analyze", str(LOG), "--model", str(loop)], ["plot", str(loop), "-o", "x.png"]):
        code, out, err, secs = run_cli(argv)
        assert problems(code, out, err, secs) == [] and code == 3, (argv, code, err)


RANKS_CHILD = """
import sys
from pathlib import Path
from gpuscope.ranks_run import analyze_ranks
doc = analyze_ranks(sorted(Path(sys.argv[1]).glob("*.json")), workers=2)
print(len(doc["table"]))
"""


def test_rank_workers_keep_library_warnings_off_the_terminal(tmp_path):
    # copies of no duration: numpy divides by zero in each worker process, which the command's
    # own warning filter does not reach
    import gzip
    import json
    import subprocess
    import sys

    from .conftest import REPO

    doc = json.loads(gzip.decompress((REPO / "tests/data/h200_bounds/traces/hbm_bound.json.gz").read_bytes()))
    evs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    copies = [dict(e, dur=0) for e in evs if e.get("cat") == "gpu_memcpy"][:3]
    assert copies
    doc["traceEvents"] = evs[:300] + copies
    for k in range(2):
        (tmp_path / f"rank{k}.json").write_text(json.dumps(doc))
    p = subprocess.run([sys.executable, "-c", RANKS_CHILD, str(tmp_path)], capture_output=True, text=True,
                       timeout=300, cwd=REPO)
    assert p.returncode == 0 and p.stdout.strip() == "2", p.stderr
    assert p.stderr == "", p.stderr


@pytest.mark.parametrize("enc", ["bom8", "utf16"])
def test_a_meta_json_with_a_bom_is_read(tmp_path, enc):
    import json
    import shutil

    from .conftest import REPO

    run = tmp_path / "run"
    shutil.copytree(REPO / "tests/data/h200_bounds/runs/hbm_bound", run)
    text = (run / "meta.json").read_text()
    (run / "meta.json").write_bytes(b"\xef\xbb\xbf" + text.encode() if enc == "bom8" else text.encode("utf-16"))
    code, out, err, _ = run_cli(["analyze", str(run), "--json"])
    assert code == 0 and err == "", err
    assert json.loads(out)["log"]["pcie"]  # the run's GPUs, from meta.json


def test_a_meta_json_beyond_its_cap_is_one_line_exit_3(tmp_path, monkeypatch):
    import shutil

    from .conftest import REPO

    run = tmp_path / "run"
    shutil.copytree(REPO / "tests/data/h200_bounds/runs/hbm_bound", run)
    monkeypatch.setenv("GPUSCOPE_MAX_JSON", "1K")
    code, out, err, secs = run_cli(["analyze", str(run), "--json"])
    assert problems(code, out, err, secs) == [] and code == 3 and "GPUSCOPE_MAX_JSON" in err, err


@pytest.mark.parametrize("how", ["csv", "html", "png", "perfetto"])
@pytest.mark.parametrize("name", ["x\ny\x1b[2J", "t\x9b1m\u202eq"])
def test_an_output_named_with_controls_is_said_on_one_line_with_them_visible(tmp_path, how, name):
    from .conftest import REPO

    trace = REPO / "tests/data/h200_bounds/traces/hbm_bound.json.gz"
    out = tmp_path / (name + {"csv": "", "html": ".html", "png": ".png", "perfetto": ".json"}[how])
    argv = {"csv": ["analyze", str(LOG), "--csv", str(out)], "html": ["analyze", str(LOG), "--html", str(out)],
            "png": ["plot", str(trace), "-o", str(out)], "perfetto": ["export", str(trace), "--perfetto", str(out)]}[how]
    code, stdout, err, secs = run_cli(argv)
    assert code == 0 and out.exists(), err
    assert problems(code, stdout if how in ("png", "perfetto") else "", err, secs) == []
    said = err if how in ("csv", "html") else stdout
    assert len([ln for ln in said.splitlines() if "wrote" in ln]) == 1 and said.count("\n") == 1, said


@pytest.mark.parametrize("sig", [15, 1])
def test_sigterm_or_sighup_before_a_command_handles_it_is_one_line_and_128_plus_n(sig):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from .conftest import REPO

    bin_ = Path(sys.executable).parent / "gpuscope"
    cmd = [str(bin_), "analyze", "-", "--json"] if bin_.exists() else [sys.executable, "-m", "gpuscope", "analyze", "-"]
    # (the signal at its default in the command, as from a terminal: under nohup the suite ignores SIGHUP)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO,
                         preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    time.sleep(0.6)  # importing or reading the standard input that never ends: no handler of its own
    p.send_signal(sig)
    err = p.communicate(timeout=60)[1].decode()
    name = signal.Signals(sig).name
    assert (p.returncode, err) == (128 + sig, f"gpuscope: stopped by {name}\n")


def _under_fsize(argv: list[str], limit: int, cwd):
    import resource
    import subprocess
    import sys
    from pathlib import Path

    bin_ = Path(sys.executable).parent / "gpuscope"
    cmd = [str(bin_), *argv] if bin_.exists() else [sys.executable, "-m", "gpuscope", *argv]

    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=pre, timeout=300, cwd=cwd)


@pytest.mark.parametrize("what", ["record", "run"])
def test_a_full_disk_while_recording_is_never_complete(tmp_path, what):
    # a file-size limit (RLIMIT_FSIZE) is the full disk a user without root can make: timing.log
    # stops being written; record and run went on, said so, and still called the directory
    # complete with exit 0 (and left summary.json's temporary file behind)
    import json
    import sys

    d = tmp_path / "run"
    prog = "for i in range(3000): print(f'step={i} data_ms=1.5 total_ms=3.0')"
    argv = (["record", "--out", str(d), "--", sys.executable, "-c", prog] if what == "record" else
            ["run", "--backend", "cpu", "--partitions", "2", "--log-n", "8", "--out", str(d)])
    p = _under_fsize(argv, 2048, tmp_path)
    assert p.returncode == 6, p.stderr
    assert all(ln.startswith("gpuscope: ") for ln in p.stderr.splitlines()), p.stderr
    assert "cannot write timing.log" in p.stderr
    meta = json.loads((d / "meta.json").read_text())
    assert meta.get("status") != "complete", meta
    if meta.get("status") == "running":  # its last write failed too: said, and analyze says the recorder is gone
        assert "meta.json could not be written" in p.stderr
    assert not [f.name for f in d.iterdir() if f.name.endswith(".tmp")]
