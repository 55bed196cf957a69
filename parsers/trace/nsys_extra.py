"""What an Nsight Systems export holds beside its events: thread names and GPU metric samples.
Pure: no printing.

    thread_names(con, tables, ranks) -> {(rank, pid, tid): name}
        ThreadNames (globalTid -> nameId -> StringIds): the names the host threads had, for the
        threads of the processes read (ranks: process key -> rank, the reader's)
    gpu_metrics(con, tables, devices, epoch_s, notes) -> SAMPLE_SCHEMA frame or None
        GPU_METRICS + TARGET_INFO_GPU_METRICS (a capture with --gpu-metrics-devices) as the
        samples the NVML recorder writes, so the samples' figures and rules run beside the exact
        events. Only what the export settles is mapped; the rest is left out, a note saying so:

        SMs Active [Throughput %]       -> sm_active (0-1): the share of SMs active over the
                                           sample's period, the quantity GPM/DCGM call SM active
        DRAM Read + Write Bandwidth     -> dram_active (0-1): their percents of the peak DRAM
          [Throughput %]                   bandwidth summed (both needed: read alone understates)
        PCIe RX / TX Throughput         -> rx_gbs / tx_gbs, only where the unit is a byte rate;
                                           a percent (of the link's peak, which the export does
                                           not give in bytes) is left out
        the GPU                         -> which CUDA device a metrics source (typeId) sampled
                                           is not in the schema: mapped only when the export has
                                           one source and the events one device; else left out
"""

from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd

from gpuscope.schemas import SAMPLE_SCHEMA, frame

METRICS_T, METRICS_INFO_T = "GPU_METRICS", "TARGET_INFO_GPU_METRICS"
ID_MASK = 0xFFFFFF
_NAME_UNIT = re.compile(r"^\s*(.*?)\s*\[([^\]]*)\]\s*$")
PERCENT = "Throughput %"
#: byte-rate units a PCIe metric may carry -> GB/s per unit
BYTE_RATES = {"B/s": 1e-9, "bytes/s": 1e-9, "KB/s": 1e-6, "KiB/s": 1024e-9, "MB/s": 1e-3, "MiB/s": 2**20 * 1e-9,
              "GB/s": 1.0, "GiB/s": 2**30 * 1e-9}
SM, DRAM_R, DRAM_W, RX, TX = "SMs Active", "DRAM Read Bandwidth", "DRAM Write Bandwidth", "PCIe RX Throughput", \
    "PCIe TX Throughput"


def thread_names(con: sqlite3.Connection, tables: set[str], ranks: dict[int, int]) -> dict[tuple[int, int, int], str]:
    """(rank, pid, tid) -> the thread's name, for the threads of the processes in `ranks`."""
    if "ThreadNames" not in tables or "StringIds" not in tables:
        return {}
    q = ("SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
         "WHERE typeof(t.globalTid) = 'integer' ORDER BY t.rowid")
    out: dict[tuple[int, int, int], str] = {}
    for gtid, name in con.execute(q):
        rank = ranks.get(int(gtid) >> 24)
        if rank is not None and isinstance(name, str) and name:
            out[(rank, (int(gtid) >> 24) & ID_MASK, int(gtid) & ID_MASK)] = name[:200]  # (a later row: renamed)
    return out


def _catalog(con: sqlite3.Connection) -> dict[tuple[int, int], tuple[str, str]]:
    """(typeId, metricId) -> (name, unit) of the metrics the capture sampled."""
    out = {}
    for type_id, metric_id, full in con.execute(f"SELECT typeId, metricId, metricName FROM {METRICS_INFO_T}"):
        m = _NAME_UNIT.match(str(full or ""))
        if isinstance(type_id, int) and isinstance(metric_id, int) and m:
            out[(type_id, metric_id)] = (m.group(1), m.group(2).strip())
    return out


