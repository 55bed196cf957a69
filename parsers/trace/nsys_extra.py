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
                                           one source, the events one device, and >= LINED_UP of
                                           the SM activity read lies inside that device's kernels
                                           (another GPU's work does not); else left out
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


#: the share of SM activity (weighted by its readings' periods) that must fall inside the events'
#: kernels for the metrics to be that GPU's: another GPU's work does not line up with them
LINED_UP = 0.8


def _busy_before(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as blocks, and the busy time before each block's start."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order]) if ends.size else ends
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    bs, be = s[first], np.append(e[first[1:] - 1], e[-1:]) if s.size else e
    return bs, be, np.concatenate([[0.0], np.cumsum(be - bs)[:-1]]) if bs.size else bs


def _busy_upto(t: np.ndarray, blocks: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Busy time of the union before each time t."""
    bs, be, before = blocks
    i = np.searchsorted(bs, t, side="right") - 1
    ok = i >= 0
    out = np.zeros(t.size)
    out[ok] = before[i[ok]] + np.minimum(t[ok], be[i[ok]]) - bs[i[ok]]
    return out


def lined_up(t_ns: np.ndarray, sm: np.ndarray, kernels: tuple[np.ndarray, np.ndarray]) -> float | None:
    """The share of the SM activity read (each reading over the period before it) that lies inside
    the kernels' union (ns); None when no SM activity was read."""
    ok = ~np.isnan(sm[1:])
    dt = np.diff(t_ns.astype(np.float64))[ok]
    weight = float((sm[1:][ok] * dt).sum())
    if weight <= 0 or not kernels[0].size:
        return None if weight <= 0 else 0.0
    blocks = _busy_before(*kernels)
    inside = _busy_upto(t_ns[1:][ok].astype(np.float64), blocks) - _busy_upto(t_ns[:-1][ok].astype(np.float64), blocks)
    return float((sm[1:][ok] * inside).sum()) / weight


def _columns(rows: np.ndarray, wanted: dict[tuple[int, int], tuple[str, float]], notes: list[str]
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(timestamps, sample column -> values at them) of (timestamp, metricId, value) rows."""
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
    return times, cols


def gpu_metrics(con: sqlite3.Connection, tables: set[str], kernels: dict[int, tuple[np.ndarray, np.ndarray]],
                epoch_s: float | None, notes: list[str]) -> pd.DataFrame | None:
    """The export's GPU metric samples as SAMPLE_SCHEMA rows (None: none, or none that can be mapped).
    `kernels`: CUDA device -> its kernels' (start, end) in ns, every device with GPU events."""
    if METRICS_T not in tables:
        return None
    if METRICS_INFO_T not in tables:
        notes.append(f"GPU_METRICS without {METRICS_INFO_T}: which metric each sample is cannot be told; left out")
        return None
    wanted = _wanted(_catalog(con), notes)
    sources = sorted({t for t, _ in wanted})
    if not wanted:
        return None
    if len(sources) != 1 or len(kernels) != 1:
        notes.append(f"GPU_METRICS left out: {len(sources)} metrics source(s) (typeId) and {len(kernels)} "
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
    times, cols = _columns(rows, wanted, notes)
    (device, spans), = kernels.items()
    share = lined_up(times, cols.get("sm_active", np.full(times.size, np.nan)), spans)
    if share is None or share < LINED_UP:
        notes.append("GPU_METRICS left out: the export does not say which GPU its metrics source sampled, and its "
                     + ("SM activity was not read" if share is None else
                        f"SM activity does not line up with GPU {device}'s kernels ({share:.0%} of it inside them): "
                        "another GPU's") + " (SM activity inside the events' kernels would tell)")
        return None
    n = times.size
    t_mono = times / 1e9
    out = {c: np.full(n, np.nan) for c, t in SAMPLE_SCHEMA.items() if t == "float64"}
    out.update(cols, t_mono=t_mono, t_wall=t_mono + epoch_s if epoch_s is not None else np.full(n, np.nan))
    samples = frame({**out, "gpu": np.full(n, device), "wrap_suspect": np.zeros(n, dtype=np.int64),
                     "pcie_source": ["throughput" if "rx_gbs" in cols or "tx_gbs" in cols else ""] * n},
                    SAMPLE_SCHEMA)
    mapped = [c for c in ("sm_active", "dram_active", "rx_gbs", "tx_gbs") if c in cols]
    notes.append(f"GPU_METRICS: {n:,} samples read as GPU {device}'s samples evidence ({', '.join(mapped)}; "
                 f"{share:.0%} of its SM activity inside that GPU's kernels)")
    return samples
