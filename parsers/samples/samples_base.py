"""What every samples reader shares (parsers.samples: dmon, query-gpu; parsers.samples_csv:
gpuscope's samples.csv): the not-available spellings, the bounds of each column, the numerals
the formats print, the frame and its damage accounting, the text without its NUL damage."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.allocator import small_pages  # noqa: F401 (the reader's, samples_csv)
from gpuscope.errors import NoDataError, read_error
from gpuscope.parsers import numbers
from gpuscope.parsers.limits import read_path, utf8
from gpuscope.schemas import SAMPLE_COLUMNS
from gpuscope.schemas import SAMPLE_INT_COLUMNS as INT_COLUMNS
from gpuscope.schemas import SAMPLE_STR_COLUMNS as STR_COLUMNS

__all__ = ["BOUNDS", "INT_COLUMNS", "NAN", "REQUIRED", "SAMPLE_COLUMNS", "STR_COLUMNS"]

NAN = math.nan
_NA = frozenset(("", "-", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]",
                 "[Insufficient Permissions]", "nan"))


REQUIRED = ("t_wall", "gpu")  # a row without these is no sample


def _frame(rows: list[dict], malformed: int, fmt: str, bad_values: dict | None = None) -> pd.DataFrame:
    data = {}
    for c in SAMPLE_COLUMNS:
        vals = [r.get(c) for r in rows]
        if c in INT_COLUMNS:
            data[c] = pd.Series(np.asarray([0 if v is None else v for v in vals], dtype=np.int64))
        elif c in STR_COLUMNS:
            data[c] = pd.Series(vals, dtype=object)
        else:
            data[c] = pd.Series(np.asarray([NAN if v is None else v for v in vals], dtype=np.float64))
    df = pd.DataFrame(data, columns=list(SAMPLE_COLUMNS))
    return _attrs(df, malformed, fmt, bad_values)


def _attrs(df: pd.DataFrame, malformed: int, fmt: str, bad_values: dict | None = None,
           nul: tuple[int, int] = (0, 0)) -> pd.DataFrame:
    df.attrs["malformed_rows"] = int(malformed) + int(nul[1])
    df.attrs["format"] = fmt
    df.attrs["bad_values"] = {k: int(v) for k, v in (bad_values or {}).items() if v}
    df.attrs["nul_bytes"] = int(nul[0])
    df.attrs["nul_rows"] = int(nul[1])
    return df


def _add_nul(df: pd.DataFrame, nul: tuple[int, int]) -> pd.DataFrame:
    """Count NUL bytes a caller removed before handing the text on."""
    df.attrs["nul_bytes"] = int(df.attrs.get("nul_bytes", 0)) + int(nul[0])
    df.attrs["nul_rows"] = int(df.attrs.get("nul_rows", 0)) + int(nul[1])
    df.attrs["malformed_rows"] = int(df.attrs.get("malformed_rows", 0)) + int(nul[1])
    return df


def _without_nul(text: str, p: Path) -> tuple[str, tuple[int, int]]:
    """(text without NUL damage, (NUL bytes, lines dropped)): a run of NULs at the end is cut
    off (what a crash leaves in a preallocated block), a line holding one is dropped whole (its
    numbers cannot be trusted); NUL bytes in the header line: NoDataError (a binary file)."""
    if "\x00" not in text:
        return text, (0, 0)
    n = text.count("\x00")
    body = text.rstrip("\x00")
    head = body.split("\n", 1)[0]
    if "\x00" in head or not body.strip():
        raise NoDataError(f"{p} looks binary (NUL bytes), not a samples file")
    pieces = body.split("\n")
    complete, last = pieces[:-1], pieces[-1]
    kept = [ln for ln in complete if "\x00" not in ln]
    dropped = len(complete) - len(kept) + ("\x00" in last)
    return "".join(ln + "\n" for ln in kept) + ("" if "\x00" in last else last), (n, dropped)


def _read_text(path: str | os.PathLike[str], text: str | None = None) -> tuple[str, Path, tuple[int, int]]:
    """(text, path, (NUL bytes, lines they cost)): the file's text, or `text` when the caller
    already read it, without its NUL damage (_without_nul)."""
    p = Path(path)
    if text is not None:
        text = text.removeprefix("\ufeff")
        if not text or text.isspace():
            raise NoDataError(f"{p} is empty")
        text, nul = _without_nul(text, p)
        return text, p, nul
    try:
        if p.is_dir():
            p = p / "samples.csv"
    except (OSError, ValueError) as e:
        raise read_error(p, e) from None
    data = utf8(read_path(p, "samples"))
    if not data or data.isspace():  # (strip() would copy the whole file)
        raise NoDataError(f"{p} is empty")
    text, nul = _without_nul(data.decode("utf-8", errors="replace"), p)
    return text, p, nul


# what a sample's value may be (beyond it: damage, counted, never a reading): epoch times to
# year 2286, GPU indices below 1024 (NVML numbers a host's GPUs from 0), fractions 0..1,
# percentages 0..100, GB/s below 10 TB/s, MiB below 100 TiB, watts and MHz below 100,000
BOUNDS: dict[str, tuple[float, float]] = {
    "t_wall": (0.0, 1e10), "t_mono": (-1e10, 1e10), "gpu": (0.0, 1023.0),
    "rx_gbs": (0.0, 1e4), "tx_gbs": (0.0, 1e4),
    "sm_active": (0.0, 1.0), "sm_occupancy": (0.0, 1.0), "dram_active": (0.0, 1.0),
    "tensor_active": (0.0, 1.0), "fp16_active": (0.0, 1.0), "fp32_active": (0.0, 1.0), "fp64_active": (0.0, 1.0),
    "gpu_util_pct": (0.0, 100.0), "mem_util_pct": (0.0, 100.0), "mem_used_mib": (0.0, 1e8),
    "power_w": (0.0, 1e5), "sm_clock_mhz": (0.0, 1e5), "mem_clock_mhz": (0.0, 1e5),
    "temperature_c": (-100.0, 1000.0), "clock_event_reasons": (0.0, 2.0**53), "wrap_suspect": (0.0, 1.0),
}


def _num(text: str) -> float | None:
    """A number (parsers.numbers: ASCII numerals only), NaN for nvidia-smi's not-available
    spellings, None when unreadable."""
    t = text.strip()
    if t in _NA:
        return NAN
    return numbers.number(t)


def _bounded(column: str, x: float | None) -> float | None:
    """x when within the column's BOUNDS (or NaN), else None (damage)."""
    if x is None or x != x or column not in BOUNDS:
        return x
    lo, hi = BOUNDS[column]
    return x if lo <= x <= hi else None
