"""Prometheus query results (`/api/v1/query_range`, `/api/v1/query`) -> the samples.csv schema.

A fleet's GPUs are already scraped (dcgm-exporter, or `gpuscope watch/record --metrics`); this
reads what Prometheus returns for them, so the history is analyzed like a recording:

    curl -s 'http://prom:9090/api/v1/query_range' --data-urlencode \\
         'query={__name__=~"DCGM_FI_PROF_.*|DCGM_FI_DEV_.*"}' -d start=... -d end=... -d step=1s > fleet.json
    gpuscope analyze fleet.json

Input: one response (`{"status": "success", "data": {"resultType": "matrix", "result": [...]}}`),
a JSON array of them, or several one after another (one per line, as a shell loop of curl
writes them). `vector` results (instant queries) count as one point per series. A response
with `status: error` is an InputError quoting Prometheus' message.

Metrics read (others are counted in `df.attrs["unknown_metrics"]`; series of `gpuscope_state*`
and `gpuscope_samples_total` are gpuscope's own derived figures, re-derived here from the
samples, not read):

| metric | column | as |
|---|---|---|
| DCGM_FI_PROF_SM_ACTIVE, gpuscope_sm_active_ratio | sm_active | 0-1 |
| DCGM_FI_PROF_SM_OCCUPANCY, gpuscope_sm_occupancy_ratio | sm_occupancy | 0-1 |
| DCGM_FI_PROF_DRAM_ACTIVE, gpuscope_dram_active_ratio | dram_active | 0-1 |
| DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gpuscope_tensor_active_ratio | tensor_active | 0-1 |
| DCGM_FI_PROF_PIPE_FP16/FP32/FP64_ACTIVE, gpuscope_fp16/32/64_active_ratio | fp16/32/64_active | 0-1 |
| DCGM_FI_PROF_PCIE_RX/TX_BYTES (bytes/s), gpuscope_pcie_throughput_bytes_per_second{direction} | rx_gbs / tx_gbs | / 1e9 |
| gpuscope_pcie_bytes_total{direction} (counter) | rx_gbs / tx_gbs | increase / time between points / 1e9 |
| DCGM_FI_DEV_GPU_UTIL (%), gpuscope_gpu_utilization_ratio | gpu_util_pct | percent |
| DCGM_FI_DEV_MEM_COPY_UTIL (%), gpuscope_memory_copy_utilization_ratio | mem_util_pct | percent |
| DCGM_FI_DEV_FB_USED (MiB), gpuscope_memory_used_bytes | mem_used_mib | MiB |
| DCGM_FI_DEV_POWER_USAGE (W), gpuscope_power_watts | power_w | W |
| DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK (MHz), gpuscope_sm/memory_clock_hertz | sm/mem_clock_mhz | MHz |
| DCGM_FI_DEV_GPU_TEMP, gpuscope_temperature_celsius | temperature_c | °C |
| DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gpuscope_clock_event_reasons | clock_event_reasons | bitmask |

A GPU is the series' `gpu` label (dcgm-exporter's and gpuscope's), per host (`Hostname`, else
`instance`): one host keeps its GPU indices; several are numbered in (host, gpu) order and
`df.attrs["gpu_names"]` says which index is which. Where two series give one column of one GPU
at one time (DCGM's and gpuscope's), the first in name order is kept (DCGM's). A counter's
point after a reset (a lower value) is missing. t_wall is the point's time, t_mono the time
since the first point; pcie_source `prometheus` (a rate over the step: filled backwards).

Numbers follow the samples readers' rules (parsers.numbers, samples_base.BOUNDS): a time is a
JSON number (not `true`, not a string), a value the API's string of an ASCII numeral (or a
JSON number); `NaN` is no reading; Arabic-Indic or full-width digits, `98_765`, `+Inf`, blanks
around, and a value beyond its column's bounds (SM activity 98765) are damage, counted in
`bad_values` (per column) or, for a point that is no [time, value] pair, `malformed_rows`. A
`gpu` label that is not ASCII digits below 1024 (`-3`, 2^63) names no GPU: its series is
refused and counted. The input is decoded with msgspec, each series' points one series at a
time (the document is kept as raw bytes, not as Python objects), into numpy columns; it is
refused past its own cap (GPUSCOPE_MAX_PROMETHEUS, parsers.limits).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from gpuscope.arrays import distinct
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers import numbers
from gpuscope.parsers.heads import looks_like_prometheus as looks_like_prometheus  # noqa: F401
from gpuscope.parsers.limits import check_size
from gpuscope.parsers.samples.samples_base import BOUNDS
from gpuscope.schemas import SAMPLE_SCHEMA, frame

MIB = 1024.0 * 1024.0
#: metric -> (column, scale from the metric's unit to the column's)
GAUGES: dict[str, tuple[str, float]] = {
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active", 1.0), "gpuscope_sm_active_ratio": ("sm_active", 1.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy", 1.0), "gpuscope_sm_occupancy_ratio": ("sm_occupancy", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active", 1.0), "gpuscope_dram_active_ratio": ("dram_active", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active", 1.0),
    "gpuscope_tensor_active_ratio": ("tensor_active", 1.0),
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": ("fp16_active", 1.0), "gpuscope_fp16_active_ratio": ("fp16_active", 1.0),
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": ("fp32_active", 1.0), "gpuscope_fp32_active_ratio": ("fp32_active", 1.0),
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": ("fp64_active", 1.0), "gpuscope_fp64_active_ratio": ("fp64_active", 1.0),
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("rx_gbs", 1e-9), "DCGM_FI_PROF_PCIE_TX_BYTES": ("tx_gbs", 1e-9),
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util_pct", 1.0), "gpuscope_gpu_utilization_ratio": ("gpu_util_pct", 100.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("mem_util_pct", 1.0),
    "gpuscope_memory_copy_utilization_ratio": ("mem_util_pct", 100.0),
    "DCGM_FI_DEV_FB_USED": ("mem_used_mib", 1.0), "gpuscope_memory_used_bytes": ("mem_used_mib", 1.0 / MIB),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0), "gpuscope_power_watts": ("power_w", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0), "gpuscope_sm_clock_hertz": ("sm_clock_mhz", 1e-6),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", 1.0), "gpuscope_memory_clock_hertz": ("mem_clock_mhz", 1e-6),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature_c", 1.0), "gpuscope_temperature_celsius": ("temperature_c", 1.0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("clock_event_reasons", 1.0),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("clock_event_reasons", 1.0),
    "gpuscope_clock_event_reasons": ("clock_event_reasons", 1.0),
}
DIRECTED = {"gpuscope_pcie_throughput_bytes_per_second"}  # gauges with a direction label
COUNTERS = {"gpuscope_pcie_bytes_total"}                  # counters with a direction label
DERIVED = re.compile(r"^gpuscope_(state|state_seconds_total|samples_total|line_rate_bytes_per_second)$")
PCIE_SOURCE = "prometheus"
MAX_SERIES = 100_000


MAX_GPU = int(BOUNDS["gpu"][1])
_PCIE = " pcie"  # (no column's name) the mask of the points a PCIe series has
_Scalar = float | str | bool | None  # a JSON number reads as float, true as bool: told apart
_POINTS = list[tuple[_Scalar, _Scalar]]


class _Response(msgspec.Struct):
    status: Any = None
    data: msgspec.Raw = msgspec.Raw(b"null")
    errorType: Any = None  # noqa: N815 (Prometheus' key)
    error: Any = None


class _Data(msgspec.Struct):
    resultType: Any = None  # noqa: N815
    result: msgspec.Raw = msgspec.Raw(b"null")


class _Series(msgspec.Struct):
    metric: Any = None
    values: msgspec.Raw = msgspec.Raw(b"null")
    value: msgspec.Raw = msgspec.Raw(b"null")


def _decode(raw: bytes | memoryview | msgspec.Raw | str, typ: Any = Any) -> Any:
    try:
        return msgspec.json.decode(raw, type=typ)
    except RecursionError:
        raise InputError("not a Prometheus query result: JSON nested too deeply") from None


def _documents(text: bytes | str) -> Iterator[msgspec.Raw]:
    """Every JSON value in the text, one after another (whitespace between them), as raw
    bytes; a top-level array's items one by one."""
    data = memoryview(text.encode("utf-8", errors="replace") if isinstance(text, str) else text)
    i, n = 0, len(data)
    while True:
        while i < n and data[i] in b" \t\r\n":
            i += 1
        if data[i:i + 3] == b"\xef\xbb\xbf":
            i += 3
            continue
        if i >= n:
            return
        end = n
        try:
            _decode(data[i:end], msgspec.Raw)
        except msgspec.DecodeError as e:
            m = re.search(r"trailing characters \(byte (\d+)\)", str(e))
            if not m:
                raise InputError(f"not a Prometheus query result: invalid JSON ({str(e)[:120]})") from None
            end = i + int(m.group(1)) - 1  # msgspec counts the first trailing byte from 1
        if end <= i:
            raise InputError("not a Prometheus query result: invalid JSON")
        doc = data[i:end]
        if doc[:1] == b"[":
            yield from _decode(doc, list[msgspec.Raw])
        else:
            yield msgspec.Raw(doc)
        i = end


