"""A small columnar table: what the analysis computes on, before any report asks for a
pandas DataFrame.

`Table` holds equal-length numpy columns, in order, and row labels (`index`: the records'
ids, the components' names). The analysis reads columns (`t["held_ms"]`), rows by label
(`t.at("prep_msm", "median_ms")`) or by position (`t.rows(slice(1, None))`); `t.frame()`
builds the DataFrame once, for the reports that print it. `as_table` takes a DataFrame (a
test's, a caller's) as well, so every function here accepts both. numpy only: `analyze
--json` never imports pandas for these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from gpuscope.arrays import median


class Table:
    __slots__ = ("_cols", "_index", "_n", "index_name", "_frame", "_dtypes", "_pos", "_numbered")

    def __init__(self, cols: Mapping[str, Any], index: Iterable | None = None, index_name: str | None = None,
                 dtypes: Mapping[str, str] | None = None):
        self._cols = {k: np.asarray(v) for k, v in cols.items()}
        self._numbered = index is None  # rows numbered 0..n-1 (a DataFrame's RangeIndex)
        self._index: np.ndarray | None
        if index is None:
            self._index = None  # (0..n-1 made when read: a million-row split does not hold it)
            self._n = len(next(iter(self._cols.values()))) if self._cols else 0
        elif isinstance(index, np.ndarray):
            self._index = index
        else:
            self._index = np.array(list(index), dtype=object)
        if self._index is not None:
            self._n = len(self._index)
        self.index_name = index_name
        self._dtypes = dict(dtypes or {})
        self._frame: Any = None
        self._pos: dict | None = None

    @property
    def index(self) -> np.ndarray:
        """The row labels (rows numbered 0..n-1 where none were given)."""
        if self._index is None:
            self._index = np.arange(self._n)
        return self._index

    def __getitem__(self, name: str) -> np.ndarray:
        return self._cols[name]

    def __contains__(self, name: str) -> bool:
        return name in self._cols

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> list[str]:
        return list(self._cols)

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def has(self, label) -> bool:
        """Whether `label` is a row label."""
        return label in self._positions()

    def _positions(self) -> dict:
        if self._pos is None:
            self._pos = {lab: i for i, lab in enumerate(self.index.tolist())}
        return self._pos

    def at(self, label, column: str):
        return self._cols[column][self._positions()[label]]

    def rows(self, sel) -> Table:
        """The rows at positions `sel` (a slice, an index array or a boolean mask)."""
        return Table({k: v[sel] for k, v in self._cols.items()}, None if self._numbered else self.index[sel],
                     self.index_name, self._dtypes)

    def records(self) -> list[dict]:
        """Rows as dicts (column -> Python scalar), in order."""
        names = list(self._cols)
        return [dict(zip(names, vals, strict=True)) for vals in zip(*(self._cols[c].tolist() for c in names),
                                                                      strict=True)] if names else []

    def frame(self):
        """The pandas DataFrame of this table (built once)."""
        if self._frame is None:
            import pandas as pd

            data = {}
            for k, v in self._cols.items():
                dt = self._dtypes.get(k)
                data[k] = pd.Series(v, dtype=dt) if dt is not None else v
            df = pd.DataFrame(data, columns=list(self._cols), copy=False)
            if not self._numbered:
                obj = self.index.dtype == object
                df.index = pd.Index(self.index.tolist() if obj else self.index, name=self.index_name,
                                    dtype=object if obj else None)
            self._frame = df
        return self._frame

    @classmethod
    def from_frame(cls, df) -> Table:
        import pandas as pd

        numbered = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
        index = None if numbered else df.index.to_numpy()
        return cls({str(c): df[c].to_numpy() for c in df.columns}, index, df.index.name)


def as_table(x) -> Table:
    """A Table of a Table or a pandas DataFrame."""
    if isinstance(x, Table):
        return x
    return Table.from_frame(x)


def column(x, name: str) -> np.ndarray:
    """One column of a Table, a DataFrame or a gpuscope.schemas.Columns, as a numpy array."""
    v = x[name]
    return v if isinstance(v, np.ndarray) else v.to_numpy()


def nansum(x) -> float:
    """pandas' Series.sum(): NaN counted as 0, numpy's pairwise sum of the rest."""
    x = np.asarray(x, dtype="float64")
    if x.size and np.isnan(x).any():
        x = np.where(np.isnan(x), 0.0, x)
    return float(x.sum())


def nanmedian(x) -> float:
    """pandas' Series.median(): the median of the values that are not NaN (NaN when none),
    by one partition (gpuscope.arrays.median)."""

    return float(median(x, skip_nan=True))