# the numerals the formats print (parsers.numbers' grammar), for a column read as strings
_NUMERAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


# -- the compact columns both readers make (docs/ARCHITECTURE.md "samples.csv") ---------------

#: the dtype of a column of each kind (beside float64 where float32 would lose a digit)
INT_DTYPES: dict[str, type[np.integer]] = {"gpu": np.int16, "wrap_suspect": np.int8}


def _nan_view(n: int) -> np.ndarray:
    return np.broadcast_to(np.float64(NAN), (n,))


def _int_column(c: str, x, k: int) -> np.ndarray:
    dt = INT_DTYPES.get(c, np.int64)
    if x is None:
        return np.broadcast_to(np.zeros(1, dtype=dt), (k,))
    x = np.asarray(x)
    return np.where(np.isfinite(x), x, 0).astype(dt)


def _categorical(raw: list[str], codes: np.ndarray | None, k: int) -> pd.Categorical:
    """The string column from its distinct raw values (stripped; empty: missing) and a code per
    row; categories sorted, as pandas makes them from the values."""
    names = sorted({v.strip() for v in raw} - {""})
    if codes is None or not names:
        return pd.Categorical.from_codes(np.full(k, -1, dtype=np.int8), categories=pd.Index(names, dtype=object))
    where = {n: i for i, n in enumerate(names)}
    remap = np.array([where.get(v.strip(), -1) for v in raw], dtype=np.int32)
    small = np.int8 if len(names) < 127 else np.int16 if len(names) < 32767 else np.int32
    return pd.Categorical.from_codes(remap.astype(small)[codes], categories=pd.Index(names, dtype=object))


def compact(cols: dict[str, np.ndarray | None], strs: np.ndarray | None, k: int) -> dict[str, object]:
    """The Python reader's float64 / object columns in the compiled reader's compact dtypes."""
    data: dict[str, object] = {}
    for c in SAMPLE_COLUMNS:
        x = cols.get(c)
        if c in STR_COLUMNS:
            continue
        if c in INT_COLUMNS:
            data[c] = _int_column(c, x, k)
        elif x is None or not (~np.isnan(x)).any():
            data[c] = _nan_view(k)
        elif c in ("t_wall", "t_mono"):
            data[c] = x
        else:
            f = x.astype(np.float32)
            data[c] = f if bool(((f == x) | np.isnan(x)).all()) else x
    vals = ["" if v is None else str(v) for v in (strs if strs is not None else [])]
    uniq, inv = (np.unique(np.asarray(vals, dtype=object), return_inverse=True) if vals
                 else (np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)))
    data["pcie_source"] = _categorical([str(u) for u in uniq], inv.astype(np.int32) if strs is not None else None, k)
    return data
