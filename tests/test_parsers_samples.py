"""Sample-file readers: gpuscope's samples.csv, nvidia-smi dmon, nvidia-smi --query-gpu."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import pytest

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.samples import (
    SAMPLE_COLUMNS,
    read_dmon,
    read_query_gpu,
    read_samples,
    read_samples_csv,
)

HEADER = ",".join(SAMPLE_COLUMNS)
DATA = Path(__file__).parent / "data"


def _dtypes(df):
    return {c: str(t) for c, t in df.dtypes.items()}


def _write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return f


PIPE_COLUMNS = ("tensor_active", "fp16_active", "fp32_active", "fp64_active")
HEADER_18 = ",".join(c for c in SAMPLE_COLUMNS if c not in PIPE_COLUMNS)  # before the GPM pipe columns


def test_gpuscope_csv_with_torn_last_row(tmp_path):
    f = _write(tmp_path, "samples.csv", HEADER_18 + "\n"
               "1796047200.0,0.0,0,1.5,0.2,0.9,0.5,0.3,100,20,1024,250.5,1980,gpm,0,2619,51,4\n"
               "1796047200.1,0.1,1,,,,,,,,,,,counter,1,,,\n"
               "oops,0.2,0,1,1,1,1,1,1,1,1,1,1,gpm,0,1,1,1\n"
               "1796047200.2,0.2,0,3.1,0.4,0.9,0.5,0.3,100,20,10")  # torn: no newline
    df = read_samples(tmp_path)  # a directory: its samples.csv
    assert df.attrs["format"] == "gpuscope" and df.attrs["malformed_rows"] == 2
    assert len(df) == 2 and df["gpu"].tolist() == [0, 1]
    assert df["rx_gbs"].iloc[0] == 1.5 and math.isnan(df["rx_gbs"].iloc[1])
    assert df["pcie_source"].tolist() == ["gpm", "counter"] and df["wrap_suspect"].tolist() == [0, 1]
    assert list(df.columns) == list(SAMPLE_COLUMNS)
    # compact columns (parsers.samples_csv): the GPU index as int16, times float64
    assert _dtypes(df)["gpu"] == "int16" and _dtypes(df)["t_wall"] == "float64"
    assert df["mem_clock_mhz"].iloc[0] == 2619 and df["temperature_c"].iloc[0] == 51
    assert df["clock_event_reasons"].iloc[0] == 4 and math.isnan(df["clock_event_reasons"].iloc[1])
    # whole numbers: float32 holds them exactly (any value float32 cannot hold: float64)
    assert _dtypes(df)["clock_event_reasons"] == "float32"
    assert all(df[c].isna().all() for c in PIPE_COLUMNS)  # written before them: missing, not 0
    assert read_samples_csv(f).equals(df)


LEGACY = ("t_wall,t_mono,gpu,rx_gbs,tx_gbs,sm_active,sm_occupancy,dram_active,gpu_util_pct,mem_util_pct,"
          "mem_used_mib,power_w,sm_clock_mhz,pcie_source,wrap_suspect")
NEW_COLUMNS = ("mem_clock_mhz", "temperature_c", "clock_event_reasons")


def test_samples_csv_written_before_the_slow_clock_fields_still_reads(tmp_path):
    # files recorded before clock-event reasons, memory clock and temperature were sampled
    # (the H200 captures of tests/data/h200_foreign) have 15 columns: the new ones read as NaN
    assert set(NEW_COLUMNS) <= set(SAMPLE_COLUMNS) and not set(NEW_COLUMNS) & set(LEGACY.split(","))
    f = _write(tmp_path, "samples.csv", LEGACY + "\n1796047200.0,0.0,0,1.5,0.2,0.9,0.5,0.3,100,20,1024,250.5,1980,gpm,0\n")
    df = read_samples_csv(f)
    assert list(df.columns) == list(SAMPLE_COLUMNS) and len(df) == 1 and df.attrs["malformed_rows"] == 0
    assert df["sm_clock_mhz"].iloc[0] == 1980 and all(math.isnan(df[c].iloc[0]) for c in NEW_COLUMNS)
    real = read_samples(DATA / "h200_foreign" / "runs" / "train_slow")
    assert len(real) == 681 and real.attrs["malformed_rows"] == 0
    assert real[list(NEW_COLUMNS)].isna().all().all() and real["sm_active"].notna().sum() == 122


DMON = """\
# gpu     sm    mem    enc    dec    jpg    ofa  rxpci  txpci
# Idx      %      %      %      %      %      %   MB/s   MB/s
    0     45      3      0      0      0      0   2100     40
    1      -      1      0      0      0      0   1500     30
    0     97     20      0      0      0      0  52000    100
    1     95     18      0      0      0      0  51000     90
