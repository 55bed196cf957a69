"""End to end through the real parsers: log text -> parse_log -> analyze, checked against figures
computed independently here from the raw text with plain regexes."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys

import pytest

from gpuscope.analysis import analyze
from gpuscope.sources import open_source
from tests.conftest import EXAMPLES, REPO

DAEMON = EXAMPLES / "cuzk_daemon.log"


def _values(text: str, key: str) -> list[float]:
    return [float(v) for v in re.findall(rf"\b{key}=(\d+)(?:ms)?\b", text)]


def _busy_fraction(text: str) -> float:
    open_, iv = {}, []
    for m in re.finditer(r"TIMELINE,(\d+),(GPU_START|GPU_END),([^,\s]+),(worker=\d+(?:,partition=\d+)?)", text):
        off, ev, job, who = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        key = (job, who)
        if ev == "GPU_START":
            open_[key] = off
        elif key in open_:
            iv.append((open_.pop(key), off))
    iv.sort()
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    return busy / (max(e for _, e in iv) - min(s for s, _ in iv))


def test_article_excerpt_acceptance():
    a = analyze(open_source(EXAMPLES / "article_excerpt.log"))
    assert a.log.format == "condensed" and a.log.records == 4
    assert list(a.log.record_split["inconsistent"]) == [False, True, False, False]
    assert a.log.components.at["ntt_kernels", "median_ms"] == 1354.5
    assert (a.log.split["h2d_ms"], a.log.split["held_ms"]) == (8613, 14460)
    assert a.document()["log"]["split"]["h2d_share"] == pytest.approx(8613 / 14460)


@pytest.mark.skipif(not DAEMON.exists(), reason="examples/cuzk_daemon.log not generated (make examples)")
def test_daemon_log_against_independent_counts():
    text = DAEMON.read_text()
    a = analyze(open_source(DAEMON))
    j = a.document()
    held = _values(text, "mutex_held_ms")
    ntt = _values(text, "ntt_kernels")
    barrier = _values(text, "barrier_wait_ms")
    assert j["source"]["kind"] == "cuzk"
    assert j["log"]["records"] == len(held)
    assert j["log"]["components"]["ntt_kernels"]["median_ms"] == statistics.median(ntt)
    assert j["log"]["components"]["ntt_kernels"]["sum_ms"] == sum(ntt)
    assert j["log"]["components"]["mutex_held"]["median_ms"] == statistics.median(held)
    assert j["log"]["split"]["held_ms"] == sum(held)
    assert j["log"]["split"]["h2d_share"] == pytest.approx(sum(ntt) / sum(held))   # one GPU per tenure
    assert j["log"]["split"]["cpu_stall_ms"] == sum(barrier)
    assert j["log"]["timeline"]["source"] == "TIMELINE"
    assert j["log"]["timeline"]["gpu_busy_fraction"] == pytest.approx(_busy_fraction(text), rel=1e-9)
    assert j["log"]["components"]["prep_msm"]["count"] == len(_values(text, "prep_msm_ms"))
    ids = {d["id"] for d in j["findings"]}
    assert "h2d_bound" in ids


def _generate(tmp_path, *args) -> str:
    out = tmp_path / "gen.log"
    subprocess.run([sys.executable, str(REPO / "tools" / "gen_daemon_log.py"), *args, "-o", str(out)],
                   check=True, capture_output=True, timeout=60)
    return out


def test_two_gpu_tenures_with_journald_prefix(tmp_path):
    log = _generate(tmp_path, "--partitions", "10", "--gpus", "2", "--prefix", "journald", "--seed", "11")
    text = log.read_text()
    a = analyze(open_source(log))
    held = _values(text, "mutex_held_ms")
    ntt = _values(text, "ntt_kernels")
    assert a.log.records == len(held) == 10
    assert set(a.log.record_split["n_gpus"]) == {2}
    # per-GPU parts are averaged over the tenure's two GPUs: h2d total = sum(ntt_kernels) / 2
    assert a.log.split["h2d_ms"] == pytest.approx(sum(ntt) / 2)
    assert a.log.components.at["ntt_kernels", "count"] == 2 * len(held)
    assert a.log.split["held_ms"] == sum(held)
    assert not a.log.record_split["inconsistent"].any()


def test_interleaved_workers_and_damage_counts(tmp_path):
    log = _generate(tmp_path, "--partitions", "16", "--seed", "4", "--damage", "0.05", "--prefix", "iso")
    s = open_source(log)
    a = analyze(s)
    j = a.document()
    assert j["log"]["skipped_lines"] == len(s.log.skipped) > 0
    assert j["log"]["records"] >= 1 and j["log"]["timeline"]["gpu_busy_fraction"] is not None
    # workers' tenures never overlap: the lock excludes them
    sp = a.log.record_split.dropna(subset=["ts_end"])
    start = sp["ts_end"] - sp["held_ms"] / 1000
    assert (start.to_numpy()[1:] >= sp["ts_end"].to_numpy()[:-1] - 0.002).all()
