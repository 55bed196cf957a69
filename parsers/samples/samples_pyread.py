"""The Python reader of gpuscope's samples.csv (parsers/samples/samples_csv.py's other path): pandas' C
parser over the well-shaped lines, the same rules and the same compact frame as the compiled
reader (used without the extension, with GPUSCOPE_PURE_SCANNER=1, and for files holding a lone
carriage return or NUL bytes)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.errors import InputError
from gpuscope.parsers.samples.samples_base import (
    _NA,
    _NUMERAL,
    BOUNDS,
    INT_COLUMNS,
    NAN,
    REQUIRED,
    SAMPLE_COLUMNS,
    STR_COLUMNS,
    _attrs,
    _frame,
    compact,
)


def well_shaped(data: bytes, nfields: int) -> tuple[bytes, int]:
    """(the non-blank lines of `data` with exactly nfields fields, how many others there were),
    counted with numpy on the positions of the newlines and commas only (a pandas C read would
    pad short rows silently)."""
    b = np.frombuffer(data, dtype=np.uint8)
    if not len(b):
        return b"", 0
    if b[-1] != 10:
        data += b"\n"
        b = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(b == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    # commas per line: how many comma positions fall before each line's end
    commas = np.searchsorted(np.flatnonzero(b == 44), ends)
    n_commas = np.diff(np.concatenate(([0], commas)))
    ink = np.flatnonzero((b != 9) & (b != 10) & (b != 13) & (b != 32))
    blank = np.searchsorted(ink, ends) == np.searchsorted(ink, starts)
    good = ~blank & (n_commas == nfields - 1)
    bad = int((~blank & ~good).sum())
    if good.all():
        return data, 0
    keep = [data[s:e] for s, e, g in zip(starts.tolist(), ends.tolist(), good.tolist(), strict=True) if g]
    return (b"\n".join(keep) + b"\n") if keep else b"", bad


def python_reader(text: str, p: Path, nul: tuple[int, int]) -> pd.DataFrame:
    """The vectorised Python reader (pandas' C parser over the well-shaped lines)."""
    head, _, rest = text.partition("\n")
    header = [h.strip() for h in head.split(",")]
    if "t_wall" not in header or "gpu" not in header:
        raise InputError(f"{p}: not a gpuscope samples.csv (no t_wall/gpu header)")
    malformed = 0
    if not text.endswith("\n") and rest:
        cut = rest.rfind("\n")
        rest = rest[: cut + 1] if cut >= 0 else ""
        malformed += 1
    body, bad_shape = well_shaped(rest.encode("utf-8", "surrogatepass"), len(header))
    malformed += bad_shape  # too many or too few fields
    if not body:
        return _attrs(_frame([], malformed, "gpuscope"), malformed, "gpuscope", nul=nul)
    raw = _pandas_read(body, header, p)
    ok = np.ones(len(raw), dtype=bool)
    cols: dict[str, np.ndarray | None] = {}
    strs: np.ndarray | None = None
    unreadable: dict[str, np.ndarray] = {}
    for c in SAMPLE_COLUMNS:
        if c not in header:
            cols[c] = None
            continue
        col = raw[f"_c{header.index(c)}"]
        if c in STR_COLUMNS:
            arr = col.fillna("").astype(str).str.strip().to_numpy(dtype=object)
            arr[arr == ""] = None
            strs = arr
            continue
        num, bad = _numbers(c, col)
        if c in REQUIRED:
            ok &= ~bad
        elif bad.any():  # the value is missing, the row stays (a bad wrap_suspect: suspect)
            num = np.where(bad, 1.0 if c == "wrap_suspect" else NAN, num)
            unreadable[c] = bad
        cols[c] = num
    t_wall = cols["t_wall"]
    assert t_wall is not None
    ok &= np.isfinite(t_wall)
    malformed += int((~ok).sum())
    bad_values = {c: int((b & ok).sum()) for c, b in unreadable.items()}
    k = int(ok.sum())
    if not k:
        return _attrs(_frame([], malformed, "gpuscope"), malformed, "gpuscope", bad_values, nul)
    kept = {c: (None if v is None else v[ok]) for c, v in cols.items()}
    data = compact(kept, strs[ok] if strs is not None else None, k)
    df = pd.DataFrame({c: data[c] for c in SAMPLE_COLUMNS}, columns=list(SAMPLE_COLUMNS), copy=False)
    return _attrs(df, malformed, "gpuscope", bad_values, nul)


def _pandas_read(body: bytes, header: list[str], p: Path) -> pd.DataFrame:
    names = [f"_c{i}" for i in range(len(header))]
    numeric = [names[i] for i, c in enumerate(header) if c in SAMPLE_COLUMNS and c not in STR_COLUMNS]
    try:  # the C parser converts clean numeric columns itself; a column with junk stays strings
        return pd.read_csv(io.StringIO(body.decode("utf-8", "surrogatepass")), header=None, names=names,
                           engine="c", keep_default_na=False, na_values={c: sorted(_NA) for c in numeric},
                           dtype={c: str for c in names if c not in numeric}, quoting=3,
                           skipinitialspace=True, skip_blank_lines=True, low_memory=False)
    except (pd.errors.ParserError, ValueError) as e:
        raise InputError(f"{p}: unreadable samples.csv ({' '.join(str(e).split())[:120]})") from None


def _numbers(c: str, col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values, unreadable) of one numeric column by its rules."""
    if col.dtype.kind in "fiu":
        num = col.to_numpy(dtype="float64")
        bad = np.isinf(num)
    else:  # junk somewhere in this column: the row-by-row rules, on this column only
        vals = col.fillna("").astype(str).str.strip()
        is_na = vals.isin(_NA).to_numpy()
        numeral = vals.str.fullmatch(_NUMERAL).to_numpy(dtype=bool)  # not ٩٨, ９８, 98_765
        num = pd.to_numeric(vals.where(numeral, "nan"), errors="coerce").to_numpy(dtype="float64")
        bad = ~is_na & ~np.isfinite(num)
    num = num + 0.0  # no negative zero ("-0" reads as 0 whatever else the column holds)
    if c in BOUNDS:
        lo, hi = BOUNDS[c]
        with np.errstate(invalid="ignore"):
            bad = bad | (np.isfinite(num) & ((num < lo) | (num > hi)))
    if c in INT_COLUMNS:  # whole numbers that fit int64
        bad = bad | (np.isfinite(num) & ((num != np.floor(num)) | (np.abs(num) >= 2.0**63)))
        if c == "gpu":
            bad = bad | np.isnan(num)
    return num, bad