# gpu     sm    mem    enc    dec    jpg    ofa  rxpci  txpci
# Idx      %      %      %      %      %      %   MB/s   MB/s
    0     10  garbage
    0     12      1      0      0      0      0    900     20
"""


def test_dmon_without_time_counts_rounds(tmp_path):
    df = read_dmon(_write(tmp_path, "dmon.txt", DMON), interval_s=0.5)
    assert df.attrs["malformed_rows"] == 1
    assert df["gpu"].tolist() == [0, 1, 0, 1, 0]
    assert df["t_mono"].tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
    assert df["t_wall"].isna().all()
    assert df["rx_gbs"].tolist() == [2.1, 1.5, 52.0, 51.0, 0.9]
    assert math.isnan(df["gpu_util_pct"].iloc[1]) and df["gpu_util_pct"].iloc[2] == 97.0
    assert set(df["pcie_source"]) == {"throughput"}


def test_dmon_with_date_and_time(tmp_path):
    text = """\
#Date       Time        gpu     sm    mem    enc    dec  rxpci  txpci    pwr  gtemp
#YYYYMMDD   HH:MM:SS    Idx      %      %      %      %   MB/s   MB/s      W      C
 20261130   14:30:00      0     45      3      0      0   2100     40    300     55
 20261130   14:30:01      0     97     20      0      0  52000    100    650     60
"""
    df = read_samples(_write(tmp_path, "dmon.txt", text))
    assert df.attrs["format"] == "dmon"
    assert df["t_wall"].iloc[0] == pytest.approx(datetime(2026, 11, 30, 14, 30, 0).timestamp())
    assert df["t_mono"].tolist() == [0.0, 1.0]
    assert df["power_w"].tolist() == [300.0, 650.0]


def test_query_gpu_with_units_and_na(tmp_path):
    text = """\
timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], power.draw [W], clocks.sm [MHz], pcie.link.gen.current
2026/11/30 14:30:00.100, 0, 45 %, 12 %, 1024 MiB, 250.50 W, 1980 MHz, 5
2026/11/30 14:30:00.100, 1, 0 %, 0 %, 0 MiB, [N/A], 345 MHz, 5
2026/11/30 14:30:00.600, 0, x %, 12 %, 1024 MiB, 250.50 W, 1980 MHz, 5
2026/11/30 14:30:01.100, 0, 97 %, 40 %, 2048 MiB, 600.00 W, 1980 MHz, 5
2026/11/30 14:30:01.600, 0, 9"""
    df = read_samples(_write(tmp_path, "q.csv", text))
    # the torn last row is dropped; "x %" is a missing utilization, the row's other readings stay
    assert df.attrs["format"] == "query-gpu" and df.attrs["malformed_rows"] == 1
    assert df.attrs["bad_values"] == {"gpu_util_pct": 1}
    assert df["gpu"].tolist() == [0, 1, 0, 0]
    assert df["gpu_util_pct"].tolist()[:2] == [45.0, 0.0] and math.isnan(df["gpu_util_pct"].iloc[2])
    assert df["power_w"].iloc[2] == 250.5
    assert math.isnan(df["power_w"].iloc[1]) and df["mem_used_mib"].iloc[3] == 2048.0
    assert df["t_mono"].tolist() == pytest.approx([0.0, 0.0, 0.5, 1.0])
    assert df["t_wall"].iloc[0] == pytest.approx(datetime(2026, 11, 30, 14, 30, 0, 100000).timestamp())
    assert df["rx_gbs"].isna().all()
    assert read_query_gpu(tmp_path / "q.csv").equals(df)


def test_query_gpu_clock_event_reasons_memory_clock_and_temperature(tmp_path):
    text = """\