def _series(text: bytes | str) -> Iterator[_Series]:
    for doc in _documents(text):
        try:
            resp = _decode(doc, _Response)
        except msgspec.ValidationError:
            raise InputError("not a Prometheus query result: a JSON value that is not an API response") from None
        if resp.status == "error":
            raise InputError(f"Prometheus answered with an error: {str(resp.errorType)[:60]}: "
                             f"{str(resp.error or '')[:200]}")
        try:
            data = _decode(resp.data, _Data)
        except msgspec.ValidationError:
            data = None
        if data is None or data.resultType not in ("matrix", "vector"):
            kind = data.resultType if data is not None else None
            raise NoDataError(f"a Prometheus result of type {str(kind)[:40]!r}: only matrix (query_range) and "
                              "vector (query) results hold series")
        try:
            result = _decode(data.result, list[msgspec.Raw] | None) or []
        except msgspec.ValidationError:
            continue
        for raw in result:
            try:
                s = _decode(raw, _Series)
            except msgspec.ValidationError:
                continue
            if s.metric is None or isinstance(s.metric, dict):
                yield s


class _Damage:
    """What was not read: points that are no [time, value] pair, values per column."""

    def __init__(self) -> None:
        self.malformed = 0
        self.bad: dict[str, int] = {}

    def count(self, col: str, n: int) -> None:
        if n:
            self.bad[col] = self.bad.get(col, 0) + int(n)


