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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pandas as pd

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.heads import looks_like_prometheus as looks_like_prometheus  # noqa: F401

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


def _documents(text: str) -> Iterator[Any]:
    """Every JSON value in the text, one after another (whitespace between them)."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n\ufeff":
            i += 1
        if i >= n:
            return
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise InputError(f"not a Prometheus query result: invalid JSON at line {e.lineno} column {e.colno} "
                             f"({e.msg})") from None
        except RecursionError:
            raise InputError("not a Prometheus query result: JSON nested too deeply") from None
        if isinstance(obj, list):
            yield from obj
        else:
            yield obj


def _series(text: str) -> Iterator[dict]:
    for doc in _documents(text):
        if not isinstance(doc, dict):
            raise InputError("not a Prometheus query result: a JSON value that is not an API response")
        if doc.get("status") == "error":
            raise InputError(f"Prometheus answered with an error: {doc.get('errorType', '?')}: "
                             f"{str(doc.get('error', ''))[:200]}")
        data = doc.get("data")
        if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
            kind = data.get("resultType") if isinstance(data, dict) else None
            raise NoDataError(f"a Prometheus result of type {kind!r}: only matrix (query_range) and vector "
                              "(query) results hold series")
        result = data.get("result")
        for s in result if isinstance(result, list) else []:
            if isinstance(s, dict) and isinstance(s.get("metric", {}), dict):
                yield s


def _points(s: dict) -> list[tuple[float, float]]:
    raw = s.get("values")
    if raw is None and "value" in s:
        raw = [s["value"]]
    out = []
    for p in raw or []:
        if isinstance(p, list | tuple) and len(p) == 2:
            try:
                t, v = float(p[0]), float(p[1])
            except (TypeError, ValueError):
                continue
            if math.isfinite(t):
                out.append((t, v if math.isfinite(v) else math.nan))
    return out


def _gpu_key(labels: dict) -> tuple[str, int]:
    host = str(labels.get("Hostname") or labels.get("instance") or "")
    g = str(labels.get("gpu", labels.get("minor_number", "0")))
    m = re.search(r"\d+", g)
    return host, int(m.group()) if m else 0


def _counter_rates(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for (t0, v0), (t1, v1) in zip(points, points[1:], strict=False):
        if t1 > t0 and v1 >= v0:
            out.append((t1, (v1 - v0) / (t1 - t0)))
        else:
            out.append((t1, math.nan))  # a reset, or a repeated time
    return out


def read_prometheus(text: str) -> pd.DataFrame:
    """The samples frame (SAMPLE_SCHEMA) of one or more Prometheus query results."""
    from gpuscope.schemas import SAMPLE_SCHEMA, frame

    series = sorted(_series(text), key=lambda s: str((s.get("metric") or {}).get("__name__", "")))
    if len(series) > MAX_SERIES:
        raise InputError(f"a Prometheus result of {len(series):,} series: more than {MAX_SERIES:,} (narrow the query)")
    cells: dict[tuple[tuple[str, int], float], dict[str, float]] = {}
    unknown: dict[str, int] = {}
    counters: set[tuple[tuple[str, int], str]] = set()
    for s in series:
        labels = s.get("metric") or {}
        name = str(labels.get("__name__", ""))
        key = _gpu_key(labels)
        direction = str(labels.get("direction", ""))
        if name in COUNTERS and direction in ("rx", "tx"):
            col, pts, scale = f"{direction}_gbs", _counter_rates(_points(s)), 1e-9
            counters.add((key, col))
        elif name in DIRECTED and direction in ("rx", "tx"):
            col, pts, scale = f"{direction}_gbs", _points(s), 1e-9
            if (key, col) in counters:
                continue  # the counter is the exact figure over the step
        elif name in GAUGES:
            (col, scale), pts = GAUGES[name], _points(s)
        else:
            if not DERIVED.match(name):
                unknown[name or "<no name>"] = unknown.get(name or "<no name>", 0) + 1
            continue
        for t, v in pts:
            cell = cells.setdefault((key, t), {})
            if col not in cell or math.isnan(cell[col]):
                cell[col] = v * scale
    if not cells:
        got = ", ".join(sorted(unknown)[:5]) or "no series"
        raise NoDataError(f"a Prometheus result without a metric gpuscope reads (got: {got}); query DCGM_FI_* "
                          "or gpuscope_* series")
    keys = sorted({k for k, _ in cells})
    hosts = sorted({h for h, _ in keys})
    index = {k: (k[1] if len(hosts) == 1 else i) for i, k in enumerate(keys)}
    t0 = min(t for _, t in cells)
    rows = sorted(cells.items(), key=lambda kv: (index[kv[0][0]], kv[0][1]))
    cols: dict[str, list[Any]] = {c: [] for c in SAMPLE_SCHEMA}
    for (key, t), cell in rows:
        for c in SAMPLE_SCHEMA:
            if c == "t_wall":
                cols[c].append(t)
            elif c == "t_mono":
                cols[c].append(t - t0)
            elif c == "gpu":
                cols[c].append(index[key])
            elif c == "pcie_source":
                cols[c].append(PCIE_SOURCE if ("rx_gbs" in cell or "tx_gbs" in cell) else None)
            elif c == "wrap_suspect":
                cols[c].append(0)
            else:
                cols[c].append(cell.get(c, math.nan))
    df = frame(cols, SAMPLE_SCHEMA)
    df.attrs.update({"malformed_rows": 0, "format": "prometheus", "bad_values": {}, "nul_bytes": 0, "nul_rows": 0,
                     "unknown_metrics": unknown,
                     "gpu_names": {index[k]: (f"{k[0]} gpu {k[1]}" if k[0] else f"gpu {k[1]}") for k in keys}})
    return df