timestamp, index, clocks_event_reasons.active, clocks.mem [MHz], temperature.gpu
2026/11/30 14:30:00.100, 0, 0x0000000000000001, 3201 MHz, 33
2026/11/30 14:30:00.300, 0, 0x0000000000000024, 3201 MHz, 81
2026/11/30 14:30:00.500, 0, [N/A], 3201 MHz, 82
2026/11/30 14:30:00.700, 0, 0xZZ, 3201 MHz, 82
"""
    df = read_query_gpu(_write(tmp_path, "q.csv", text))
    # the unreadable bitmask is missing, its row's clocks and temperature stay
    assert df.attrs["malformed_rows"] == 0 and df.attrs["bad_values"] == {"clock_event_reasons": 1}
    assert df["clock_event_reasons"].tolist()[:2] == [1.0, 36.0] and df["clock_event_reasons"].iloc[2:].isna().all()
    assert df["mem_clock_mhz"].tolist() == [3201.0] * 4 and df["temperature_c"].tolist() == [33.0, 81.0, 82.0, 82.0]


def test_dmon_memory_clock_and_temperature_of_the_h200_capture():
    df = read_samples(DATA / "h200_foreign" / "train_slow_dmon.txt")
    assert df.attrs["format"] == "dmon" and len(df) > 5
    assert df["mem_clock_mhz"].iloc[0] == 3201 and df["temperature_c"].iloc[0] == 35
    assert df["sm_clock_mhz"].iloc[0] == 1980 and df["clock_event_reasons"].isna().all()


def test_bad_sample_inputs(tmp_path):
    with pytest.raises(InputError):
        read_samples(tmp_path / "missing.csv")
    with pytest.raises(NoDataError):
        read_samples(_write(tmp_path, "empty.csv", ""))
    with pytest.raises(InputError, match="not a samples file"):
        read_samples(_write(tmp_path, "x.csv", "a,b,c\n1,2,3\n"))
    with pytest.raises(InputError):
        read_dmon(_write(tmp_path, "nod.txt", "0 1 2\n"))


def test_a_query_gpu_capture_after_a_schedulers_lines_is_read_and_the_lines_counted(tmp_path):
    """Issue 33 class 5: `srun:` lines before the --query-gpu header made the capture unreadable
    (read as a log: "no timing lines"); they are skipped and counted as rows the reader could not use."""
    from gpuscope.parsers.samples import looks_like_samples, read_samples

    rows = "".join(f"2026/12/01 10:00:0{i}.000, 0, {97 if i % 3 else 2} %, 40 %, 30000 MiB\n" for i in range(8))
    text = ("srun: job 4242 queued and waiting for resources\nsrun: job 4242 has been allocated resources\n"
            "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB]\n" + rows)
    p = tmp_path / "q.csv"
    p.write_text(text)
    assert looks_like_samples(text)
    df = read_samples(p)
    assert len(df) == 8 and df.attrs["format"] == "query-gpu" and df.attrs["malformed_rows"] == 2


def test_a_log_naming_the_query_columns_in_prose_is_no_capture():
    """The false-fire side: a line that names the columns, with no row of as many fields after it."""
    from gpuscope.parsers.samples import looks_like_samples

    text = ("step 1 took 12 ms\nwe sample timestamp, index, utilization.gpu and memory.used every second\n"
            "step 2 took 13 ms\n")
    assert not looks_like_samples(text)
