"""Join NVML samples (samples.csv schema) to phase intervals: PCIe RX/TX and SM activity per phase.

A sample belongs to a phase type when its t_wall falls inside the union of that type's
intervals on the sample's GPU (phases with gpu = -1 apply to every GPU). A sample can
belong to several phase types (synthesis runs beside GPU phases). Samples flagged
wrap_suspect = 1 are left out of the RX/TX figures. `(none)` collects samples in no phase.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.analysis import intervals as iv

PCIE_COLUMNS = [
    "phase", "samples", "rx_gbs_median", "tx_gbs_median", "rx_gbs_p90", "rx_share_of_line_rate",
    "sm_active_median",
]
NO_PHASE = "(none)"


def _num(samples: pd.DataFrame, col: str) -> np.ndarray:
    if col not in samples:
        return np.full(len(samples), np.nan)
    return pd.to_numeric(samples[col], errors="coerce").to_numpy(dtype="float64")


def _inside(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    if starts.size == 0:
        return np.zeros(t.size, dtype=bool)
    i = np.searchsorted(starts, t, side="right") - 1
    ok = i >= 0
    res = np.zeros(t.size, dtype=bool)
    res[ok] = t[ok] < ends[i[ok]]
    return res


def _median(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(np.median(x)) if x.size else float("nan")


def pcie_by_phase(samples: pd.DataFrame, phases: pd.DataFrame, line_rate_gbs: float) -> pd.DataFrame:
    t = _num(samples, "t_wall")
    gpu = _num(samples, "gpu")
    rx, tx, sm = _num(samples, "rx_gbs"), _num(samples, "tx_gbs"), _num(samples, "sm_active")
    wrap = _num(samples, "wrap_suspect") == 1
    rx = np.where(wrap, np.nan, rx)
    tx = np.where(wrap, np.nan, tx)
    rows = []
    any_phase = np.zeros(t.size, dtype=bool)
    for phase, grp in phases.groupby("phase", sort=True):
        mask = np.zeros(t.size, dtype=bool)
        for g, sub in grp.groupby("gpu"):
            s, e = iv.merge(sub["t_start"].to_numpy(), sub["t_end"].to_numpy())
            sel = np.ones(t.size, dtype=bool) if g < 0 else (gpu == g)
            mask |= sel & _inside(t, s, e)
        any_phase |= mask
        rows.append((phase, mask))
    rows.append((NO_PHASE, ~any_phase & ~np.isnan(t)))
    out = []
    for phase, mask in rows:
        if not mask.any():
            continue
        r = _median(rx[mask])
        rxm = rx[mask][~np.isnan(rx[mask])]
        out.append(
            {
                "phase": phase,
                "samples": int(mask.sum()),
                "rx_gbs_median": r,
                "tx_gbs_median": _median(tx[mask]),
                "rx_gbs_p90": float(np.quantile(rxm, 0.9)) if rxm.size else float("nan"),
                "rx_share_of_line_rate": r / line_rate_gbs if line_rate_gbs > 0 else float("nan"),
                "sm_active_median": _median(sm[mask]),
            }
        )
    if not out:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "phase" else "float64") for c in PCIE_COLUMNS})
    return pd.DataFrame(out, columns=PCIE_COLUMNS)
