"""`gpuscope analyze` through typer's CliRunner: stdout and stderr asserted separately."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import UsageError
from gpuscope.units import parse_size
from tests.conftest import EXAMPLES

ARTICLE = EXAMPLES / "article_excerpt.log"
runner = CliRunner()


def run(*args, columns: int = 120):
    return runner.invoke(app, ["analyze", *map(str, args)], env={"COLUMNS": str(columns)})


def test_article_json():
    r = run(ARTICLE, "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    j = json.loads(r.stdout)
    assert j["log"]["records"] == 4 and j["log"]["split"]["inconsistent_records"] == 1
    assert j["log"]["components"]["ntt_kernels"]["median_ms"] == 1354.5
    assert j["log"]["split"]["h2d_ms"] == 8613 and j["log"]["split"]["held_ms"] == 14460


def test_article_tables_and_records():
    r = run(ARTICLE, "--records")
    assert r.exit_code == 0 and r.stderr == ""
    assert "GPU-lock time split" in r.stdout and "h2d_bound" in r.stdout
    assert "inconsistent (+521)" in r.stdout
    plain = run(ARTICLE)
    assert "inconsistent (+521)" not in plain.stdout


def test_options_reach_the_analysis(tmp_path):
    r = run(ARTICLE, "--json", "--abc-bytes", "1536M", "--line-rate", "25")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    ev = next(d for d in j["findings"] if d["id"] == "h2d_bound")["evidence"]
    assert ev["bytes_per_record"] == 1536 * 2**20 and ev["line_rate_gbs"] == 25
    assert ev["upload_ms_at_line_rate"] == pytest.approx(1536 * 2**20 / 25e9 * 1000, abs=0.05)
    assert j["source"]["options"]["line_rate_source"] == "option"


def test_csv_and_json_together(tmp_path):
    out = tmp_path / "csv"
    r = run(ARTICLE, "--json", "--csv", out)
    assert r.exit_code == 0
    assert json.loads(r.stdout)["log"]["records"] == 4
    assert "CSV files" in r.stderr and (out / "records.csv").exists()


def test_forced_format_and_bad_format():
    assert run(ARTICLE, "--format", "condensed", "--json").exit_code == 0
    r = run(ARTICLE, "--format", "xml")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("gpuscope: ") and "xml" in r.stderr and len(r.stderr.splitlines()) == 1


def test_user_model(tmp_path):
    m = tmp_path / "m.toml"
    m.write_text('held = "mutex_held"\n[roles]\nh2d = ["ntt_kernels"]\ngpu_compute = ["msm"]\n')
    r = run(ARTICLE, "--json", "--model", m)
    assert r.exit_code == 0
    j = json.loads(r.stdout)
    assert j["source"]["model"] == "m" and j["log"]["split"]["gpu_compute_ms"] == 634 + 631 + 630 + 631
    bad = tmp_path / "bad.toml"
    bad.write_text('held = "mutex_held"\n[roles]\nwarp = ["x"]\n')
    r = run(ARTICLE, "--model", bad)
    assert r.exit_code == 2 and "roles.warp" in r.stderr and str(bad) in r.stderr and r.stdout == ""


@pytest.mark.parametrize("opt", [("--abc-bytes", "lots"), ("--abc-bytes", "0"), ("--line-rate", "-5")])
def test_bad_option_values(opt):
    r = run(ARTICLE, *opt)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("gpuscope: ") and len(r.stderr.splitlines()) == 1


def test_parse_size_one_rule():
    """One rule for every size option (gpuscope.units): binary K/M/G and KiB..., decimal KB/MB/GB."""
    assert parse_size("1536M") == parse_size("1.5G") == 1536 * 2**20
    assert parse_size("1.5GB") == 1_500_000_000 and parse_size("1.5GiB") == 1_610_612_736
    assert parse_size("1.5GiB") == int(1.5 * 2**30)
    assert parse_size("1.6GB") == 1_600_000_000
    assert parse_size("1610612736") == 1610612736
    assert parse_size("512k") == 512 * 1024
    for bad in ("", "1.5X", "-1G", "G"):
        with pytest.raises(UsageError):
            parse_size(bad)


def _bad_input_cases(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(bytes(range(256)) * 64)
    chatter = tmp_path / "chatter.log"
    chatter.write_text("INFO starting\nINFO nothing to see\n" * 50)
    longline = tmp_path / "long.log"
    longline.write_bytes(b"x" * (10 * 2**20) + b"\n")
    nodir = tmp_path / "run-without-log"
    nodir.mkdir()
    return [
        (tmp_path / "missing.log", 3),
        (nodir, 3),
        (empty, 4),
        (binary, 4),
        (chatter, 4),
        (longline, 4),
    ]


def test_bad_inputs_one_line_and_exit_code(tmp_path):
    for path, code in _bad_input_cases(tmp_path):
        r = run(path)
        assert r.exit_code == code, (path, r.exit_code, r.stderr)
        assert r.stdout == ""
        assert r.stderr.startswith("gpuscope: ") and len(r.stderr.splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr


def test_non_utf8_and_truncated_and_long_lines_are_read_as_far_as_they_go(tmp_path):
    text = ARTICLE.read_bytes()
    p = tmp_path / "mixed.log"
    p.write_bytes(b"\xff\xfe noise \xc3\x28\n" + b"y" * (10 * 2**20) + b"\n" + text[:-12])  # cut mid-line
    r = run(p, "--json")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"]["records"] in (3, 4)
    if j["log"]["skipped_lines"]:
        assert f"{j['skipped_lines']} damaged timing line" in r.stderr and "use -v" in r.stderr
    else:
        assert r.stderr == ""


def test_skipped_lines_note_and_verbose_listing(tmp_path):
    p = tmp_path / "damaged.log"
    p.write_text(ARTICLE.read_text() + "mutex_wait_ms=12 | barrier_wait_ms=0\nntt_kernels=abcms | msm=6x31\n")
    r = run(p, "--json")
    assert r.exit_code == 0
    n = json.loads(r.stdout)["log"]["skipped_lines"]
    assert n >= 1
    assert r.stderr.strip().endswith("skipped (use -v to list)")
    v = run(p, "--json", "-v")
    assert v.exit_code == 0 and "line 14" in v.stderr
    assert json.loads(v.stdout)["log"]["skipped_lines"] == n


def test_rundir_with_samples_and_meta(tmp_path):
    d = tmp_path / "runs" / "20261130-120000-pageable"
    d.mkdir(parents=True)
    base = 1_700_000_000.0
    lines, samples = [], ["t_wall,t_mono,gpu,rx_gbs,tx_gbs,sm_active,wrap_suspect"]
    for i in range(4):
        t = base + 3 * i
        lines.append(f"{_iso(t + 0.1)} CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=100")
        lines.append(f"{_iso(t + 1.6)} CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=1000ms coset_intt_sync=100ms "
                     "msm_init=1ms msm_invoke=398ms msm_dtor=0ms total=1500ms")
        lines.append(f"{_iso(t + 1.6)} CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=1500")
        lines.append(f"{_iso(t + 1.6)} CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0")
        lines.append(f"{_iso(t + 2.0)} CUZK_TIMING: gpu_tid=0 batch_add_ms=400")
        lines.append(f"{_iso(t + 2.1)} CUZK_TIMING: gpu_tid=0 tail_msm_ms=100 gpu_total_ms=2000")
        lines.append(f"{_iso(t + 2.1)} CUZK_TIMING: mutex_held_ms=2010 total_start_fn_ms=2100")
        for k in range(30):
            ts = t + k * 0.1
            rx = 2.0 if 0.1 < k * 0.1 < 1.1 else 45.0
            samples.append(f"{ts},{ts},0,{rx},0.1,0.5,0")
    (d / "timing.log").write_text("\n".join(lines) + "\n")
    samples.insert(5, "oops,1.0,0,2.0,0.1,0.5,0")  # one malformed row: skipped, counted, shown
    (d / "samples.csv").write_text("\n".join(samples) + "\n")
    (d / "meta.json").write_text(json.dumps({"schema_version": 1, "line_rate_gbs": 55.4}))
    r = run(d, "--json")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"]["pcie"]["skipped_sample_rows"] == 1
    out = run(d).stdout.replace("\n", " ")  # the caption says what was dropped and why
    assert "1 row dropped (no readable time or GPU index" in out
    assert j["log"]["records"] == 4 and j["source"]["options"]["line_rate_gbs"] == 55.4
    assert j["source"]["options"]["line_rate_source"] == "meta"
    assert j["log"]["pcie"]["phases"]["h2d"]["rx_gbs_median"] == 2.0
    assert any(d["id"] == "pcie_underused" for d in j["findings"])
    assert j["log"]["timeline"]["source"] == "tenures" and j["log"]["timeline"]["gpu_busy_fraction"] is not None
    # --samples on a plain log gives the same join
    r2 = run(d / "timing.log", "--json", "--samples", d / "samples.csv")
    assert r2.exit_code == 0, r2.stderr
    assert json.loads(r2.stdout)["log"]["pcie"]["phases"]["h2d"]["rx_gbs_median"] == 2.0
    r3 = run(d / "timing.log", "--samples", tmp_path / "nope.csv")
    assert r3.exit_code == 3 and r3.stdout == ""


def test_samples_from_nvidia_smi_dmon_join_the_log(tmp_path):
    # The user's own `nvidia-smi dmon -s ut -o DT` capture (1 s rows, local time, MB/s)
    # beside a daemon log with ISO (UTC) stamps: the join is on the same clock.
    import time as _time

    base = 1_700_000_000.0
    lines, dmon = [], ["#Date       Time        gpu     sm    mem  rxpci  txpci",
                       "#YYYYMMDD   HH:MM:SS    Idx      %      %   MB/s   MB/s"]
    for i in range(3):
        t = base + 20 * i
        lines.append(f"{_iso(t + 0.5)} CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=100")
        lines.append(f"{_iso(t + 9.0)} CUZK_TIMING: gpu_tid=0 h2d_ms=8000 h2d_bytes=16000000000")
        lines.append(f"{_iso(t + 12.0)} CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=11000ms coset_intt_sync=100ms "
                     "msm_init=1ms msm_invoke=398ms msm_dtor=0ms total=11500ms")
        lines.append(f"{_iso(t + 12.0)} CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=11500")
        lines.append(f"{_iso(t + 12.0)} CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0")
        lines.append(f"{_iso(t + 12.4)} CUZK_TIMING: gpu_tid=0 batch_add_ms=400")
        lines.append(f"{_iso(t + 12.5)} CUZK_TIMING: gpu_tid=0 tail_msm_ms=100 gpu_total_ms=12000")
        lines.append(f"{_iso(t + 12.5)} CUZK_TIMING: mutex_held_ms=12000 total_start_fn_ms=12100")
        for k in range(20):
            rx = 2000 if 2 <= k <= 8 else 50000  # MB/s: the upload crawls at 2 GB/s
            stamp = _time.strftime("%Y%m%d   %H:%M:%S", _time.localtime(t + k))
            dmon.append(f" {stamp}      0     {5 if k <= 8 else 95}      3  {rx}     40")
    log = tmp_path / "daemon.log"
    log.write_text("\n".join(lines) + "\n")
    smi = tmp_path / "dmon.txt"
    smi.write_text("\n".join(dmon) + "\n")
    r = run(log, "--json", "--samples", smi, "--line-rate", "50")
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["log"]["records"] == 3
    assert j["log"]["pcie"]["phases"]["h2d"]["rx_gbs_median"] == 2.0
    assert any(d["id"] == "pcie_underused" for d in j["findings"])


def _iso(t: float) -> str:
    from gpuscope.clock import iso_from_epoch

    return iso_from_epoch(t)


def test_every_command_has_help_text():
    import typer

    cmd = typer.main.get_command(app)
    assert cmd.commands, "no commands registered"
    for name, sub in cmd.commands.items():
        assert (sub.help or "").strip(), f"command {name} has no help text"
        r = runner.invoke(app, [name, "--help"])
        assert r.exit_code == 0 and "Example" in r.stdout, name


def test_rundir_spans_are_the_phase_source(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    base = 1_700_000_000.0
    (d / "timing.log").write_text(ARTICLE.read_text())   # no time stamps: phases must come from spans
    spans = ["t_start,t_end,gpu,worker,partition,phase"]
    samples = ["t_wall,t_mono,gpu,rx_gbs,tx_gbs,sm_active,wrap_suspect"]
    for i in range(4):
        t = base + 2 * i
        spans.append(f"{t},{t + 1},0,{i % 2},{i},h2d")
        spans.append(f"{t + 1},{t + 1.8},0,{i % 2},{i},msm")
        for k in range(20):
            ts = t + k * 0.1
            samples.append(f"{ts},{ts},0,{4.0 if k < 10 else 51.0},0.2,{0.05 if k < 10 else 0.9},0")
    (d / "spans.csv").write_text("\n".join(spans) + "\n")
    (d / "samples.csv").write_text("\n".join(samples) + "\n")
    r = run(d, "--json")
    assert r.exit_code == 0, r.stderr
    p = json.loads(r.stdout)["log"]["pcie"]
    assert p["phases_from"] == "spans.csv"
    assert p["phases"]["h2d"]["rx_gbs_median"] == 4.0 and p["phases"]["msm"]["rx_gbs_median"] == 51.0
    assert p["phases"]["msm"]["sm_active_median"] == 0.9
    t = run(d)
    assert t.exit_code == 0 and "PCIe and SM activity by phase" in t.stdout and t.stderr == ""
