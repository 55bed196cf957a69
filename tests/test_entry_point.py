"""The installed console script, run as a user would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES

GPUSCOPE = Path(sys.executable).parent / "gpuscope"


def test_installed_entry_point_analyze_json():
    assert GPUSCOPE.exists(), f"console script missing: {GPUSCOPE} (pip install -e .)"
    p = subprocess.run([str(GPUSCOPE), "analyze", str(EXAMPLES / "article_excerpt.log"), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    j = json.loads(p.stdout)
    assert j["log"]["records"] == 4 and j["log"]["split"]["inconsistent_records"] == 1


def test_installed_entry_point_bad_input_exit_code(tmp_path):
    p = subprocess.run([str(GPUSCOPE), "analyze", str(tmp_path / "missing.log")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.startswith("gpuscope: ") and len(p.stderr.splitlines()) == 1
