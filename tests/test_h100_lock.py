"""Two workers sharing an H100 under a lock, recorded with `gpuscope record` (tests/data/h100_lock):
each prepares its input on the host for ~2.7 s, then uploads and computes under the lock for
~150 ms (pageable) or ~45 ms (pinned), printing its tenure in its own words. Nothing here shaped
their lines or their samples for the rules."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app

from .conftest import DATA

RUNS = DATA / "h100_lock" / "runs"
runner = CliRunner()


def _analysis(run: str) -> dict:
    r = runner.invoke(app, ["analyze", str(RUNS / run), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _finding(doc: dict, fid: str) -> dict:
    return next(f for f in doc["findings"] if f["id"] == fid)


@pytest.mark.parametrize("run", ["lock_pageable_kv", "lock_pageable_prose", "lock_pinned_kv", "lock_pinned_prose"])
def test_a_lock_free_most_of_the_run_weighs_its_uploads_by_the_run(run):
    doc = _analysis(run)
    # the seed's table from the program's own words: held split into upload and compute
    split = doc["log"]["split"]
    assert split["h2d_ms"] > 0 and split["gpu_compute_ms"] > 0 and split["held_ms"] >= split["h2d_ms"]
    # the lock is held a small share of the run, never waited for: the host work idles the GPU
    cover = doc["log"]["timeline"]["steady_busy_fraction"]
    assert 0.0 < cover < 0.3
    assert doc["first_cause"] == "host"
    assert doc["findings"][0]["id"] == "gpu_starved"
    h2d = _finding(doc, "h2d_bound")
    assert h2d["severity"] == "low" and h2d["evidence"]["h2d_share_of_run"] < 0.2
    assert "of the run in their steady state" in h2d["summary"]


@pytest.mark.parametrize("run", ["lock_pinned_kv", "lock_pinned_prose", "lock_pageable_kv"])
def test_uploads_of_unknown_rate_get_what_would_tell_not_pin_it(run):
    # no bytes printed, and readings 50 ms apart cannot time 15 ms (pinned) or ~120 ms (pageable)
    # uploads: the advice names what would tell before either fix, for the pinned run as for the other
    h2d = _finding(_analysis(run), "h2d_bound")
    rec = h2d["recommendation"]
    assert rec.startswith("How fast the uploads run is not known")
    assert "cannot resolve uploads" in rec and "profiler trace" in rec
    assert not rec.startswith("Copy from pinned")


def test_a_one_off_pause_does_not_thin_a_steady_loop():
    # pinned copies at the line rate, back to back but for the profiler's 4.5 s start: the steps
    # cover the run in their steady state, so the uploads keep their share of the step (medium)
    doc = _analysis("copy_pinned")
    assert doc["log"]["timeline"]["steady_busy_fraction"] > 0.95
    assert doc["log"]["timeline"]["gpu_busy_fraction"] < 0.3  # (the span's figure, pause and all)
    h2d = _finding(doc, "h2d_bound")
    assert h2d["severity"] == "medium" and "h2d_share_of_run" not in h2d["evidence"]
    assert h2d["recommendation"].startswith("The uploads already run at 99% of the line rate")
    assert doc["first_cause"] == "copies_serialised"


def test_a_software_power_cap_at_the_max_clock_is_not_throttling():
    # the pageable workers: SwPowerCap flagged while the busy SM clock sat at 1980 of 1980 MHz
    # and the power read 171 W of 700: nothing was held down
    ids = [f["id"] for f in _analysis("lock_pageable_kv")["findings"]]
    assert "clocks_throttled" not in ids
    # the copy loop's cap took the clock to 1590 of 1980 MHz at 562 W read: throttled, and the
    # readings are not said to reach the limit they stayed under
    t = _finding(_analysis("copy_pinned"), "clocks_throttled")
    assert "1590 of 1980 MHz" in t["summary"] and "draws its rated power" not in t["summary"]
    assert "562 W of its 700 W limit" in t["summary"]


def test_each_record_s_worker_key_gives_the_workers_and_their_synthesis_side_by_side():
    # `worker=1` / `worker=2` on every line: two workers, each busy under the lock ~6% of the run,
    # and the synthesis floor counts two at a time (it had assumed one)
    log = _analysis("lock_pageable_kv")["log"]
    workers = log["timeline"]["workers"]
    assert sorted(workers) == ["1", "2"] and all(w["intervals"] == 8 for w in workers.values())
    assert sum(w["busy_s"] for w in workers.values()) == pytest.approx(log["split"]["held_ms"] / 1000, rel=0.01)
    assert log["bounds"]["synth_parallelism"] == 2
    assert any("one per worker the records name (2)" in a for a in log["bounds"]["assumptions"])


def test_a_worker_named_on_some_records_only_says_nothing_of_workers():
    import numpy as np
    import pandas as pd

    from gpuscope.analysis.evidence.log.quantities import record_workers

    def q(records, values):  # a parse result whose quantities are a frame (the frame path of _quantity_columns)
        frame = pd.DataFrame({"record": records, "gpu": -1, "name": "worker", "value": np.asarray(values, dtype=float)})
        return type("P", (), {"quantities": frame})()

    ids = np.arange(4)
    assert list(record_workers(q([0, 1, 2, 3], [1, 2, 1, 2]), ids)) == [1, 2, 1, 2]
    assert list(record_workers(q([3, 2, 1, 0], [2, 1, 2, 1]), ids)) == [1, 2, 1, 2]  # (any order)
    assert record_workers(q([0, 1, 2], [1, 2, 1]), ids) is None        # one record names none
    assert record_workers(q([0, 1, 2, 3], [1, 1, 1, 1]), ids) is None  # one worker: nothing side by side
    assert record_workers(q([0, 1, 2, 3], [1, 2.5, 1, 2]), ids) is None  # not a worker's number


def _stamped_steps(tmp_path, counter: bool):
    # steps of 100 ms (60 of them uploads) printed one a second: every step with a gap of 900 ms
    # after it (counter advancing by 1), or every 10th step of a busy loop (no counter: cannot tell)
    lines = []
    for i in range(12):
        stamp = f"2026-12-07T10:00:{i:02d}.000000Z"
        step = f"step={i} " if counter else ""
        lines.append(f"{stamp} {step}h2d_ms=60.0 compute_ms=40.0 step_ms=100.0")
    p = tmp_path / ("counted.log" if counter else "uncounted.log")
    p.write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["analyze", str(p), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_time_between_steps_counts_only_where_every_step_was_printed(tmp_path):
    counted = _stamped_steps(tmp_path, counter=True)
    assert counted["log"]["timeline"]["steady_busy_fraction"] == pytest.approx(0.1, abs=0.01)
    h2d = _finding(counted, "h2d_bound")
    assert h2d["severity"] == "low" and h2d["evidence"]["h2d_share_of_run"] == pytest.approx(0.06, abs=0.01)
    # the same lines without a counter: the 900 ms may be nine steps left unprinted, so the uploads
    # keep their share of the step (60%: high), and the cover is not claimed
    uncounted = _stamped_steps(tmp_path, counter=False)
    assert uncounted["log"]["timeline"]["steady_busy_fraction"] is None
    h2d = _finding(uncounted, "h2d_bound")
    assert h2d["severity"] == "high" and "h2d_share_of_run" not in h2d["evidence"]


# -- four workers queued for the lock (--fill once --workers 4: the seed's shape), recorded in the
# thirteenth session's batch (tools/gpu_session13_check.sh) on an H100 -----------------------------

@pytest.mark.parametrize("run", ["queued_pageable_kv", "queued_pageable_prose"])
def test_queued_workers_uploading_pageable_memory_get_the_seeds_cause(run):
    # the lock held back to back (cover ~1), the workers waiting ~200 ms for it, 70% of each tenure
    # pageable uploads: the first cause is the upload, the convoy beside it
    doc = _analysis(run)
    assert doc["log"]["timeline"]["steady_busy_fraction"] > 0.95
    assert doc["first_cause"] == "upload"
    ids = [f["id"] for f in doc["findings"]]
    assert ids[0] == "h2d_bound" and _finding(doc, "h2d_bound")["severity"] == "high" and "lock_convoy" in ids
    assert doc["log"]["split"]["h2d_share"] == pytest.approx(0.71, abs=0.02)


def test_the_readings_resolution_decides_whether_the_upload_rate_is_told():
    # the same pageable uploads (~80 ms, 3 x 256 MiB): sampled every 20 ms they are resolved, and the
    # bytes PCIe moved per upload (0.79 GB of 0.805 written) give 9.6 GB/s, 17% of the line: pin it;
    # sampled every 50 ms (the adaptive sampler's other tick) they are not, and the advice says what
    # would tell instead of guessing
    prose = _analysis("queued_pageable_prose")
    under = _finding(prose, "pcie_underused")
    assert under["severity"] == "high" and under["evidence"]["sample_interval_s"] == pytest.approx(0.02, abs=0.001)
    h2d = _finding(prose, "h2d_bound")
    assert h2d["evidence"]["pcie_rx_gb_per_h2d_phase"] == pytest.approx(0.805, rel=0.03)
    assert h2d["recommendation"].startswith("Copy from pinned")
    kv = _finding(_analysis("queued_pageable_kv"), "h2d_bound")
    assert kv["evidence"]["pcie_rx_resolved_by_samples"] is False
    assert kv["recommendation"].startswith("How fast the uploads run is not known") and "50 ms apart" in kv["recommendation"]


@pytest.mark.parametrize("run", ["queued_pinned_kv", "queued_pinned_prose"])
def test_queued_workers_uploading_pinned_memory_are_not_told_to_pin(run):
    # pinned uploads of ~15 ms: the readings give a lower bound, at least half the line: no "pin it",
    # and how much pinning could still give is said
    doc = _analysis(run)
    h2d = _finding(doc, "h2d_bound")
    assert h2d["severity"] == "medium" and "at least" in h2d["summary"]
    assert h2d["recommendation"].startswith("The uploads already run at least") and "little left to gain" in h2d["recommendation"]
    assert "pcie_underused" not in [f["id"] for f in doc["findings"]]


def test_compare_of_the_queued_twins_gives_the_seeds_verdict():
    r = runner.invoke(app, ["compare", str(RUNS / "queued_pageable_kv"), str(RUNS / "queued_pinned_kv")],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "cut held 2.5x" in r.output and "throughput +2.5x" in r.output