def _time(t: object) -> float | None:
    if not isinstance(t, float | int) or isinstance(t, bool):  # not true, not "1.7e9"
        return None
    lo, hi = BOUNDS["t_wall"]
    return float(t) if lo <= t <= hi else None


def _value(v: object) -> float | None:
    """The API's string of a number (parsers.numbers), NaN for `NaN`, None for damage."""
    if isinstance(v, str):
        return math.nan if v == "NaN" else numbers.number(v)
    if type(v) is float or type(v) is int:
        return float(v) if math.isfinite(v) else None
    return None


def _points(s: _Series, col: str, damage: _Damage) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) of a series' points; a value that is no number is NaN and counted."""
    raw = s.values if bytes(s.values) != b"null" else s.value
    if bytes(raw) == b"null":
        return np.empty(0), np.empty(0)
    if raw is s.value:
        raw = msgspec.Raw(b"[" + bytes(raw) + b"]")
    try:
        pts = _decode(raw, _POINTS)
    except msgspec.ValidationError:  # a point of another shape: read one by one
        got = _decode(raw)
        pts = [p for p in got if isinstance(p, list) and len(p) == 2] if isinstance(got, list) else []
        damage.malformed += (len(got) if isinstance(got, list) else 1) - len(pts)
    ts, vs, bad = [], [], 0
    for t, v in pts:
        tt = _time(t)
        if tt is None:
            damage.malformed += 1
            continue
        x = _value(v)
        if x is None:
            bad += 1
            x = math.nan
        ts.append(tt)
        vs.append(x)
    damage.count(col, bad)
    return np.asarray(ts, dtype="float64"), np.asarray(vs, dtype="float64")


def _gpu_key(labels: dict) -> tuple[str, int] | None:
    """(host, GPU index) of a series; None when its gpu label names no GPU (`-3`, 2^63, `x`)."""
    host = str(labels.get("Hostname") or labels.get("instance") or "")
    g = labels.get("gpu", labels.get("minor_number", "0"))
    g = str(g) if type(g) is str or type(g) is int else ""
    if not numbers.digits(g) or len(g) > 6 or int(g) > MAX_GPU:
        return None
    return host, int(g)


