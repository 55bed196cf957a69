"""Join NVML samples (samples.csv schema) to phase intervals: PCIe RX/TX and SM activity per phase.

A sample belongs to a phase type when its t_wall falls inside the union of that type's
intervals on the sample's GPU (phases with gpu = -1 apply to every GPU). A sample can
belong to several phase types (synthesis runs beside GPU phases). Samples flagged
wrap_suspect = 1 are left out of the RX/TX figures. `(none)` collects samples in no phase.

Each phase type also carries how long its intervals last (`duration_median_s`, of the
merged intervals) and how far apart the PCIe readings are (`sample_interval_s`, the median
spacing of rows with an RX figure, per GPU, the slowest GPU's): a phase that lasts only a
few sample intervals is smeared over readings that mostly cover other phases, so its RX
median says little (`resolved_by_samples`).

The median hides a burst: a 66 ms upload whose bytes all cross in one 20 ms burst has a median
RX of 0. So each phase type also carries the bytes its intervals moved, integrated over the
readings (a reading is the rate over the time since the GPU's previous one, as samplegrid fills
window averages): `gb_per_phase_median` (per merged interval) and `rx_gbs_mean` (all its bytes
over all its time, per GPU link). For a phase shorter than a few readings that rate is a lower
bound (a reading that straddles the phase's edge spreads its bytes over both sides), unless a
neighbour that also moves bytes shares a reading with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuscope.analysis.evidence import intervals as iv
from gpuscope.arrays import distinct, median

if TYPE_CHECKING:
    import pandas as pd

PCIE_COLUMNS = [
    "phase", "samples", "rx_gbs_median", "tx_gbs_median", "rx_gbs_p90", "rx_share_of_line_rate",
    "sm_active_median", "duration_median_s", "sample_interval_s", "gb_per_phase_median", "rx_gbs_mean",
    "rx_mean_share_of_line_rate",
]
NO_PHASE = "(none)"
#: a phase must last at least this many PCIe sample intervals for its samples to judge its RX
MIN_SAMPLE_INTERVALS = 3.0


def resolved_by_samples(row: pd.Series | dict) -> bool:
    """Whether a row of pcie_by_phase lasts long enough (MIN_SAMPLE_INTERVALS readings) for
    its RX median to describe it; False when either figure is missing."""
    try:
        d, dt = float(row["duration_median_s"]), float(row["sample_interval_s"])
    except (KeyError, TypeError, ValueError):
        return False
    return bool(np.isfinite(d) and np.isfinite(dt) and dt > 0 and d >= MIN_SAMPLE_INTERVALS * dt)


def reading_interval_s(samples: pd.DataFrame, column: str = "rx_gbs") -> float:
    import pandas as pd

    """Median spacing (s) of the rows that hold `column`, per GPU; the largest over GPUs."""
    if column not in samples or not len(samples):
        return float("nan")
    ok = pd.to_numeric(samples[column], errors="coerce").notna()
    have = pd.DataFrame({"gpu": samples["gpu"] if "gpu" in samples else 0, "t_wall": samples["t_wall"]})[ok]
    out = float("nan")
    for _, g in have.groupby("gpu"):
        d = np.diff(np.sort(g["t_wall"].to_numpy(dtype="float64")))
        d = d[np.isfinite(d) & (d > 0)]
        if d.size:
            m = float(median(d))
            out = m if np.isnan(out) else max(out, m)
    return out


def _num(samples: pd.DataFrame, col: str) -> np.ndarray:
    import pandas as pd

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


#: a phase interval whose time the readings cover less than this share of: its bytes are unknown
MIN_COVERED = 0.5


def _rx_windows(samples: pd.DataFrame, t: np.ndarray, gpu: np.ndarray, rx: np.ndarray) -> dict:
    """Per GPU: (window ends, window starts, cumulative GB at each end, cumulative covered s at
    each end, rate) of the readings with an RX figure; reading i covers (t_{i-1}, t_i]."""
    out = {}
    ok = np.isfinite(t) & np.isfinite(gpu)
    for g in distinct(gpu[ok]).tolist():
        sel = ok & (gpu == g)
        tt, rr = t[sel], rx[sel]
        order = np.argsort(tt, kind="stable")
        tt, rr = tt[order], rr[order]
        has = np.isfinite(rr)
        # rows of other columns (no RX) and wrap-suspect ones: the window runs to the next reading;
        # a wrap-suspect reading's window stays uncovered
        keep = has | (_num(samples, "wrap_suspect")[sel][order] == 1)
        tt, rr = tt[keep], rr[keep]
        if tt.size < 2:
            continue
        hi, lo, r = tt[1:], tt[:-1], rr[1:]
        dt = hi - lo
        fin = np.isfinite(r)
        gb = np.where(fin, r, 0.0) * dt
        cov = np.where(fin, dt, 0.0)
        out[int(g)] = (hi, lo, np.concatenate([[0.0], np.cumsum(gb)]), np.concatenate([[0.0], np.cumsum(cov)]),
                       np.where(fin, r, 0.0), fin)
    return out


def _cum_at(w: tuple, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(GB moved, covered s) from the first reading to each time x, on one GPU's windows."""
    hi, lo, cgb, ccov, r, fin = w
    x = np.clip(x, lo[0], hi[-1])
    j = np.minimum(np.searchsorted(hi, x, side="left"), hi.size - 1)
    part = np.maximum(x - lo[j], 0.0)
    return cgb[j] + r[j] * part, ccov[j] + np.where(fin[j], part, 0.0)


