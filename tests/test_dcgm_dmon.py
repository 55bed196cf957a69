"""DCGM's `dcgmi dmon` output read as samples: each known field into its samples.csv column
(SMACT -> sm_active, PCIRX bytes a second -> rx_gbs, ...), N/A as missing, a field it does not
know left unread, other entities' rows skipped and counted, and no time printed said so. The
captures are written here in dmon's shape."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.parsers.samples import damage_note, read_samples

HEAD = "#Entity   SMACT        SMOCC        DRAMA        NVLTX        PCITX                PCIRX\nID\n"


def _row(entity: str, smact: float, rx: float) -> str:
    return f"{entity:<10}{smact:<13.3f}{smact / 2:<13.3f}{smact / 4:<13.3f}{7.0:<13.3f}{1.5e6:<21.3f}{rx:.3f}\n"


def _capture(rounds: int) -> str:
    out = [HEAD]
    for r in range(rounds):
        out.append(_row("GPU 0", 0.40 + 0.01 * r, 12.0e9))
        out.append(_row("GPU 1", 0.0, 0.0) if r != 2 else "GPU 1     N/A          N/A          N/A          N/A"
                   "          N/A                  N/A\n")
        if r == 1:
            out.append(_row("GPU-I 3", 0.1, 0.0))  # (a MIG instance's row: not a GPU's)
    return "".join(out)


def test_each_field_into_its_column_with_its_unit(tmp_path):
    path = tmp_path / "dcgm.txt"
    path.write_text(_capture(5))
    df = read_samples(path)
    assert df.attrs["format"] == "dcgm-dmon" and len(df) == 10
    g0 = df[df["gpu"] == 0].reset_index(drop=True)
    assert g0["sm_active"].tolist() == pytest.approx([0.40 + 0.01 * r for r in range(5)])
    assert g0["sm_occupancy"].tolist() == pytest.approx([(0.40 + 0.01 * r) / 2 for r in range(5)], abs=1e-3)
    assert g0["rx_gbs"].tolist() == pytest.approx([12.0] * 5)  # bytes a second / 1e9
    assert g0["tx_gbs"].tolist() == pytest.approx([0.0015] * 5)
    assert g0["t_mono"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and g0["t_wall"].isna().all()
    g1 = df[df["gpu"] == 1].reset_index(drop=True)
    assert math.isnan(g1.loc[2, "sm_active"]) and g1.loc[1, "sm_active"] == 0.0
    assert df.attrs["malformed_rows"] == 1  # the GPU-I row
    assert "rounds taken 1 s apart" in damage_note(df)


def test_analyze_reads_sm_activity_not_utilization(tmp_path):
    path = tmp_path / "dcgm.txt"
    path.write_text(_capture(12))
    r = CliRunner().invoke(app, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["samples"]["read"]["format"] == "dcgm-dmon"
    act = doc["samples"]["activity"]
    assert act["source"] == "gpm_sm_active" and act["gpus"] == [0, 1]
    assert act["per_gpu"]["0"]["busy_fraction"] > 0.3 and act["per_gpu"]["1"]["busy_fraction"] == 0.0


def test_a_header_of_fields_it_does_not_know_is_no_samples_file(tmp_path):
    path = tmp_path / "nvl.txt"
    path.write_text("#Entity   NVLTX        NVLRX\nID\nGPU 0     1.000        2.000\n")
    r = CliRunner().invoke(app, ["analyze", str(path)])
    assert r.exit_code != 0 and "Traceback" not in r.stderr
