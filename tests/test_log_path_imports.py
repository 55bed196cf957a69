"""`analyze LOG --json` of a log alone never imports pandas (it costs ~0.7 CPU-s of a 1M-line
log's ~1.3): an import hoisted to a module's top once brought it back (samplegrid, the log's
phases), and nothing else would have noticed."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

PROBE = ("import sys; sys.argv = ['gpuscope', 'analyze', {log!r}, '--json']\n"
         "from gpuscope.cli import main\n"
         "import io, contextlib\n"
         "try:\n    with contextlib.redirect_stdout(io.StringIO()):\n        main()\n"
         "except SystemExit:\n    pass\n"
         "print('pandas' in sys.modules, 'matplotlib' in sys.modules)")


def test_analyze_of_a_log_alone_loads_no_pandas():
    for log in ("examples/cuzk_daemon.log", "examples/article_excerpt.log"):
        out = subprocess.run([sys.executable, "-c", PROBE.format(log=str(REPO / log))], capture_output=True, text=True,
                             cwd=REPO, timeout=120)
        assert out.stdout.split()[-2:] == ["False", "False"], (log, out.stdout[-300:], out.stderr[-500:])
