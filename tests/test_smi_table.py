"""nvidia-smi's own table (`nvidia-smi -l 1 > smi.txt`) read as the samples it shows: each
round's time line, each GPU's GPU-Util, power and memory; the same figures as the --query-gpu
capture of those rounds. A table without its time line is refused with the capture that would
tell. The tables here are written in the shapes two drivers print (550's wide rows, 470's)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import NoDataError
from gpuscope.parsers.samples import read_query_gpu, read_samples

T0 = datetime(2026, 12, 7, 10, 0, 1)

NEW = ("|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:{bus}:00.0 Off |                    0 |\n"
       "| N/A   {temp}C    P0            {power}W /  700W |   {mem}MiB /  81559MiB |     {util}%      Default |\n"
       "|                                         |                        |             Disabled |\n")
OLD = ("|   {i}  Tesla V100-SXM2...  On   | 00000000:{bus}:1E.0 Off |                    0 |\n"
       "| N/A   {temp}C    P0    {power}W / 300W |   {mem}MiB / 16160MiB |     {util}%      Default |\n")
BANNER = ("+-----------------------------------------------------------------------------------------+\n"
          "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
          "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
          "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
          "|=========================================+========================+======================|\n")
PROCS = ("+-----------------------------------------------------------------------------------------+\n"
         "| Processes:                                                                              |\n"
         "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n"
         "|    0   N/A  N/A     41234      C   python                                      40202MiB |\n")


def _util(r: int, g: int) -> int:
    return (7 * r + 31 * g) % 101


def _capture(rounds: int, gpus: int, shape: str = NEW, timed: bool = True) -> str:
    out = []
    for r in range(rounds):
        if timed:
            out.append((T0 + timedelta(seconds=r)).strftime("%a %b %e %H:%M:%S %Y") + "\n")
        out.append(BANNER)
        for g in range(gpus):
            out.append(shape.format(i=g, bus=f"{0x19 + g:02X}", temp=38 + g, power=100 + 10 * r + g,
                                    mem=40000 + g, util=_util(r, g)))
        out.append(PROCS)
    return "".join(out)


@pytest.mark.parametrize("shape", [NEW, OLD])
def test_each_round_and_gpu_read_as_its_query_gpu_row(tmp_path, shape):
    path = tmp_path / "smi.txt"
    path.write_text(_capture(6, 2, shape))
    df = read_samples(path)
    assert df.attrs["format"] == "smi-table" and len(df) == 12
    # the --query-gpu capture of the same rounds, written here by hand
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], memory.used [MiB]"]
    for r in range(6):
        for g in range(2):
            rows.append(f"{(T0 + timedelta(seconds=r)).strftime('%Y/%m/%d %H:%M:%S.000')}, {g}, {_util(r, g)} %, "
                        f"{100 + 10 * r + g}.00 W, {40000 + g} MiB")
    q = tmp_path / "q.csv"
    q.write_text("\n".join(rows) + "\n")
    want = read_query_gpu(q)
    cols = ["t_wall", "gpu", "gpu_util_pct", "power_w", "mem_used_mib"]
    got = df.sort_values(["t_wall", "gpu"])[cols].reset_index(drop=True)
    assert got.equals(want.sort_values(["t_wall", "gpu"])[cols].reset_index(drop=True))


def test_analyze_of_a_table_capture_says_what_its_busy_figure_is(tmp_path):
    path = tmp_path / "smi.txt"
    path.write_text(_capture(30, 1))
    r = CliRunner().invoke(app, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["log"] is None and doc["samples"] is not None
    assert doc["samples"]["read"]["format"] == "smi-table"
    assert doc["samples"]["read"]["rows"] == 30


def test_a_table_without_its_time_line_is_refused_saying_what_would_tell(tmp_path):
    path = tmp_path / "smi.txt"
    path.write_text(_capture(1, 2, timed=False))
    with pytest.raises(NoDataError, match="no time.*--query-gpu=timestamp"):
        read_samples(path)
    r = CliRunner().invoke(app, ["analyze", str(path)])
    assert r.exit_code != 0 and "nvidia-smi -l 1" in r.stderr and "Traceback" not in r.stderr


def test_a_gpu_row_of_another_shape_is_counted_not_guessed(tmp_path):
    text = _capture(4, 1).replace("| N/A   38C    P0            120W", "| N/A   38C    P0   (garbled)  120W", 1)
    path = tmp_path / "smi.txt"
    path.write_text(text)
    df = read_samples(path)
    assert len(df) == 3 and df.attrs["malformed_rows"] == 1


def test_pmon_is_refused_not_read_as_the_gpus_activity(tmp_path):
    # nvidia-smi pmon: a row per process (two here, one busy, one idle, on GPU 0): read as dmon
    # rows it alternated 97% and 1% and read as 60% idle; each row is one process's share
    rows = ["# gpu         pid   type     sm    mem    enc    dec    command",
            "# Idx           #    C/G      %      %      %      %    name"]
    for _ in range(4):
        rows += ["    0      41234     C     97     38      -      -    python",
                 "    0      41301     C      1      0      -      -    python"]
    path = tmp_path / "pmon.txt"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(NoDataError, match="pmon output: each row is one process"):
        read_samples(path)
    r = CliRunner().invoke(app, ["analyze", str(path)])
    assert r.exit_code != 0 and "dmon -o DT" in r.stderr and "Traceback" not in r.stderr


def test_gpustat_lines_read_as_their_query_gpu_rows(tmp_path):
    # `gpustat -i 1 -P`: a host line with the time, then a line per GPU (written in its shape)
    out = []
    for r in range(5):
        out.append(f"server1                      {(T0 + timedelta(seconds=r)).strftime('%a %b %e %H:%M:%S %Y')}  550.54.15")
        for g in range(2):
            out.append(f"[{g}] NVIDIA H100 80GB HBM3 | {38 + g}\u00b0C, {_util(r, g):3d} %, {100 + r:3d} / 700 W | "
                       f"{40000 + g:5d} / 81559 MB | python/41234(40202M)")
    path = tmp_path / "gpus.txt"
    path.write_text("\n".join(out) + "\n")
    df = read_samples(path).sort_values(["t_wall", "gpu"]).reset_index(drop=True)
    assert df.attrs["format"] == "gpustat" and len(df) == 10
    assert df["gpu_util_pct"].tolist() == [float(_util(r, g)) for r in range(5) for g in range(2)]
    assert df["power_w"].tolist() == [float(100 + r) for r in range(5) for g in range(2)]
    assert df["temperature_c"].tolist() == [38.0, 39.0] * 5
    assert (df["t_wall"].diff().dropna().isin([0.0, 1.0])).all()