def _wanted(catalog: dict[tuple[int, int], tuple[str, str]], notes: list[str]) -> dict[tuple[int, int], tuple[str, float]]:
    """(typeId, metricId) -> (sample column, scale to its unit) of the metrics mapped; notes for the others."""
    out: dict[tuple[int, int], tuple[str, float]] = {}
    left: set[str] = set()
    for key, (name, unit) in catalog.items():
        if name == SM:
            if unit == PERCENT:
                out[key] = ("sm_active", 0.01)
            else:
                left.add(f"{name} [{unit}] (not a percent)")
        elif name in (DRAM_R, DRAM_W):
            if unit == PERCENT:
                out[key] = (name, 0.01)
            else:
                left.add(f"{name} [{unit}] (not a percent)")
        elif name in (RX, TX):
            if unit in BYTE_RATES:
                out[key] = ("rx_gbs" if name == RX else "tx_gbs", BYTE_RATES[unit])
            else:
                left.add(f"{name} [{unit}] (a share of the link's peak, which the export does not give in bytes: "
                         "the copies' own rates are exact)")
    if left:
        notes.append("GPU_METRICS left out: " + "; ".join(sorted(left)))
    return out


def gpu_metrics(con: sqlite3.Connection, tables: set[str], devices: list[int], epoch_s: float | None,
                notes: list[str]) -> pd.DataFrame | None:
    """The export's GPU metric samples as SAMPLE_SCHEMA rows (None: none, or none that can be mapped)."""
    if METRICS_T not in tables:
        return None
    if METRICS_INFO_T not in tables:
        notes.append(f"GPU_METRICS without {METRICS_INFO_T}: which metric each sample is cannot be told; left out")
        return None
    wanted = _wanted(_catalog(con), notes)
    sources = sorted({t for t, _ in wanted})
    if not wanted:
        return None
    if len(sources) != 1 or len(set(devices)) != 1:
        notes.append(f"GPU_METRICS left out: {len(sources)} metrics source(s) (typeId) and {len(set(devices))} "
                     "CUDA device(s) with events; which device a source sampled is not in the export (one GPU "
                     "sampled, --gpu-metrics-devices=N, beside events on that GPU alone would tell)")
        return None
    ids = ",".join(str(m) for _, m in wanted)
    rows = np.array(con.execute(
        f"SELECT timestamp, metricId, value FROM {METRICS_T} WHERE typeId = ? AND metricId IN ({ids}) "
        "AND typeof(timestamp) = 'integer' AND typeof(value) IN ('integer', 'real') AND value >= 0",
        (sources[0],)).fetchall(), dtype=np.float64).reshape(-1, 3)
    if not len(rows):
        return None
    times, at = np.unique(rows[:, 0].astype(np.int64), return_inverse=True)
    cols: dict[str, np.ndarray] = {}
    for (_, metric_id), (col, scale) in wanted.items():
        pick = rows[:, 1] == metric_id
        vals = np.full(times.size, np.nan)
        vals[at[pick]] = rows[pick, 2] * scale
        cols[col] = np.where(np.isnan(cols[col]), vals, cols[col]) if col in cols else vals
    read, write = cols.pop(DRAM_R, None), cols.pop(DRAM_W, None)
    if read is not None and write is not None:
        cols["dram_active"] = np.minimum(read + write, 1.0)
    elif read is not None or write is not None:
        notes.append("GPU_METRICS: DRAM read or write bandwidth without the other: DRAM activity left out")
    n = times.size
    t_mono = times / 1e9
    out = {c: np.full(n, np.nan) for c, t in SAMPLE_SCHEMA.items() if t == "float64"}
    out.update(cols, t_mono=t_mono, t_wall=t_mono + epoch_s if epoch_s is not None else np.full(n, np.nan))
    samples = frame({**out, "gpu": np.full(n, devices[0]), "wrap_suspect": np.zeros(n, dtype=np.int64),
                     "pcie_source": ["throughput" if "rx_gbs" in cols or "tx_gbs" in cols else ""] * n},
                    SAMPLE_SCHEMA)
    mapped = [c for c in ("sm_active", "dram_active", "rx_gbs", "tx_gbs") if c in cols]
    notes.append(f"GPU_METRICS: {n:,} samples of GPU {devices[0]} read as samples evidence ({', '.join(mapped)})")
    return samples
