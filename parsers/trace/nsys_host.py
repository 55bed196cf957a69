"""An Nsight Systems export's host events: the few kept as rows, the many summarised. Pure.

An export of 10,000,000 kernels holds ~65M host events (48.8M emit_nvtx operator ranges, 16.9M
runtime calls): as rows, 3.3 GB. What the analysis reads of them (parsers/trace/host_summary.py):

- kept as rows (TraceFrames.host; picked in SQL): NVTX ranges that are not emit_nvtx's operator
  ranges (phases), synchronising and allocating runtime/driver calls (their StringIds ids matched
  once by gpuscope.schemas.SYNC_RE / ALLOC_RE), operators named like a data loader, a collective
  or a read-back (gpuscope.schemas.kept_operator);
- read once, a chunk at a time, never held: every runtime/driver call and NVTX range's process,
  start and end, for each rank's span and the merged cover of its traced host work (operators,
  runtime/driver calls: the union, built by merging chunk after chunk);
- looked up in SQL when the analysis asks (a fresh read-only connection each time): the first
  call carrying a correlation id (a gap's next launch, a copy's issuing call), the calls a
  thread made inside a phase's ranges, the events across the longest gaps, and the median
  interval between one thread's kernel launches (lag() over each thread's launches).

emit_nvtx's ranges ("aten::mm, seq = 12, op_id = 345") are told apart in SQL by their canonical
form (OP_CLASS: 1); a text that holds "op_id" in another form (2) is read and decided by the
regular expression, so the split is the regular expression's exactly.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.allocator import give_back
from gpuscope.arrays import distinct
from gpuscope.coverage import covered_lengths
from gpuscope.parsers.trace.host_summary import Chunks, Cover, HostSummary, Launches, Merged, Spans
from gpuscope.parsers.trace.nsys_columns import (
    TIMES,
    Stream,
    categorical,
    constant,
    iter_chunks,
    read_table,
)
from gpuscope.parsers.trace.nvtx_text import (
    EMIT_NVTX,
    by_text,
    decode_key,
    nvtx_class,
    operator,
    range_key,
)
from gpuscope.schemas import (
    ALLOC_RE,
    SYNC_RE,
    TRACE_HOST_SCHEMA,
    kept_operator,
    typed_frame,
)

RUNTIME_T, DRIVER_T, NVTX_T = "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER", "NVTX_EVENTS"
CALL_TABLES = ((RUNTIME_T, "cuda_runtime"), (DRIVER_T, "cuda_driver"))
ID_MASK = 0xFFFFFF
VERSION_SUFFIX = re.compile(r"_v\d+$")
LAUNCH = "LaunchKernel"


class _Spans:
    def __init__(self) -> None:
        self.v: dict[int, list[float]] = {}

    def add(self, key: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        keys = distinct(key)
        for k in keys.tolist():
            sel = slice(None) if keys.size == 1 else key == k
            lo, hi, end = float(s[sel].min()), float(s[sel].max()), float(e[sel].max())
            got = self.v.get(k)
            self.v[k] = [lo, hi, end] if got is None else [min(got[0], lo), max(got[1], hi), max(got[2], end)]


def host_part(x: dict[str, np.ndarray], cat: str, names: pd.Categorical) -> dict[str, Any]:
    """Kept rows as the host frame's columns (`rank` holding the process key until ranks are known)."""
    gtid = x["gtid"]
    return {
        "rank": gtid >> 24, "pid": (gtid >> 24) & ID_MASK, "tid": gtid & ID_MASK, "cat": constant(cat, len(gtid)),
        "name": names, "ts_us": x["start"] / 1e3, "dur_us": (x["end"] - x["start"]) / 1e3,
        "correlation": x.get("correlation", np.full(len(gtid), -1, dtype=np.int64)),
    }


