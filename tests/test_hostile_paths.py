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