def _phase_bytes(windows: dict, gpu: int, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(GB, seconds) of each interval [s, e] whose time the readings cover >= MIN_COVERED (its
    bytes scaled up to the whole interval), on the phase's GPU or, for gpu -1, on each GPU."""
    gbs, secs = [np.zeros(0)], [np.zeros(0)]
    for g in (windows if gpu < 0 else [gpu] if gpu in windows else []):
        gb0, c0 = _cum_at(windows[g], s)
        gb1, c1 = _cum_at(windows[g], e)
        d = e - s
        cov = np.divide(c1 - c0, d, out=np.zeros_like(d), where=d > 0)
        ok = (d > 0) & (cov >= MIN_COVERED)
        gbs.append((gb1 - gb0)[ok] / cov[ok])
        secs.append(d[ok])
    return np.concatenate(gbs), np.concatenate(secs)


def _median(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(median(x)) if x.size else float("nan")


def pcie_by_phase(samples: pd.DataFrame, phases: pd.DataFrame, line_rate_gbs: float) -> pd.DataFrame:
    import pandas as pd

    t = _num(samples, "t_wall")
    gpu = _num(samples, "gpu")
    rx, tx, sm = _num(samples, "rx_gbs"), _num(samples, "tx_gbs"), _num(samples, "sm_active")
    wrap = _num(samples, "wrap_suspect") == 1
    rx = np.where(wrap, np.nan, rx)
    tx = np.where(wrap, np.nan, tx)
    rows = []
    any_phase = np.zeros(t.size, dtype=bool)
    windows = _rx_windows(samples, t, gpu, rx)
    for phase, grp in phases.groupby("phase", sort=True):
        mask = np.zeros(t.size, dtype=bool)
        lengths = []
        moved: list[tuple[np.ndarray, np.ndarray]] = []
        for g, sub in grp.groupby("gpu"):
            s, e = iv.merge(sub["t_start"].to_numpy(), sub["t_end"].to_numpy())
            lengths.append(e - s)
            sel = np.ones(t.size, dtype=bool) if g < 0 else (gpu == g)
            mask |= sel & _inside(t, s, e)
            moved.append(_phase_bytes(windows, int(g), np.asarray(s, dtype="float64"), np.asarray(e, dtype="float64")))
        any_phase |= mask
        lengths_all = np.concatenate(lengths) if lengths else np.zeros(0)
        gbs = np.concatenate([m[0] for m in moved]) if moved else np.zeros(0)
        secs = np.concatenate([m[1] for m in moved]) if moved else np.zeros(0)
        rows.append((phase, mask, float(median(lengths_all)) if lengths_all.size else float("nan"), (gbs, secs)))
    rows.append((NO_PHASE, ~any_phase & ~np.isnan(t), float("nan"), (np.zeros(0), np.zeros(0))))
    interval = reading_interval_s(samples)
    out = []
    for phase, mask, duration, (gbs, secs) in rows:
        # a phase no reading fell in is shown only when it outlasts a reading (its bytes then tell)
        if not mask.any() and not (gbs.size and np.isfinite(duration) and duration >= interval):
            continue
        mean = float(gbs.sum()) / float(secs.sum()) if secs.sum() > 0 else float("nan")
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
                "duration_median_s": duration,
                "sample_interval_s": interval,
                "gb_per_phase_median": float(median(gbs)) if gbs.size else float("nan"),
                "rx_gbs_mean": mean,
                "rx_mean_share_of_line_rate": mean / line_rate_gbs if line_rate_gbs > 0 else float("nan"),
            }
        )
    if not out:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "phase" else "float64") for c in PCIE_COLUMNS})
    return pd.DataFrame(out, columns=PCIE_COLUMNS)
