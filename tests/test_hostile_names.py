"""A log of many distinct component names (issue 22): memory must grow with what is kept,
not with names x records. A 700 KB log of 20,000 names took 3.2 GB and 24 s: the analysis
built a dense records x components table (gpuscope/analysis/evidence/log/split.py, wide_table). Now the
components beyond the table's cell budget are folded (long form) and still counted by role."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tracemalloc

import numpy as np

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.analysis.evidence.log import split
from gpuscope.parsers import parse_log
from gpuscope.rolemodel import load_model
from gpuscope.sources.source import Source

from .conftest import REPO


def _names_log(n: int) -> str:
    return "".join(f"step={i} comp_{i}_ms=1.5 total_ms=3.0\n" for i in range(n))


def _peak_mib(n: int) -> float:
    src = Source.from_parsed(parse_log(_names_log(n)))
    tracemalloc.start()
    try:
        analyze(src, AnalyzeOptions())
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_memory_grows_linearly_with_distinct_names():
    small, large = _peak_mib(5000), _peak_mib(20000)
    # 4x the names and records: linear is 4x, the dense table was 16x
    assert large < 6 * small, f"{small:.1f} MiB for 5,000 names, {large:.1f} MiB for 20,000: not linear"


# (the child's own peak: VmHWM of its memory map. ru_maxrss is not: Linux carries it across exec
# from the process that spawned it, so under a long pytest run it read that process's ~600 MB)
CHILD = """
import sys
from gpuscope.cli import main
try:
    main(["analyze", sys.argv[1], "--json"])
except SystemExit as e:
    code = e.code
with open("/proc/self/status") as f:
    print(next(ln.split()[1] for ln in f if ln.startswith("VmHWM:")), file=sys.stderr)
"""


def test_a_700_kb_log_of_20000_names_stays_within_a_memory_bound(tmp_path):
    log = tmp_path / "names.log"
    log.write_text(_names_log(20000))
    p = subprocess.run([sys.executable, "-c", CHILD, str(log)], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    rss_mib = int(p.stderr.strip().splitlines()[-1]) / 1024  # VmHWM: KiB
    doc = json.loads(p.stdout)
    assert doc["log"]["records"] == 20000 and len(doc["log"]["components"]) == 20001
    assert doc["log"]["split"]["other_ms"] == 60000.0  # every folded component still counted (no role: other)
    assert rss_mib < 600, f"peak RSS {rss_mib:.0f} MiB for a 0.8 MB log (the dense table took 3,200)"


def _cols(log):
    return log.columns("components"), log.columns("records")


def test_folded_components_are_split_by_their_role_as_columns_are(monkeypatch):
    # one log split twice: every component its own column, then most of them folded
    text = "".join(f"step={i} h2d_{i % 50}_ms=1.0 ntt_kernels_ms=4.0 h2d_ms=1.5 host_{i % 70}_ms=0.5 lock_wait_{i % 3}_ms=0.25 "
                   f"total_ms=9.0\n" for i in range(400))
    model = load_model(None)
    roles = {f"h2d_{k}": "h2d" for k in range(50)} | {f"host_{k}": "cpu_stall" for k in range(70)}
    roles |= {f"lock_wait_{k}": "contention" for k in range(3)} | {"h2d": "h2d", "ntt_kernels": "gpu_compute"}
    model = dataclasses.replace(model, roles=roles)
    comps, recs = _cols(parse_log(text))
    dense = split.wide_table(comps, recs)
    assert not isinstance(dense, split.WideTable)
    monkeypatch.setattr(split, "DENSE_COLUMNS", 2)
    monkeypatch.setattr(split, "WIDE_CELLS", 400 * 2)  # keeps total and ntt_kernels: h2d, its inner, folded
    folded = split.wide_table(comps, recs)
    assert isinstance(folded, split.WideTable) and folded.columns == ["ntt_kernels", "total"] and len(folded.folded.names) > 100
    a, b = split.split_table(recs, dense, model), split.split_table(recs, folded, model)
    for c in split.SPLIT_COLUMNS:
        np.testing.assert_allclose(np.asarray(a[c], dtype=float), np.asarray(b[c], dtype=float), err_msg=c)
    assert "host_15" in folded and "host_15" not in folded.columns  # asked by name, a folded one is there
    np.testing.assert_array_equal(folded["host_15"], dense["host_15"])
    sub = folded.rows(slice(10, 20))
    np.testing.assert_array_equal(sub.column_of("host_15"), dense["host_15"][10:20])


def test_the_console_lists_60_components_and_sums_the_rest(tmp_path):
    from tests.hostile_check import run_cli

    log = tmp_path / "names.log"
    log.write_text(_names_log(300))
    code, out, err, _ = run_cli(["analyze", str(log)])
    assert code == 0 and err == ""
    assert "comp_58 " in out and "comp_59 " not in out  # total + 59 names = 60 rows
    assert "241 more" in out and "241 more components summed in the last row" in " ".join(out.split())
