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
    assert json.loads(out)["pcie"]  # the run's GPUs, from meta.json


def test_a_meta_json_beyond_its_cap_is_one_line_exit_3(tmp_path, monkeypatch):
    import shutil

    from .conftest import REPO

    run = tmp_path / "run"
    shutil.copytree(REPO / "tests/data/h200_bounds/runs/hbm_bound", run)
    monkeypatch.setenv("GPUSCOPE_MAX_JSON", "1K")
    code, out, err, secs = run_cli(["analyze", str(run), "--json"])
    assert problems(code, out, err, secs) == [] and code == 3 and "GPUSCOPE_MAX_JSON" in err, err
