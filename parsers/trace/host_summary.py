"""What the analysis reads of a trace's host events beyond the rows TraceFrames.host keeps. Pure.

TraceFrames.host holds the host events the analysis reads one by one: for a Kineto trace all of
them; for an Nsight Systems export only the few (NVTX phase ranges, synchronising and allocating
runtime/driver calls, operators named like a read-back, a data loader or a collective): an
export of 10,000,000 kernels holds ~65M host events (emit_nvtx's operator ranges, runtime calls),
3.3 GB as rows. What the analysis needs of the many, it asks a HostSummary (TraceFrames.summary()):

    spans()                    rank -> (first start, last start, last end) of all its host events (us)
    work_cover(rank, qs, qe)   per window [qs, qe], its length covered by the rank's traced host
                               work (the union of every host event but annotations: operators,
                               runtime/driver calls, Python functions)
    release_work()             the analysis has asked work_cover of every window it will: the Nsight
                               summary drops its cover (~200 MB at 10M kernels), answering the
                               same windows again from what it gave
    launch_interval_us()       the median start-to-start interval of one thread's kernel launches
                               (each rank's and thread's own), None without launches
    calls(rank, correlation)   (start, duration) of the first runtime/driver call carrying each id
                               (NaN where none does)
    has_calls(rank)            whether any runtime/driver call of the rank carries an id
    launched(rank, pid, tid, starts, ends)
                               the ids of the runtime/driver calls on that thread starting inside
                               the disjoint sorted ranges
    across(rank, windows)      per (start, end) window, the rank's host events overlapping it
                               (TRACE_HOST_SCHEMA rows)

RowsSummary answers from the rows (every reader but the Nsight one keeps them all); the Nsight
reader's (parsers/trace/nsys_host.py) from SQL, the same figures (tests/test_nsys_*.py). What
that reader builds while it streams the many: Cover (each process's cover, merged chunk after
chunk, only the tail a chunk reaches) and Chunks (where each chunk of a table lies in time, so
`across` reads only the chunks that reach its windows), Launches (each thread's launch starts:
the median launch interval).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuscope.arrays import distinct, median
from gpuscope.coverage import covered_lengths, merge

RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
LAUNCH = "LaunchKernel"  # a kernel launch call's name holds it (cudaLaunchKernel, cuLaunchKernel, ...)

Spans = dict[int, tuple[float, float, float]]
Merged = tuple[np.ndarray, np.ndarray]


class HostSummary:
    """The interface (module doc); RowsSummary and the Nsight reader's implement it."""

    def spans(self) -> Spans:
        raise NotImplementedError

    def work_cover(self, rank: int, qs: np.ndarray, qe: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def release_work(self) -> None:
        """(Only a summary that holds its cover has something to release.)"""

    def launch_interval_us(self) -> float | None:
        raise NotImplementedError

    def calls(self, rank: int, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def has_calls(self, rank: int) -> bool:
        raise NotImplementedError

    def launched(self, rank: int, pid: int, tid: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def across(self, rank: int, windows: list[tuple[float, float]]) -> list[pd.DataFrame]:
        raise NotImplementedError


def span_of(spans: Spans, ranks: list[int] | None = None) -> tuple[float, float, float] | None:
    """(first start, last start, last end) over `ranks` (all: None); None without host events."""
    got = [v for r, v in spans.items() if ranks is None or r in ranks]
    if not got:
        return None
    return min(v[0] for v in got), max(v[1] for v in got), max(v[2] for v in got)


def inside(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask over t: inside one of the disjoint sorted ranges (ends included)."""
    k = np.searchsorted(starts, t, side="right") - 1
    return (k >= 0) & (t <= ends[np.maximum(k, 0)]) if starts.size else np.zeros(t.size, dtype=bool)


def median_launch_interval(groups: list[np.ndarray]) -> float | None:
    """The median of each thread's sorted launch starts' differences, all threads together."""
    steps = [np.diff(np.sort(ts)) for ts in groups]
    d = np.concatenate(steps) if steps else np.zeros(0)
    return float(median(d)) if d.size else None


class RowsSummary(HostSummary):
    """A HostSummary read from every host event's row (TRACE_HOST_SCHEMA, sorted by rank and ts)."""

    def __init__(self, host: pd.DataFrame) -> None:
        self.host = host
        self._by_rank: dict[int, pd.DataFrame] = {}

    def _rank(self, rank: int) -> pd.DataFrame:
        if rank not in self._by_rank:
            self._by_rank[rank] = self.host[self.host["rank"] == rank]
        return self._by_rank[rank]

    def spans(self) -> Spans:
        h = self.host
        if not len(h):
            return {}
        s = h["ts_us"].to_numpy(dtype="float64")
        g = pd.DataFrame({"r": h["rank"].to_numpy(), "s": s, "e": s + h["dur_us"].to_numpy(dtype="float64")})
        agg = g.groupby("r", sort=True).agg(first=("s", "min"), last=("s", "max"), end=("e", "max"))
        return {int(r): (float(a), float(b), float(c)) for r, a, b, c in agg.itertuples()}

    def work_cover(self, rank: int, qs: np.ndarray, qe: np.ndarray) -> np.ndarray:
        h = self._rank(rank)
        keep = (h["cat"].astype(object) != "user_annotation").to_numpy()
        s = h["ts_us"].to_numpy(dtype="float64")[keep]
        return covered_lengths(qs, qe, *merge(s, s + h["dur_us"].to_numpy(dtype="float64")[keep]))

    def launch_interval_us(self) -> float | None:
        h = self.host
        launches = h[h["name"].astype(object).str.contains(LAUNCH, regex=False)]
        groups = [g["ts_us"].to_numpy(dtype="float64")
                  for _, g in launches.groupby(["rank", "pid", "tid"], sort=False, observed=True)]
        return median_launch_interval(groups)

    def _runtime(self, rank: int) -> pd.DataFrame:
        h = self._rank(rank)
        return h[h["cat"].astype(object).isin(RUNTIME_CATS) & (h["correlation"] >= 0)]

    def calls(self, rank: int, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rt = self._runtime(rank).drop_duplicates("correlation")  # (by ts: the first call)
        idx = pd.Index(rt["correlation"].to_numpy())
        k = idx.get_indexer(np.asarray(correlation))
        ok = k >= 0
        ts = np.full(k.size, np.nan)
        dur = np.full(k.size, np.nan)
        ts[ok] = rt["ts_us"].to_numpy(dtype="float64")[k[ok]]
        dur[ok] = rt["dur_us"].to_numpy(dtype="float64")[k[ok]]
        return ts, dur

    def has_calls(self, rank: int) -> bool:
        return bool((self._rank(rank)["correlation"] >= 0).any())

    def launched(self, rank: int, pid: int, tid: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        rt = self._runtime(rank)
        r = rt[(rt["pid"] == pid) & (rt["tid"] == tid)]
        return r["correlation"].to_numpy()[inside(r["ts_us"].to_numpy(dtype="float64"), starts, ends)]

    def across(self, rank: int, windows: list[tuple[float, float]]) -> list[pd.DataFrame]:
        h = self._rank(rank)
        s = h["ts_us"].to_numpy(dtype="float64")
        e = s + h["dur_us"].to_numpy(dtype="float64")
        return [h.iloc[np.flatnonzero((s < end) & (e > start))] for start, end in windows]


class Summarised:
    """TraceFrames' summary(): the reader's host summary (`host_summary`), else one read from the
    rows of `host` (every reader but the Nsight one keeps every host event as a row)."""

    host: pd.DataFrame
    host_summary: HostSummary | None

    def summary(self) -> HostSummary:
        if self.host_summary is None:
            self.host_summary = RowsSummary(self.host)
        return self.host_summary


class Chunks:
    """Where in a table its rows lie in time: per chunk read, its rowid range and the earliest
    start and latest end (us, as the rows' `_times`) of the rows it held, so that a look-up of the
    events across a few windows reads only the chunks that reach them (the rowid ranges), not
    every row of the table (at 10M kernels 65M rows: ~60 s of CPU for the ten longest gaps)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []  # (first, last rowid) per chunk, filled by iter_chunks
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, s: np.ndarray, e: np.ndarray) -> None:
        self.lo.append(float(s.min()))
        self.hi.append(float(e.max()))

    def ranges(self, windows: list[tuple[float, float]], slack: float) -> list[tuple[int, int]]:
        """The rowid ranges of the chunks whose rows may overlap a window widened by `slack` us
        (consecutive chunks joined: the rowids between two chunks hold no row read)."""
        if not self.spans or len(self.spans) != len(self.lo):
            return [(0, 2**63 - 1)]  # (not recorded: every row)
        lo, hi = np.asarray(self.lo), np.asarray(self.hi)
        hit = np.zeros(lo.size, dtype=bool)
        for a, b in windows:
            hit |= (lo < b + slack) & (hi > a - slack)
        out: list[tuple[int, int]] = []
        for i in np.flatnonzero(hit).tolist():
            if out and i > 0 and hit[i - 1]:
                out[-1] = (out[-1][0], self.spans[i][1])
            else:
                out.append(self.spans[i])
        return out


MERGE_ROWS = 1 << 20  # a rank's buffered host intervals merged into its cover from this many on


class Cover:
    """Each process's host intervals merged into disjoint blocks chunk after chunk: the buffer is
    merged into the blocks once it holds MERGE_ROWS or half the blocks' number."""

    def __init__(self) -> None:
        self.blocks: dict[int, Merged] = {}
        self.buf: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.n: dict[int, int] = {}

    def add(self, key: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        keys = distinct(key)
        for k in keys.tolist():
            sel = slice(None) if keys.size == 1 else key == k
            self.buf.setdefault(k, []).append((s[sel], e[sel]))
            self.n[k] = self.n.get(k, 0) + int(s[sel].size)
            if self.n[k] >= max(MERGE_ROWS, self.blocks.get(k, (s[:0], s[:0]))[0].size // 2):
                self._flush(k)

    def _flush(self, k: int) -> None:
        """The buffer merged into the blocks it reaches: the blocks that end before its earliest
        start stay as they are (merge would give them back unchanged: each starts past the last
        one's end), only the tail is merged again. Rows come in time order per table, so the
        tail is mostly the buffer (10M kernels: each merge had re-sorted ~6M blocks)."""
        parts = self.buf.pop(k, [])
        self.n[k] = 0
        if not parts:
            return
        s, e = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        del parts
        if k not in self.blocks:
            self.blocks[k] = merge(s, e)
            return
        bs, be = self.blocks[k]
        cut = int(np.searchsorted(be, s.min(), side="left")) if s.size else be.size
        ts, te = merge(np.concatenate([bs[cut:], s]), np.concatenate([be[cut:], e]))
        del s, e
        self.blocks[k] = (np.concatenate([bs[:cut], ts]), np.concatenate([be[:cut], te])) if cut else (ts, te)

    def done(self) -> dict[int, Merged]:
        for k in list(self.buf):
            self._flush(k)
        return self.blocks


class Launches:
    """Each thread's kernel launch starts, kept a chunk at a time as the call tables stream by, and
    their median start-to-start interval: what `lag(start) OVER (PARTITION BY globalTid ORDER BY
    start)` over the launch calls gave in SQL (~50 s of CPU at 10M kernels, a Python float per
    interval), from the starts the pass reads anyway."""

    def __init__(self) -> None:
        self.starts: dict[tuple[int, int], list[np.ndarray]] = {}  # (process key, tid) -> starts (us)

    def add(self, key: np.ndarray, tid: np.ndarray, s: np.ndarray) -> None:
        """A chunk's calls: process key, thread id (-1: not a launch), start."""
        m = tid >= 0
        if not m.any():
            return
        key, tid, s = key[m], tid[m], s[m]
        for k in distinct(key).tolist():
            on = key == k
            for t in distinct(tid[on]).tolist():
                self.starts.setdefault((k, t), []).append(s[on & (tid == t)])

    def median_interval(self) -> float | None:
        """The median of each thread's sorted starts' differences, all threads together (each
        thread's starts freed once differenced); None without two launches on one thread."""
        steps = []
        while self.starts:
            _, got = self.starts.popitem()
            a = np.concatenate(got) if len(got) > 1 else got[0]
            del got
            if a.size > 1 and not bool((a[1:] >= a[:-1]).all()):
                a = np.sort(a)
            steps.append(np.diff(a))
            del a
        d = np.concatenate(steps) if len(steps) > 1 else steps[0] if steps else np.zeros(0)
        del steps
        return float(median(d, overwrite=True)) if d.size else None