def _counter_rates(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-second rates between a counter's points; NaN after a reset or a repeated time."""
    if len(t) < 2:
        return np.empty(0), np.empty(0)
    dt, dv = np.diff(t), np.diff(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where((dt > 0) & (dv >= 0), dv / np.where(dt > 0, dt, 1.0), np.nan)
    return t[1:], rate


def _collect(text: bytes | str, damage: _Damage) -> tuple[dict, dict[str, int]]:
    """{gpu key: [(column, times, values), ...] in name order}, unknown metric counts."""
    series = sorted(_series(text), key=lambda s: str((s.metric or {}).get("__name__", "")))
    if len(series) > MAX_SERIES:
        raise InputError(f"a Prometheus result of {len(series):,} series: more than {MAX_SERIES:,} (narrow the query)")
    by_key: dict[tuple[str, int], list[tuple[str, np.ndarray, np.ndarray]]] = {}
    unknown: dict[str, int] = {}
    counters: set[tuple[tuple[str, int], str]] = set()
    for s in series:
        labels = s.metric or {}
        name = str(labels.get("__name__", ""))
        direction = str(labels.get("direction", ""))
        if name in COUNTERS and direction in ("rx", "tx"):
            col, scale, counter = f"{direction}_gbs", 1e-9, True
        elif name in DIRECTED and direction in ("rx", "tx"):
            col, scale, counter = f"{direction}_gbs", 1e-9, False
        elif name in GAUGES:
            (col, scale), counter = GAUGES[name], False
        else:
            if not DERIVED.match(name):
                unknown[name[:200] or "<no name>"] = unknown.get(name[:200] or "<no name>", 0) + 1
            continue
        key = _gpu_key(labels)
        t, v = _points(s, col, damage)
        if key is None:  # a gpu label that names no GPU: the series is not read
            damage.count("gpu", len(t))
            continue
        if counter:
            t, v = _counter_rates(t, v)
            counters.add((key, col))
        elif name in DIRECTED and (key, col) in counters:
            continue  # the counter is the exact figure over the step
        v = v * scale
        lo, hi = BOUNDS[col]
        out = np.isfinite(v) & ((v < lo) | (v > hi))  # SM activity 98765: damage, not "busy 100%"
        damage.count(col, int(out.sum()))
        v[out] = np.nan
        by_key.setdefault(key, []).append((col, t, v))
    return by_key, unknown


def _columns_of(parts: list[tuple[str, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One GPU's times (sorted, distinct) and its columns on them; where two series give one
    column at one time, the first (in name order) is kept unless it is NaN."""
    times = distinct(np.concatenate([t for _, t, _ in parts]))
    cols: dict[str, np.ndarray] = {}
    pcie = np.zeros(len(times), dtype=bool)  # the points a PCIe series has (a NaN one included)
    for col, t, v in parts:
        dst = cols.setdefault(col, np.full(len(times), np.nan))
        idx = np.searchsorted(times, t)
        if col in ("rx_gbs", "tx_gbs"):
            pcie[idx] = True
        free = np.isnan(dst[idx])
        dst[idx[free]] = v[free]
    cols[_PCIE] = pcie
    return times, cols


def _pcie_source(got: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.full(n, None, dtype=object)
    out[got[_PCIE]] = PCIE_SOURCE
    return out


def read_prometheus(text: bytes | str) -> pd.DataFrame:
    """The samples frame (SAMPLE_SCHEMA) of one or more Prometheus query results."""

    check_size("the Prometheus query result", "prometheus", len(text))
    damage = _Damage()
    by_key, unknown = _collect(text, damage)
    by_key = {k: parts for k, parts in by_key.items() if any(len(t) for _, t, _ in parts)}
    if not by_key:
        got = ", ".join(sorted(unknown)[:5]) or "no series"
        raise NoDataError(f"a Prometheus result without a metric gpuscope reads (got: {got}); query DCGM_FI_* "
                          "or gpuscope_* series")
    keys = sorted(by_key)
    hosts = {h for h, _ in keys}
    index = {k: (k[1] if len(hosts) == 1 else i) for i, k in enumerate(keys)}
    per_gpu = [(index[k], *_columns_of(by_key[k])) for k in keys]
    per_gpu.sort(key=lambda g: g[0])
    t0 = min(float(times[0]) for _, times, _ in per_gpu)
    n = sum(len(times) for _, times, _ in per_gpu)
    cols: dict[str, Any] = {}
    for c in SAMPLE_SCHEMA:
        if c == "t_wall":
            cols[c] = np.concatenate([times for _, times, _ in per_gpu])
        elif c == "t_mono":
            cols[c] = np.concatenate([times - t0 for _, times, _ in per_gpu])
        elif c == "gpu":
            cols[c] = np.concatenate([np.full(len(times), g) for g, times, _ in per_gpu])
        elif c == "pcie_source":  # on the points that have a PCIe figure (a NaN one included)
            cols[c] = np.concatenate([_pcie_source(got, len(times)) for _, times, got in per_gpu])
        elif c == "wrap_suspect":
            cols[c] = np.zeros(n, dtype="int8")
        else:
            cols[c] = np.concatenate([got.get(c, np.full(len(times), np.nan)) for _, times, got in per_gpu])
    df = frame(cols, SAMPLE_SCHEMA)
    df.attrs.update({"malformed_rows": damage.malformed, "format": "prometheus", "bad_values": damage.bad,
                     "nul_bytes": 0, "nul_rows": 0, "unknown_metrics": unknown,
                     "gpu_names": {index[k]: (f"{k[0]} gpu {k[1]}" if k[0] else f"gpu {k[1]}") for k in keys}})
    return df
