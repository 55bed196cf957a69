"""DCGM's `dcgmi dmon -e 1002,1003,1005,1009,1010 [-d MS]` output: a `#Entity` header naming
each field by its short name, an `ID` line under it, then a row per entity each round:

    #Entity   SMACT        SMOCC        DRAMA        PCITX           PCIRX
    ID
    GPU 0     0.451        0.212        0.130        26843545.000    11811160064.000

The profiling fields are averages over DCGM's sample period, the columns gpuscope's sampler
writes from GPM: SMACT (1002, the share of cycles an SM had a warp) -> sm_active, SMOCC (1003)
-> sm_occupancy, TENSO (1004), DRAMA (1005), FP64A/FP32A/FP16A (1006-1008) -> their *_active,
PCITX/PCIRX (1009/1010, bytes a second, headers included) -> tx_gbs/rx_gbs; and GPUTL (203,
utilization.gpu), POWER (155), FBUSD (252), SMCLK/MMCLK (100/101), TMPTR (150). Another field
is not read (never guessed). dmon prints no time: the rounds are `interval_s` apart (its
`-d`, 1000 ms unless given: no option here sets another), as for
nvidia-smi dmon without `-o T`, and said so. Rows of other entities (GPU-I, GPU-CI, a switch)
are skipped, counted."""

from __future__ import annotations

import os
import re

import pandas as pd

from gpuscope.errors import InputError
from gpuscope.parsers.samples.samples_base import NAN, _add_nul, _bounded, _frame, _num, _read_text

# short name -> (column, factor)
FIELDS = {
    "SMACT": ("sm_active", 1.0), "SMOCC": ("sm_occupancy", 1.0), "TENSO": ("tensor_active", 1.0),
    "DRAMA": ("dram_active", 1.0), "FP64A": ("fp64_active", 1.0), "FP32A": ("fp32_active", 1.0),
    "FP16A": ("fp16_active", 1.0), "PCITX": ("tx_gbs", 1e-9), "PCIRX": ("rx_gbs", 1e-9),
    "GPUTL": ("gpu_util_pct", 1.0), "POWER": ("power_w", 1.0), "FBUSD": ("mem_used_mib", 1.0),
    "SMCLK": ("sm_clock_mhz", 1.0), "MMCLK": ("mem_clock_mhz", 1.0), "TMPTR": ("temperature_c", 1.0),
}
_ROW = re.compile(r"^\s*GPU\s+(\d{1,4})\s+(.*)$")


def looks_like_dcgm_dmon(head: str) -> bool:
    """A `#Entity` header naming at least one field this reader knows."""
    for line in head.splitlines()[:20]:
        t = line.strip()
        if t.startswith("#") and t.lstrip("# ").lower().startswith("entity"):
            return bool(set(t.lstrip("#").split()[1:]) & set(FIELDS))
    return False


def read_dcgm_dmon(path: str | os.PathLike, *, interval_s: float = 1.0, text: str | None = None) -> pd.DataFrame:
    text, p, nul = _read_text(path, text)
    header: list[str] | None = None
    rows: list[dict] = []
    malformed, skipped = 0, 0
    bad_values: dict[str, int] = {}
    rnd, last_gpu = -1, None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    torn = not text.endswith("\n")
    for k, line in enumerate(lines):
        t = line.strip()
        if t.startswith("#"):
            if header is None and t.lstrip("# ").lower().startswith("entity"):
                header = t.lstrip("#").split()[1:]
            continue
        if header is None or t.lower() in ("id", "id id"):
            continue
        m = _ROW.match(t)
        if m is None:
            skipped += 1  # (another entity's row: GPU-I 0, Switch 1, ...)
            continue
        vals = m.group(2).split()
        if len(vals) != len(header) or (torn and k == len(lines) - 1):
            malformed += 1
            continue
        g = int(m.group(1))
        row: dict = {"gpu": g, "pcie_source": None}
        for name, v in zip(header, vals, strict=True):
            if name not in FIELDS:
                continue
            col, factor = FIELDS[name]
            x = NAN if v in ("N/W", "N/S") else _num(v)  # (DCGM's not watched, not supported: missing)
            x = _bounded(col, x * factor if x is not None else None)
            if x is None:
                bad_values[col] = bad_values.get(col, 0) + 1
                x = NAN
            row[col] = x
        if "PCITX" in header or "PCIRX" in header:
            row["pcie_source"] = "dcgm"  # (a rate over its sample period: a window average, as GPM's)
        if last_gpu is None or g <= last_gpu:
            rnd += 1
        last_gpu = g
        row["t_mono"] = rnd * interval_s
        rows.append(row)
    if header is None:
        raise InputError(f"{p}: not dcgmi dmon output (no '#Entity ...' header)")
    df = _frame(rows, malformed + skipped, "dcgm-dmon", bad_values)
    df.attrs["interval_assumed_s"] = interval_s
    return _add_nul(df, nul)
