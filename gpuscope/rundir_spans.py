"""A run directory's spans.csv (the record's annotated phases) read back, each row checked: a row
without times, an end before its start, a stamp beyond any date, a repeated header or an id that
is no id is damage, counted in `attrs["malformed_rows"]`, never a phase."""

from __future__ import annotations

import os

from gpuscope.errors import InputError
from gpuscope.parsers.limits import check_size
from gpuscope.rundir import SPANS, _regular_file, _require_dir

MAX_EPOCH_S = 1e10  # epoch seconds beyond year 2286 are damage, not a time
MAX_ID = 1 << 31    # a GPU, worker or partition number beyond it is damage


def read_spans(path: str | os.PathLike[str]):
    """spans.csv of a run directory as a DataFrame, None when absent or empty. A file without
    the spans columns -> InputError."""
    import pandas as pd

    p = _require_dir(path) / SPANS
    if not _regular_file(p):
        return None
    check_size(p, "spans", p.stat().st_size)
    try:
        df = pd.read_csv(p, on_bad_lines="skip")
    except pd.errors.EmptyDataError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable {p}: {' '.join(str(e).split())}") from None
    need = {"t_start", "t_end", "phase"}
    if not need <= set(df.columns):
        raise InputError(f"{p}: not a gpuscope spans.csv (needs columns {', '.join(sorted(need))})")
    t0 = pd.to_numeric(df["t_start"], errors="coerce")
    t1 = pd.to_numeric(df["t_end"], errors="coerce")
    good = t0.notna() & t1.notna() & (t1 >= t0) & t0.abs().le(MAX_EPOCH_S) & t1.abs().le(MAX_EPOCH_S)
    ids = {}
    for c in ("gpu", "worker", "partition"):  # optional: -1 when absent; junk or a huge id drops the row
        raw = df[c] if c in df.columns else pd.Series(-1, index=df.index)
        num = pd.to_numeric(raw, errors="coerce")
        given = raw.notna() & (raw.astype(str).str.strip() != "")
        good &= ~given | ((num >= -1) & (num < MAX_ID) & (num == num.round()))  # junk, 1e300: the row goes
        ids[c] = num
    phase = df["phase"]
    good &= phase.notna() & (phase.astype(str).str.strip() != "")  # a short row: pandas left it NaN
    out = pd.DataFrame({"t_start": t0[good].astype("float64"), "t_end": t1[good].astype("float64"),
                        **{c: ids[c][good].fillna(-1).astype("int64") for c in ids},
                        "phase": df["phase"][good].astype(str).str.slice(0, 200)})
    out = out.reset_index(drop=True)
    # no times, an end before its start, no date, a repeated header, an id that is no id
    out.attrs["malformed_rows"] = int((~good).sum())
    return out
