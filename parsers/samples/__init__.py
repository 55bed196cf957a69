"""GPU sample files -> a DataFrame in the samples.csv schema of docs/ARCHITECTURE.md.

    read_samples_csv(path)   gpuscope's own samples.csv (a torn last row is dropped)
    read_dmon(path)          `nvidia-smi dmon -s ut[...] [-o DT]` output
    read_query_gpu(path)     `nvidia-smi --query-gpu=timestamp,index,... --format=csv [-lms N]`
    read_tool_table(path, k) `nvidia-smi -l 1`'s table (k smi-table) or gpustat's output (k gpustat)
    read_dcgm_dmon(path)     `dcgmi dmon -e 1002,...` output (parsers/samples/dcgm_dmon.py)
    read_samples(path)       detects which of the six (a directory: its samples.csv)

What can be read is read, and what cannot is counted, never fatal:

- a row without its time or GPU index (or with the wrong number of fields, or torn off at
  the end of the file) is dropped: `df.attrs["malformed_rows"]`;
- an unreadable value in any other column is missing (NaN) and its row stays: a column that
  is bad in every row costs that column, not the file; `df.attrs["bad_values"]` counts them
  by column (an unreadable `wrap_suspect` reads as 1: the row's PCIe figures are not trusted);
- NUL bytes (a crash can leave a file padded with them) are damage like any other: a run of
  them at the end is cut off, a line holding one is dropped (counted in malformed_rows and
  `df.attrs["nul_rows"]`); `df.attrs["nul_bytes"]` counts them. NUL bytes in the header line: a binary file;
- `df.attrs["format"]` says which reader ran (`gpuscope`, `dmon`, `query-gpu`);
  `damage_note(df)` says it all in one sentence, `reading_account(df)` as a JSON object.

Conventions: nvidia-smi prints local wall time, read here as local time of the machine
running gpuscope. dmon's rxpci/txpci (MB/s, from NVML's PCIe throughput counter) become
GB/s as MB/s / 1000, with pcie_source `throughput`; `fb` (MB) is taken as MiB, `pclk` as
the SM clock, `mclk` as the memory clock, `gtemp` as the temperature. query-gpu's
`clocks_event_reasons.active` (or `clocks_throttle_reasons.active`, hex) is the bitmask. Without dmon's `-o T` there is no wall time: t_wall is NaN and t_mono counts
rounds x `interval_s` (dmon's default delay is 1 s; pass `-d` there, interval_s here).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime

import pandas as pd

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.heads import looks_like_query_header, query_fields
from gpuscope.parsers.samples import gpustat, samples_csv, smi_table
from gpuscope.parsers.samples.dcgm_dmon import looks_like_dcgm_dmon, read_dcgm_dmon
from gpuscope.parsers.samples.samples_base import (  # (shared with parsers.samples_csv; named here as before)
    _NA,
    NAN,
    _add_nul,
    _bounded,
    _frame,
    _num,
    _read_text,
)
from gpuscope.parsers.samples.samples_base import _NUMERAL as _NUMERAL
from gpuscope.parsers.samples.samples_base import BOUNDS as BOUNDS
from gpuscope.parsers.samples.samples_base import INT_COLUMNS as INT_COLUMNS
from gpuscope.parsers.samples.samples_base import REQUIRED as REQUIRED
from gpuscope.parsers.samples.samples_base import SAMPLE_COLUMNS as SAMPLE_COLUMNS
from gpuscope.parsers.samples.samples_base import STR_COLUMNS as STR_COLUMNS
from gpuscope.parsers.samples.samples_base import _attrs as _attrs
from gpuscope.parsers.samples.samples_base import _without_nul as _without_nul


def _lines(text: str) -> tuple[list[str], bool]:
    """Lines, and whether the last one is torn (no newline at the end of the file)."""
    torn = not text.endswith("\n")
    return text.splitlines(), torn


# -- gpuscope's samples.csv -----------------------------------------------------------------

def read_samples_csv(path: str | os.PathLike[str], *, text: str | None = None,
                     progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """gpuscope's samples.csv (a run directory: its samples.csv), streamed into compact columns
    (parsers.samples_csv: the compiled reader, or pandas' C parser without it). Malformed rows
    — the wrong number of fields, an unreadable or missing t_wall, an unreadable or non-integer
    gpu — are dropped and counted, as is a torn last row (no newline at the end: a crash
    mid-write can cut a number short); an unreadable value elsewhere is NaN, counted by column.
    `progress(bytes read, bytes in all)` is called while a file is read."""

    return samples_csv.read(path, text=text, progress=progress)


# -- nvidia-smi dmon ------------------------------------------------------------------------

_DMON_MAP = {
    "sm": ("gpu_util_pct", 1.0), "mem": ("mem_util_pct", 1.0),
    "rxpci": ("rx_gbs", 1e-3), "txpci": ("tx_gbs", 1e-3),
    "pwr": ("power_w", 1.0), "pclk": ("sm_clock_mhz", 1.0), "fb": ("mem_used_mib", 1.0),
    "mclk": ("mem_clock_mhz", 1.0), "gtemp": ("temperature_c", 1.0),
}


def _local_epoch(date: str | None, clock: str) -> float | None:
    try:
        if date is not None:
            dt = datetime.strptime(f"{date} {clock}", "%Y%m%d %H:%M:%S")
        else:
            dt = datetime.combine(datetime.now().date(), datetime.strptime(clock, "%H:%M:%S").time())
        return dt.timestamp()
    except ValueError:
        return None


def read_dmon(path: str | os.PathLike, *, interval_s: float = 1.0, text: str | None = None) -> pd.DataFrame:
    text, p, nul = _read_text(path, text)
    lines, torn = _lines(text)
    header: list[str] | None = None
    rows: list[dict] = []
    malformed = 0
    bad_values: dict[str, int] = {}
    rnd = -1
    last_gpu = None
    last_time = None
    data_lines = [ln for ln in lines if ln.strip()]
    for k, line in enumerate(data_lines):
        if line.lstrip().startswith("#"):
            toks = line.replace("#", " ").split()
            if header is None and "gpu" in toks:
                if "pid" in toks:  # (nvidia-smi pmon: a row per process, its sm the process's share)
                    raise NoDataError(
                        f"{p}: nvidia-smi pmon output: each row is one process's share of the sample period "
                        "(several a GPU a round), not the GPU's activity; `nvidia-smi dmon -o DT`, a --query-gpu "
                        "capture or `gpuscope record` gives the GPU's")
                header = toks
            continue
        if header is None:
            malformed += 1
            continue
        f = line.split()
        if len(f) != len(header) or (torn and k == len(data_lines) - 1):
            malformed += 1
            continue
        rec = dict(zip(header, f, strict=True))
        g = _bounded("gpu", _num(rec["gpu"]))
        if g is None or g != g or g != int(g):
            malformed += 1
            continue
        row: dict = {"gpu": int(g), "pcie_source": None}
        for col, (name, factor) in _DMON_MAP.items():
            if col in rec:
                x = _num(rec[col])
                x = _bounded(name, x * factor if x is not None else None)
                if x is None:  # unreadable or beyond its bounds: missing, the row stays
                    bad_values[name] = bad_values.get(name, 0) + 1
                    x = NAN
                row[name] = x
        if "rxpci" in rec or "txpci" in rec:
            row["pcie_source"] = "throughput"
        t = None
        if "Time" in rec:
            t = _local_epoch(rec.get("Date"), rec["Time"])
            if t is None:
                malformed += 1
                continue
            row["t_wall"] = t
        # a new round: the GPU index wraps, or the printed time moves on
        if last_gpu is None or row["gpu"] <= last_gpu or (t is not None and t != last_time):
            rnd += 1
        last_gpu, last_time = row["gpu"], t
        row["_round"] = rnd
        rows.append(row)
    if header is None:
        raise InputError(f"{p}: not nvidia-smi dmon output (no '# gpu ...' header)")
    t0 = next((r["t_wall"] for r in rows if "t_wall" in r), None)
    for r in rows:
        r["t_mono"] = r["t_wall"] - t0 if "t_wall" in r else r["_round"] * interval_s
    df = _frame(rows, malformed, "dmon", bad_values)
    if t0 is None and rows:
        df.attrs["interval_assumed_s"] = interval_s
    return _add_nul(df, nul)


# -- nvidia-smi --query-gpu ------------------------------------------------------------------

_QUERY_MAP = {
    "utilization.gpu": "gpu_util_pct", "utilization.memory": "mem_util_pct",
    "memory.used": "mem_used_mib", "power.draw": "power_w", "power.draw.instant": "power_w",
    "power.draw.average": "power_w", "clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz", "clocks.current.memory": "mem_clock_mhz",
    "temperature.gpu": "temperature_c",
    "clocks_event_reasons.active": "clock_event_reasons", "clocks_throttle_reasons.active": "clock_event_reasons",
}
_HEX_FIELDS = frozenset(("clocks_event_reasons.active", "clocks_throttle_reasons.active"))  # 0x0000000000000001


def _hex(text: str) -> float | None:
    t = text.strip()
    if t in _NA:
        return NAN
    if not t.isascii() or "_" in t:  # int() takes other scripts' digits and 1_000
        return None
    try:
        return float(int(t, 16 if t.lower().startswith("0x") else 10))
    except ValueError:
        return None


def _query_time(v: str) -> float | None:
    v = v.strip()
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%a %b %d %H:%M:%S %Y"):
        try:
            return datetime.strptime(v, fmt).timestamp()
        except ValueError:
            continue
    return None


def read_query_gpu(path: str | os.PathLike, *, text: str | None = None) -> pd.DataFrame:
    text, p, nul = _read_text(path, text)
    lines, torn = _lines(text)
    lines = [ln for ln in lines if ln.strip()]
    preamble = query_preamble(lines)  # (a scheduler's lines before the header: skipped, counted)
    lines = lines[preamble:]
    fields = query_fields(lines[0])
    if "timestamp" not in fields and "index" not in fields:
        raise InputError(f"{p}: not nvidia-smi --query-gpu csv (no timestamp/index header)")
    if "timestamp" not in fields:
        raise NoDataError(f"{p}: an nvidia-smi --query-gpu capture without its timestamp column: its samples "
                          "have no time (capture with --query-gpu=timestamp,index,...)")
    rows: list[dict] = []
    malformed = preamble
    bad_values: dict[str, int] = {}
    # without `index`, GPUs are told apart by their bus id or UUID (NVIDIA's own example queries
    # `timestamp,name,pci.bus_id,...`), numbered in the order they first appear: nvidia-smi prints
    # each round in index order, so that is their index
    ident = "" if "index" in fields else next((k for k in _IDENTITY if k in fields), "")
    ids: dict[str, int] = {}
    body = lines[1:]
    if torn and body:
        body = body[:-1]
        malformed += 1
    for line in body:
        f = [v.strip() for v in line.split(",")]
        if len(f) != len(fields) or f == fields:
            malformed += int(f != fields)  # a repeated header is not damage
            continue
        row: dict = {"pcie_source": None}
        bad = False
        for name, v in zip(fields, f, strict=True):
            if name == "timestamp":
                t = _query_time(v)
                if t is None:
                    bad = True
                    break
                row["t_wall"] = t
            elif name == "index":
                x = _bounded("gpu", _num(v))
                if x is None or x != x or x != int(x):
                    bad = True
                    break
                row["gpu"] = int(x)
            elif name == ident:
                if not v or v in _NA:
                    bad = True
                    break
                row["gpu"] = ids.setdefault(v, len(ids))
            elif name in _QUERY_MAP:
                x = _hex(v) if name in _HEX_FIELDS else _num(v.split()[0] if v.split() and v not in _NA else v)
                x = _bounded(_QUERY_MAP[name], x)
                if x is None:  # unreadable: missing, the row stays
                    bad_values[_QUERY_MAP[name]] = bad_values.get(_QUERY_MAP[name], 0) + 1
                    x = NAN
                row[_QUERY_MAP[name]] = x
        if bad:
            malformed += 1
            continue
        rows.append(row)
    t0 = min((r["t_wall"] for r in rows if "t_wall" in r), default=None)
    for r in rows:
        if "t_wall" in r:
            r["t_mono"] = r["t_wall"] - t0
    df = _add_nul(_frame(rows, malformed, "query-gpu", bad_values), nul)
    if ids:
        df.attrs["gpu_identity"] = {"column": ident, "gpus": {str(n): k for k, n in ids.items()}}
    return df


def read_tool_table(path: str | os.PathLike, kind: str, *, text: str | None = None) -> pd.DataFrame:
    """A monitor's own printout (`smi-table`: nvidia-smi's table; `gpustat`), each round's GPU
    rows at the time printed above them, written as the --query-gpu CSV they show and read as that
    capture; a GPU row of another shape counted as a dropped row."""
    text, p, nul = _read_text(path, text)
    csv, unread = (smi_table if kind == "smi-table" else gpustat).as_query_csv(text, str(p))
    df = read_query_gpu(p, text=csv)
    df.attrs["format"] = kind
    df.attrs["malformed_rows"] = int(df.attrs.get("malformed_rows", 0)) + unread
    return _add_nul(df, nul)


_IDENTITY = ("pci.bus_id", "gpu_bus_id", "uuid", "gpu_uuid", "serial", "gpu_serial")

_DMON_COLUMNS = frozenset(("sm", "mem", "pwr", "rxpci", "txpci", "pclk", "mclk", "fb", "gtemp"))


#: lines a scheduler or a shell may print before a --query-gpu CSV's header (`srun: job 42 queued`):
#: skipped and counted as rows the reader could not use (issue 33 class 5)
PREAMBLE_MAX = 10


def query_preamble(lines: list[str]) -> int:
    """How many of the first non-empty `lines` come before a --query-gpu CSV header followed by a
    row of as many fields (0: the first is one, or none of the first PREAMBLE_MAX + 1 is: a log
    line that names those columns in prose is no header)."""
    for i, ln in enumerate(lines[:PREAMBLE_MAX + 1]):
        if looks_like_query_header(ln):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            return i if i == 0 or nxt.count(",") == ln.count(",") else 0
    return 0


def looks_like_samples(head: str) -> bool:
    """Whether a file's first lines are a samples file (so a log that merely mentions
    `timestamp` is not taken for one): a CSV header naming t_wall and gpu, a dmon `# gpu ...`
    header with dmon's columns, or a query-gpu CSV header with `timestamp` or `index` and no
    key=value fields."""
    if smi_table.looks_like_smi_table(head) or looks_like_dcgm_dmon(head) or gpustat.looks_like_gpustat(head):
        return True
    first = next((ln for ln in head.splitlines() if ln.strip()), "").strip()
    if "=" in first:
        return False
    if first.startswith("#"):
        toks = set(first.replace("#", " ").lower().split())
        return "gpu" in toks and bool(toks & _DMON_COLUMNS)
    fields = query_fields(first)
    if "t_wall" in fields and "gpu" in fields:
        return True
    if looks_like_query_header(first):
        return True
    return query_preamble([ln for ln in head.splitlines() if ln.strip()]) > 0


def detect_samples(text: str) -> str:
    if smi_table.looks_like_smi_table(text):
        return "smi-table"
    if looks_like_dcgm_dmon(text):
        return "dcgm-dmon"
    if gpustat.looks_like_gpustat(text):
        return "gpustat"
    lines = [ln for ln in text.splitlines()[:PREAMBLE_MAX * 4] if ln.strip()]
    first = lines[query_preamble(lines)] if lines else ""
    low = first.lower()
    if first.lstrip().startswith("#") and "gpu" in low:
        return "dmon"
    if "t_wall" in low:
        return "gpuscope"
    if "timestamp" in low or "utilization." in low or low.startswith("index"):
        return "query-gpu"
    return "unknown"


def read_samples(path: str | os.PathLike, *, interval_s: float = 1.0, text: str | None = None) -> pd.DataFrame:
    """Any of the three sample files (a directory: its samples.csv); `text`: already read."""
    text, p, nul = _read_text(path, text)
    kind = detect_samples(text[:4096])
    if kind == "dmon":
        return _add_nul(read_dmon(p, interval_s=interval_s, text=text), nul)
    if kind == "gpuscope":
        return _add_nul(read_samples_csv(p, text=text), nul)
    if kind == "query-gpu":
        return _add_nul(read_query_gpu(p, text=text), nul)
    if kind == "dcgm-dmon":
        return _add_nul(read_dcgm_dmon(p, interval_s=interval_s, text=text), nul)
    if kind in ("smi-table", "gpustat"):
        return _add_nul(read_tool_table(p, kind, text=text), nul)
    raise InputError(f"{p}: not a samples file gpuscope knows (samples.csv, nvidia-smi dmon, "
                     "nvidia-smi --query-gpu csv, nvidia-smi's table, dcgmi dmon, gpustat)")


# -- what the reading cost --------------------------------------------------------------------

def reading_account(df: pd.DataFrame) -> dict:
    """JSON-ready: what a reader kept and what it could not read (the frame's attrs):
    {format, rows, dropped_rows, unreadable_values: {column: n}, nul_bytes, nul_rows}
    (dropped_rows includes the nul_rows), and `gpu_identity` ({column, gpus: {number: id}}) where a
    query-gpu capture without `index` told its GPUs apart by bus id or UUID."""
    a = df.attrs
    return {"format": a.get("format"), "rows": int(len(df)), "dropped_rows": int(a.get("malformed_rows", 0)),
            "unreadable_values": dict(a.get("bad_values") or {}), "nul_bytes": int(a.get("nul_bytes", 0)),
            "nul_rows": int(a.get("nul_rows", 0)),
            **({"gpu_identity": a["gpu_identity"]} if a.get("gpu_identity") else {})}


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}{'' if k == 1 else 's'}"


def damage_note(df: pd.DataFrame) -> str | None:
    """One sentence on what could not be read, or None when everything was: `680 sample rows
    read; unreadable values read as missing: sm_active in 680 rows; 1 row dropped for NUL
    bytes (5 NUL bytes)`."""
    acc = reading_account(df)
    parts = []
    if acc["unreadable_values"]:
        cols = ", ".join(f"{c} in {_n(k, 'row')}"
                         for c, k in sorted(acc["unreadable_values"].items(), key=lambda kv: -kv[1]))
        parts.append(f"unreadable values read as missing: {cols}")
    other = acc["dropped_rows"] - acc["nul_rows"]
    if other:
        parts.append(f"{_n(other, 'row')} dropped (no readable time or GPU index, the wrong number of fields, "
                     "or torn at the end)")
    if acc["nul_rows"]:
        parts.append(f"{_n(acc['nul_rows'], 'row')} dropped for NUL bytes ({_n(acc['nul_bytes'], 'NUL byte')})")
    elif acc["nul_bytes"]:
        parts.append(f"{_n(acc['nul_bytes'], 'NUL byte')} at the end cut off")
    if df.attrs.get("interval_assumed_s"):
        parts.append(f"no time printed: rounds taken {df.attrs['interval_assumed_s']:g} s apart (the tool's default "
                     "delay; durations scale with the capture's own -d)")
    if not parts:
        return None
    return f"{_n(acc['rows'], 'sample row')} read; " + "; ".join(parts)