def _times(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in us as the frames compute them: start / 1e3, start / 1e3 + (end - start) / 1e3."""
    s = block[:, 1] / 1e3
    return s, s + (block[:, 2] - block[:, 1]) / 1e3


class NsysHost:
    """The host side of one export, read by `read` with the reader's connection and SQL pieces;
    `summary` answers the analysis's questions afterwards (HostSummary)."""

    def __init__(self, reader: Any) -> None:
        self.r = reader  # nsys_sqlite._Reader: con, tables, strings, sub(), streams(), notes
        self.spans, self.cover = _Spans(), Cover()
        self.calls_pkeys: set[int] = set()
        self.counts: dict[str, int] = {}
        self.sql: dict[str, dict[str, str]] = {}
        self.names: dict[str, dict[int, str]] = {}  # table -> nameId -> name (as the frames spell it)
        self.blocks: dict[int, Merged] = {}
        self.chunks: dict[str, Chunks] = {}  # table -> where its rows lie in time (NsysSummary.across)
        self.launches = Launches()  # each thread's kernel launch starts (NsysSummary.launch_interval_us)
        self.interval: float | None = None  # the median launch interval (NsysSummary.launch_interval_us)

    def read(self) -> list[dict[str, Any]]:
        """Stream every host table once, keep the few rows: the host parts (nsys_sqlite._host_part).
        The tables are streamed together, their chunks in time order across them (_Reader.streams):
        the cover then grows at its end (read one table after another, the NVTX ranges started from
        the capture's beginning again and each merge reached back over most of the calls' blocks:
        at 10M kernels the host pass's peak)."""
        r = self.r
        specs, finish = [], []
        for table, cat in CALL_TABLES:
            if table in r.tables:
                sp, fin = self._calls(table, cat)
                specs.append(sp)
                finish.append(fin)
        if NVTX_T in r.tables:
            sp, fin = self._nvtx()
            specs.append(sp)
            finish.append(fin)
        got = r.streams(specs)
        parts: list[dict[str, Any]] = []
        for fin, n in zip(finish, got, strict=True):
            parts += fin(n)
        # the last merge now, before the GPU frame is built (done later, its transient sat on top of
        # the GPU frame's: at 10M kernels the read's peak was 115 MiB higher)
        self.blocks = self.cover.done()
        self.interval = self.launches.median_interval()
        give_back()  # (the chunks' arrays, freed: not what the GPU tables' columns will reuse)
        return parts

    def _calls(self, table: str, cat: str) -> tuple[Stream, Any]:
        """A call table's stream (each chunk into the spans and the cover) and what follows it: its
        synchronising and allocating calls read as rows (finish(rows streamed) -> the host parts)."""
        r = self.r
        q = self.sql[table] = {
            "valid": r.sub(table, TIMES[0]), "gtid": r.sub(table, "ifnull({globalTid}, 0)"),
            "corr": r.sub(table, "ifnull({correlationId}, -1)"), "name": r.sub(table, "ifnull({nameId}, -1)"),
            "start": r.sub(table, "{start}"), "end": r.sub(table, "{end}")}
        # per row: process * 2 + (carries a correlation id), start, end (each column costs a
        # number printed per row: the flag rides with the process key, < 2**40); a kernel launch's
        # thread id (-1 for other calls), for the launch interval
        ints = {"pkey": f"({q['gtid']} >> 24) * 2 + ({q['corr']} >= 0)", "start": q["start"], "end": q["end"]}
        launch = [i for i, n in self._call_names(table).items() if LAUNCH in n]
        if launch:
            ints["launch"] = f"CASE WHEN {q['name']} IN ({', '.join(map(str, launch))}) THEN {q['gtid']} & {ID_MASK} " \
                             "ELSE -1 END"
        chunks = self.chunks[table] = Chunks()

        def on_calls(block: np.ndarray, _: Any) -> None:
            s, e = _times(block)
            chunks.add(s, e)
            key = block[:, 0] >> 1
            self.spans.add(key, s, e)
            self.cover.add(key, s, e)
            self.calls_pkeys.update(distinct(key[(block[:, 0] & 1) == 1]).tolist())
            if launch:
                self.launches.add(key, block[:, 3], s)

        def finish(n: int) -> list[dict[str, Any]]:
            self.counts[cat] = n
            names = self._call_names(table)
            picked = [i for i, n in names.items() if SYNC_RE.search(n) or ALLOC_RE.search(n)]
            if not picked:
                return []
            c = read_table(r.con, table, {"gtid": q["gtid"], "start": q["start"], "end": q["end"],
                                          "correlation": q["corr"], "name": q["name"]},
                           f"{q['name']} IN ({', '.join(map(str, picked))}) AND ({q['valid']})",  # (the rare test first)
                           rows=n)  # (of the n rows the pass read)
            codes, uniq = pd.factorize(c.ints["name"], sort=False)
            return [host_part(c.ints, cat, categorical(codes, [names.get(int(u), "<unnamed call>") for u in uniq]))]

        return Stream(table, ints, [TIMES], on_calls, spans=chunks.spans), finish

    def _call_names(self, table: str) -> dict[int, str]:
        """nameId -> name without the `_v3020` ABI suffix, for every id StringIds holds (both call
        tables name their calls through it)."""
        if table not in self.names:
            if not self.names and "StringIds" in self.r.tables:
                got = {int(i): VERSION_SUFFIX.sub("", str(v)) for i, v in
                       self.r.con.execute("SELECT id, value FROM StringIds WHERE typeof(id) = 'integer'")}
            else:
                got = next(iter(self.names.values()), {})
            self.names[table] = got
        return self.names[table]

    def _nvtx(self) -> tuple[Stream, Any]:
        """The NVTX table's stream (operator ranges into the cover, the rows to keep picked by rowid)
        and what follows it: the kept rows read, the other form's operators (finish(rows) -> parts)."""
        r = self.r
        kept, text, expected = r.nvtx_ranges()  # (ranges with an end, their text's SQL, how many)
        t = r.sub(NVTX_T, text)
        q = self.sql[NVTX_T] = {"valid": r.sub(NVTX_T, TIMES[0]), "where": kept, "text": t,
                                "gtid": r.sub(NVTX_T, "ifnull({globalTid}, 0)"), "start": r.sub(NVTX_T, "{start}"),
                                "end": r.sub(NVTX_T, "{end}")}
        raw = r.sub(NVTX_T, "{text}")
        cls = by_text(nvtx_class, raw, t)
        canonical, picked = [0], []
        decided: dict[object, tuple[int, bool]] = {}  # a range_key -> (class, kept: not an operator or one kept_operator names)

        chunks = self.chunks[NVTX_T] = Chunks()

        def decide(k: object) -> tuple[int, bool]:
            c, name = decode_key(k)
            return c, c != 1 or kept_operator(str(name))

        def on_ranges(block: np.ndarray, keys: np.ndarray) -> None:
            s, e = _times(block)
            chunks.add(s, e)
            key = block[:, 0]
            self.spans.add(key, s, e)
            # class and kept decided once per distinct key (a few: range_key)
            codes, uniq = pd.factorize(keys, use_na_sentinel=False)
            got = np.array([decided[u] if u in decided else decided.setdefault(u, decide(u)) for u in uniq],
                           dtype=np.int64).reshape(-1, 2)
            op = got[codes, 0] == 1
            canonical[0] += int(op.sum())
            if op.any():
                self.cover.add(key[op], s[op], e[op])
            keep = got[codes, 1].astype(bool)
            if keep.any():
                picked.append(block[keep, 3])

        # per row: the process key (< 2**40), start, end, rowid; the range's key (nvtx_text.range_key)
        sp = Stream(NVTX_T, {"pkey": f"{q['gtid']} >> 24", "start": q["start"], "end": q["end"],
                             "rowid": "rowid"}, [TIMES], on_ranges, where=kept, expected=expected, spans=chunks.spans,
                    text=by_text(range_key, raw, t))
        return sp, lambda _: self._nvtx_kept(picked, canonical[0], q, cls, t)

    def _nvtx_kept(self, picked: list[np.ndarray], canonical: int, q: dict[str, str], cls: str, t: str
                   ) -> list[dict[str, Any]]:
        r = self.r
        # the rows kept (annotations, the operators kept_operator names) and those of another form
        r.con.execute("CREATE TEMP TABLE nsys_kept(r INTEGER PRIMARY KEY)")
        r.con.executemany("INSERT INTO nsys_kept VALUES (?)", ((int(x),) for p in picked for x in p))
        c = read_table(r.con, NVTX_T, {"gtid": q["gtid"], "start": q["start"], "end": q["end"], "class": cls},
                       "rowid IN (SELECT r FROM temp.nsys_kept)", t, rows=sum(len(p) for p in picked))
        r.con.execute("DROP TABLE temp.nsys_kept")
        names = c.names("<unnamed range>")
        cats = [str(x) for x in names.categories]
        is_op_cat = np.array([bool(EMIT_NVTX.match(x)) for x in cats], dtype=bool)
        keep_cat = np.array([not o or kept_operator(operator(x)) for x, o in zip(cats, is_op_cat, strict=True)],
                            dtype=bool)
        codes = np.asarray(names.codes)
        is_op = is_op_cat[codes] if cats else np.zeros(len(codes), dtype=bool)
        other_form = is_op & (c.ints["class"] == 2)  # operators only these rows tell (not streamed as such)
        if other_form.any():
            s, e = _times(np.stack([c.ints["gtid"][other_form] >> 24, c.ints["start"][other_form],
                                    c.ints["end"][other_form]], axis=1))
            self.cover.add(c.ints["gtid"][other_form] >> 24, s, e)
        self.counts["cpu_op"] = canonical + int(other_form.sum())
        self.counts["user_annotation"] = int((~is_op).sum())
        keep = keep_cat[codes] if cats else np.zeros(len(codes), dtype=bool)
        out = []
        for cat, pick in (("cpu_op", is_op & keep), ("user_annotation", ~is_op)):
            if not pick.any():
                continue
            sub = names[pick]
            if cat == "cpu_op":
                sub = categorical(np.asarray(sub.codes), [operator(str(x)) for x in sub.categories])
            out.append(host_part({k: v[pick] for k, v in c.ints.items()}, cat, sub))
        return out

    def pkeys(self) -> set[int]:
        return set(self.spans.v)

    def summary(self, path: Path, ranks: dict[int, int]) -> NsysSummary:
        cover = self.blocks
        return NsysSummary(path, ranks, {ranks[k]: (v[0], v[1], v[2]) for k, v in self.spans.v.items()},
                           {ranks[k]: v for k, v in cover.items()}, {ranks[k] for k in self.calls_pkeys},
                           self.sql, self.names, set(self.r.tables), self.chunks, self.interval)


class NsysSummary(HostSummary):
    """HostSummary of an export: spans and cover read with the rows, the rest looked up in SQL."""

    def __init__(self, path: Path, ranks: dict[int, int], spans: Spans, cover: dict[int, Merged], calls: set[int],
                 sql: dict[str, dict[str, str]], names: dict[str, dict[int, str]], tables: set[str],
                 chunks: dict[str, Chunks] | None = None, interval: float | None = None) -> None:
        self.path, self.pkey = path, {rank: k for k, rank in ranks.items()}
        self.chunks = chunks or {}
        self._spans, self._calls = spans, calls
        self._cover: dict[int, Merged] | None = cover
        self._given: dict[tuple[int, bytes, bytes], np.ndarray] = {}  # (rank, windows) -> work_cover's answer
        self.sql, self.names, self.tables = sql, names, tables
        self._interval = interval

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)

    def spans(self) -> Spans:
        return dict(self._spans)

    def work_cover(self, rank: int, qs: np.ndarray, qe: np.ndarray) -> np.ndarray:
        key = (rank, np.asarray(qs, dtype="float64").tobytes(), np.asarray(qe, dtype="float64").tobytes())
        if key not in self._given:
            if self._cover is None:
                raise RuntimeError("the host cover was released (release_work): asked of other windows")
            self._given[key] = covered_lengths(qs, qe, *self._cover.get(rank, (np.zeros(0), np.zeros(0))))
        return self._given[key].copy()

    def release_work(self) -> None:
        self._cover = None  # (the windows asked stay answered: an analysis of these frames again asks them)

    def has_calls(self, rank: int) -> bool:
        return rank in self._calls

    def _call_tables(self) -> list[tuple[str, dict[str, str]]]:
        return [(t, self.sql[t]) for t, _ in CALL_TABLES if t in self.sql]

    def launch_interval_us(self) -> float | None:
        return self._interval  # (read with the calls: host_summary.Launches)

    def calls(self, rank: int, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        corr = np.asarray(correlation, dtype=np.int64)
        ts, dur = np.full(corr.size, np.nan), np.full(corr.size, np.nan)
        want = distinct(corr[corr >= 0])
        if not want.size or rank not in self.pkey:
            return ts, dur
        con = self._connect()
        got: list[np.ndarray] = []  # (the rows a batch at a time as int64 arrays: as Python tuples, ~400 bytes a copy)
        try:
            con.execute("CREATE TEMP TABLE want(c INTEGER PRIMARY KEY)")
            con.executemany("INSERT INTO want VALUES (?)", ((int(c),) for c in want.tolist()))
            for t, q in self._call_tables():
                # (the id's test first: SQLite tests the terms in their order, and most rows fail it:
                # the scan took ~1.8x as long with the time checks first)
                cur = con.execute(f"SELECT {q['corr']}, {q['start']}, {q['end']} FROM {t} WHERE {q['corr']} IN "
                                  f"(SELECT c FROM temp.want) AND ({q['valid']}) AND {q['gtid']} >> 24 = ? ORDER BY rowid",
                                  (self.pkey[rank],))
                while rows := cur.fetchmany(1 << 16):
                    got.append(np.array(rows, dtype=np.int64))
        finally:
            con.close()
        if not got:
            return ts, dur
        a = np.concatenate(got)
        s = a[:, 1] / 1e3
        order = np.argsort(s, kind="stable")  # (the first call by start; runtime before driver, then rowid)
        c_sorted = a[order, 0]
        uniq, first = np.unique(c_sorted, return_index=True)
        k = np.searchsorted(uniq, corr)
        ok = (k < uniq.size) & (uniq[np.minimum(k, uniq.size - 1)] == corr) & (corr >= 0)
        row = order[first[k[ok]]]
        ts[ok] = s[row]
        dur[ok] = (a[row, 2] - a[row, 1]) / 1e3
        return ts, dur

    def launched(self, rank: int, pid: int, tid: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        if rank not in self.pkey or not len(starts):
            return np.zeros(0, dtype=np.int64)
        gtid = (self.pkey[rank] << 24) | tid
        con = self._connect()
        out: list[np.ndarray] = []
        try:
            con.execute("CREATE TEMP TABLE rg(s REAL PRIMARY KEY, e REAL)")
            con.executemany("INSERT INTO rg VALUES (?, ?)", zip(np.asarray(starts, dtype=float).tolist(),
                                                                np.asarray(ends, dtype=float).tolist(), strict=True))
            for t, q in self._call_tables():
                at = f"{q['start']} / 1e3"
                where = (f"{q['gtid']} = {int(gtid)} AND ({q['valid']}) AND {q['corr']} >= 0 AND "
                         f"(SELECT e FROM temp.rg WHERE s <= {at} ORDER BY s DESC LIMIT 1) >= {at}")
                out += [b[:, 0].copy() for b, _ in iter_chunks(con, t, {"corr": q["corr"]}, where)]
        finally:
            con.close()
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def across(self, rank: int, windows: list[tuple[float, float]]) -> list[pd.DataFrame]:
        """The rank's host events overlapping each window: one pass over each table for them all,
        ordered as the rows would be (by start; runtime, driver, operators, annotations; rowid)."""
        if rank not in self.pkey or not windows:
            return [typed_frame({}, TRACE_HOST_SCHEMA) for _ in windows]
        cols: dict[str, list] = {k: [] for k in ("gtid", "start", "end", "corr", "cat", "name", "part", "rowid")}
        con = self._connect()
        try:
            for part, (t, cat) in enumerate(CALL_TABLES + ((NVTX_T, ""),)):
                q = self.sql.get(t)
                if q is None:
                    continue
                at, until = f"{q['start']} / 1e3", f"{q['start']} / 1e3 + ({q['end']} - {q['start']}) / 1e3"
                # (a microsecond wider than the windows: the rows' own test below decides)
                over = " OR ".join(f"({at} < ? + 1 AND {until} > ? - 1)" for _ in windows)
                base = f"({q['where']}) AND " if "where" in q else ""
                what = q["text"] if t == NVTX_T else q["name"]
                sql = (f"SELECT {q['gtid']}, {q['start']}, {q['end']}, {q.get('corr', '-1')}, {what}, rowid FROM {t} "
                       f"WHERE rowid BETWEEN ? AND ? AND {base}({q['valid']}) AND {q['gtid']} >> 24 = ? AND ({over})")
                args = (self.pkey[rank], *[float(x) for w in windows for x in (w[1], w[0])])
                # only the chunks whose rows reach a window (2 us wider than the query's own test)
                chunks = self.chunks[t].ranges(windows, 2.0) if t in self.chunks else [(0, 2**63 - 1)]
                rows = [row for a, b in chunks for row in con.execute(sql, (a, b, *args))]
                for g, s, e, c, w, rid in rows:
                    if t == NVTX_T:
                        name = "<unnamed range>" if w is None else str(w)
                        op = bool(EMIT_NVTX.match(name))
                        cat_, name, p = ("cpu_op", operator(name), 2) if op else ("user_annotation", name, 3)
                    else:
                        cat_, p = cat, part
                        name = self.names.get(t, {}).get(int(w), "<unnamed call>") if w is not None else "<unnamed call>"
                    for k, v in zip(cols, (g, s, e, c, cat_, name, p, rid), strict=True):
                        cols[k].append(v)
        finally:
            con.close()
        gtid = np.asarray(cols["gtid"], dtype=np.int64)
        start = np.asarray(cols["start"], dtype=np.int64)
        ts = start / 1e3
        dur = (np.asarray(cols["end"], dtype=np.int64) - start) / 1e3
        order = np.lexsort((np.asarray(cols["rowid"]), np.asarray(cols["part"]), ts)) if gtid.size else np.zeros(0, int)
        frame = typed_frame({"rank": np.full(gtid.size, rank)[order], "pid": ((gtid >> 24) & ID_MASK)[order],
                             "tid": (gtid & ID_MASK)[order], "cat": np.asarray(cols["cat"], dtype=object)[order],
                             "name": np.asarray(cols["name"], dtype=object)[order], "ts_us": ts[order],
                             "dur_us": dur[order], "correlation": np.asarray(cols["corr"], dtype=np.int64)[order]},
                            TRACE_HOST_SCHEMA)
        s = frame["ts_us"].to_numpy(dtype="float64")
        e = s + frame["dur_us"].to_numpy(dtype="float64")
        return [frame.iloc[np.flatnonzero((s < end) & (e > start))] for start, end in windows]

