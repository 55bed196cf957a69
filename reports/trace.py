"""Chrome trace JSON (the Trace Event Format that ui.perfetto.dev and chrome://tracing open).

- one process per GPU ("GPU 0"), one thread per lane of reports.lanes (per worker; the
  worker's prep thread, which overlaps its lock wait and upload, on its own thread), a
  complete ("X") slice per phase; slices on one thread never overlap;
- synthesis intervals without a worker go to a "CPU synthesis" process, packed onto as
  few threads as their overlaps need; unattributed CPU work to a "CPU" process;
- counter ("C") tracks per GPU from samples: PCIe RX/TX (GB/s), SM activity (%), DRAM
  activity (%), utilization.gpu (%), memory used (MiB), power (W), SM clock (MHz): every
  figure the samples hold, so an nvidia-smi capture exports what analyze read from it;
- process_name / thread_name (and sort index) metadata ("M") events.

Times are whole microseconds from the first phase (or sample); the absolute start (epoch s) is
in the top-level "metadata". No parsing, no GPU.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.analysis.names import GPU_RANGE_PREFIX, RANGE_PREFIX
from gpuscope.reports.lanes import assign_lanes, factorize_phases
from gpuscope.reports.phase_style import style_for

SYNTH_PID = 10_000


def gpu_pid(gpu: int, rank: int | None = None) -> int:
    """The trace process of a GPU (`GPU g`: g + 1), or of one rank's use of it (`rank r, GPU g`,
    a trace of several ranks: 1000 + 64 r + g), below the CPU processes' SYNTH_PID."""
    return int(gpu) + 1 if rank is None else 1000 + 64 * int(rank) + int(gpu)

# The counter tracks of NVML samples: (track name, ((samples.csv column, arg key, scale,
# decimals), ...)).
SAMPLE_TRACKS = (
    ("PCIe GB/s", (("rx_gbs", "rx_gbs", 1.0, 4), ("tx_gbs", "tx_gbs", 1.0, 4))),
    ("SM active %", (("sm_active", "sm_active_pct", 100.0, 2),)),
    ("DRAM active %", (("dram_active", "dram_active_pct", 100.0, 2),)),
    ("utilization.gpu %", (("gpu_util_pct", "gpu_util_pct", 1.0, 2),)),
    ("memory used MiB", (("mem_used_mib", "mem_used_mib", 1.0, 2),)),
    ("power W", (("power_w", "power_w", 1.0, 2),)),
    ("SM clock MHz", (("sm_clock_mhz", "sm_clock_mhz", 1.0, 2),)),
)


def _us(t: float, t0: float) -> int:
    """Whole microseconds from t0 (epoch-second floats carry ~0.2 us of resolution anyway)."""
    return int(round((t - t0) * 1e6))


def _meta(kind: str, pid: int, name: str, tid: int | None = None, sort: int | None = None) -> list[dict]:
    ev: dict[str, Any] = {"name": kind, "ph": "M", "pid": pid, "args": {"name": name}}
    if tid is not None:
        ev["tid"] = tid
    out = [ev]
    if sort is not None:
        sk = "thread_sort_index" if tid is not None else "process_sort_index"
        s: dict[str, Any] = {"name": sk, "ph": "M", "pid": pid, "args": {"sort_index": sort}}
        if tid is not None:
            s["tid"] = tid
        out.append(s)
    return out


def trace_text(
    phases: pd.DataFrame | None,
    samples: pd.DataFrame | None = None,
    *,
    title: str = "gpuscope",
    metadata: dict[str, Any] | None = None,
    counters: pd.DataFrame | None = None,
    lane_noun: str = "worker",
) -> TraceText:
    """The trace, as the JSON text `export --perfetto` writes, made piece by piece when written
    (TraceText.chunks): a million phases or samples are never a million dicts nor one string.
    `counters`: a profiler trace's busy-fraction bins (TRACE_COUNTER_SCHEMA) as counter tracks;
    `lane_noun`: what the phases' `worker` column holds (worker, stream)."""
    phases = phases if phases is not None else pd.DataFrame(columns=["worker", "gpu", "partition", "phase", "t_start", "t_end"])
    phases = phases.dropna(subset=["t_start", "t_end"])
    have_samples = samples is not None and len(samples) > 0 and "t_wall" in samples
    have_counters = counters is not None and len(counters) > 0
    if not len(phases) and not have_samples and not have_counters:
        raise ValueError("nothing to export: no phase intervals and no samples")
    samples = samples if have_samples else None
    counters = counters if have_counters else None
    starts = [float(phases["t_start"].min())] if len(phases) else []
    if samples is not None:
        starts.append(float(samples["t_wall"].min()))
    if counters is not None:
        starts.append(float(counters["t_wall"].min()))
    out = _Events(t0=min(starts))
    out.lanes(phases, lane_noun)
    if samples is not None:
        out.sample_counters(samples)
    if counters is not None:
        out.busy_counters(counters)
    meta = {"title": title, "t0_epoch_s": out.t0, "generator": "gpuscope"}
    meta.update(metadata or {})
    return TraceText(parts=out.parts, metadata=meta, slices=out.n_slices, counter_events=out.n_counters)


def build_trace(
    phases: pd.DataFrame | None,
    samples: pd.DataFrame | None = None,
    *,
    title: str = "gpuscope",
    metadata: dict[str, Any] | None = None,
    counters: pd.DataFrame | None = None,
    lane_noun: str = "worker",
) -> dict[str, Any]:
    """The trace as a dict ({"traceEvents": [...], "displayTimeUnit": "ms", "metadata": {...}}):
    trace_text's JSON read back (one way to make the events; for tests and small traces)."""
    return trace_text(phases, samples, title=title, metadata=metadata, counters=counters,
                      lane_noun=lane_noun).to_dict()


# A part of the event list: one event's JSON text, or a block of events made when written.
Part = str | Callable[[], Iterator[str]]
BLOCK = 65_536  # rows formatted at a time when written (bounded memory, any size of input)


@dataclass
class TraceText:
    """The trace's JSON text, made when iterated: exactly json.dumps of the trace's dict."""

    parts: list[Part]
    metadata: dict[str, Any]
    slices: int           # complete ("X") events
    counter_events: int   # counter ("C") events

    def chunks(self) -> Iterator[str]:
        yield '{"traceEvents": ['
        first = True
        for part in self.parts:
            for text in ((part,) if isinstance(part, str) else part()):
                if text:
                    yield text if first else ", " + text
                    first = False
        yield '], "displayTimeUnit": "ms", "metadata": ' + json.dumps(self.metadata, allow_nan=False) + "}"

    def to_dict(self) -> dict[str, Any]:
        return json.loads("".join(self.chunks()))


def _us_of(t: np.ndarray, t0: float) -> np.ndarray:
    """_us over an array: the same figures (rint rounds half to even, as round does)."""
    return np.rint((t - t0) * 1e6).astype(np.int64)


class _Events:
    """The trace's events, in order, with each process and thread named once."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.parts: list[Part] = []
        self.n_slices = 0
        self.n_counters = 0
        self._named: set[tuple[int, int | None]] = set()
        self._threads: dict[int, int] = {}  # pid -> threads named (a count, not a scan of the events)

    def _add(self, events: list[dict]) -> None:
        self.parts.extend(json.dumps(ev, allow_nan=False) for ev in events)

    def name_process(self, pid: int, name: str, sort: int) -> None:
        if (pid, None) not in self._named:
            self._named.add((pid, None))
            self._add(_meta("process_name", pid, name, sort=sort))

    def name_thread(self, pid: int, tid: int, name: str) -> None:
        if (pid, tid) not in self._named:
            self._named.add((pid, tid))
            self._threads[pid] = self._threads.get(pid, 0) + 1
            self._add(_meta("thread_name", pid, name, tid=tid, sort=tid))

    def lanes(self, phases: pd.DataFrame, lane_noun: str) -> None:
        """One thread per lane (and one per lane's side row: a worker's prep thread, a stream's
        ranges as they ran on the GPU); one process per GPU / CPU group."""
        pids: dict[str, int] = {}
        for lane in assign_lanes(phases, noun=lane_noun):
            if lane.process not in pids:
                gpu = re.fullmatch(r"(?:rank \d+, )?GPU (\d+)", lane.process)
                if gpu:
                    pid = gpu_pid(int(gpu.group(1)), lane.rank)
                else:
                    pid = SYNTH_PID + len([p for p in pids if not re.fullmatch(r"(?:rank \d+, )?GPU \d+", p)])
                pids[lane.process] = pid
                self.name_process(pid, lane.process, sort=pid)
            pid = pids[lane.process]
            tid = 1 + self._threads.get(pid, 0)
            if len(lane.main):
                self.name_thread(pid, tid, lane.label)
                self.slices(lane.main, pid, tid)
                tid += 1
            if len(lane.side):
                ranges = lane.side["phase"].astype(str).str.startswith(GPU_RANGE_PREFIX).all()
                self.name_thread(pid, tid, f"{lane.label} {'ranges (on the GPU)' if ranges else 'prep'}")
                self.slices(lane.side, pid, tid)

    def slices(self, rows: pd.DataFrame, pid: int, tid: int) -> None:
        """A complete ("X") slice per phase interval: one text per distinct (phase, partition),
        the times as whole-microsecond columns, each block's events formatted when written."""
        if not len(rows):
            return
        ts = _us_of(rows["t_start"].to_numpy(dtype="float64"), self.t0)
        dur = np.maximum(0, _us_of(rows["t_end"].to_numpy(dtype="float64"), self.t0) - ts)
        part = rows["partition"].to_numpy(dtype="int64")
        phase_codes, names = factorize_phases(rows["phase"], use_na_sentinel=False)
        pairs = phase_codes.astype(np.int64) << 32 | (np.where(part >= 0, part, -1) + 1)  # (phase, partition)
        codes, uniq = pd.factorize(pairs)
        heads, tails = [], []
        for pair in uniq.tolist():
            name, cat, args = _slice_text(str(names[pair >> 32]), (pair & 0xFFFFFFFF) - 1)
            heads.append(f'{{"name": {name}, "cat": {cat}, "ph": "X", "ts": ')
            tails.append(f', "pid": {pid}, "tid": {tid}, "args": {args}}}')
        self.n_slices += len(rows)
        text = _SliceText(heads, tails) if len(codes) and ts.min() >= 0 else None  # (ts >= 0: from the first start)

        def block() -> Iterator[str]:
            for lo in range(0, len(codes), BLOCK):
                sl = slice(lo, lo + BLOCK)
                yield (text.join(codes[sl], ts[sl], dur[sl]) if text is not None else
                       ", ".join(_slice_events(heads, tails, codes[sl].tolist(), ts[sl].tolist(), dur[sl].tolist())))
        self.parts.append(block)

    def sample_counters(self, samples: pd.DataFrame) -> None:
        """Counter ("C") tracks per GPU from NVML samples (SAMPLE_TRACKS), one event per row
        that has the track's figures and changed them (a counter holds its value until the next
        event: a repeat draws nothing; the track's last row is kept, so it reaches the end of
        the samples), a row's tracks together, in SAMPLE_TRACKS' order."""
        samples = samples[pd.to_numeric(samples["t_wall"], errors="coerce").notna()]
        for gpu, g in samples.sort_values("t_wall").groupby("gpu", sort=True):
            pid = int(gpu) + 1
            self.name_process(pid, f"GPU {int(gpu)}", sort=pid)
            tw = g["t_wall"].to_numpy(float)
            tracks = []
            for track, fields in SAMPLE_TRACKS:
                cols = [(key, pd.to_numeric(g[col], errors="coerce").to_numpy(float), scale, nd)
                        for col, key, scale, nd in fields if col in g]
                some = np.zeros(len(g), dtype=bool)
                for _, v, _, _ in cols:
                    some |= np.isfinite(v)
                some = _changed(some, [v for _, v, _, _ in cols])
                if some.any():
                    tracks.append((f'{{"name": {json.dumps(track)}, "ph": "C", "ts": ', f', "pid": {pid}, "args": {{', cols,
                                   some))
                    self.n_counters += int(some.sum())
            if tracks:
                self.parts.append(partial(_counter_blocks, tw, self.t0, tracks))

    def busy_counters(self, counters: pd.DataFrame) -> None:
        """Counter tracks per GPU from a profiler trace's busy-fraction bins (and copy rates);
        ranks that share a GPU each get their own track."""
        several = "rank" in counters and counters["rank"].nunique() > 1
        keys = ["gpu", "rank"] if several else ["gpu"]
        for key, g in counters.sort_values("t_wall").groupby(keys, sort=True):
            gpu = int(key[0] if isinstance(key, tuple) else key)
            rank = int(key[1]) if several else None
            pid = gpu_pid(gpu, rank)  # a rank's busy track in the rank's own process, beside its streams
            self.name_process(pid, f"rank {rank}, GPU {gpu}" if several else f"GPU {gpu}", sort=pid)
            track = "GPU busy (profiler trace)"
            events = []
            for r in g.itertuples(index=False):
                args = {"busy_pct": round(float(r.busy_fraction) * 100, 2)}
                if math.isfinite(r.htod_gbs) or math.isfinite(r.dtoh_gbs):
                    args.update(htod_gbs=round(float(r.htod_gbs), 4) if math.isfinite(r.htod_gbs) else 0.0,
                                dtoh_gbs=round(float(r.dtoh_gbs), 4) if math.isfinite(r.dtoh_gbs) else 0.0)
                events.append({"name": track, "ph": "C", "ts": _us(float(r.t_wall), self.t0), "pid": pid,
                               "args": args})
            self._add(events)
            self.n_counters += len(events)


def _slice_events(heads: list[str], tails: list[str], c: list[int], t: list[int], d: list[int]) -> list[str]:
    """The slices' event texts, f'{heads[c]}{t}, "dur": {d}{tails[c]}' each, four to a string
    (joined by ", " as the list is): a quarter of the loop's turns, ~15-20% of formatting a
    million slices, the same text."""
    m = len(c) // 4 * 4
    mids = [tail + ", " for tail in tails]
    out = [f'{heads[c1]}{t1}, "dur": {d1}{mids[c1]}{heads[c2]}{t2}, "dur": {d2}{mids[c2]}'
           f'{heads[c3]}{t3}, "dur": {d3}{mids[c3]}{heads[c4]}{t4}, "dur": {d4}{tails[c4]}'
           for c1, t1, d1, c2, t2, d2, c3, t3, d3, c4, t4, d4 in
           zip(c[0:m:4], t[0:m:4], d[0:m:4], c[1:m:4], t[1:m:4], d[1:m:4],
               c[2:m:4], t[2:m:4], d[2:m:4], c[3:m:4], t[3:m:4], d[3:m:4], strict=True)]
    out += [f'{heads[k]}{x}, "dur": {y}{tails[k]}' for k, x, y in zip(c[m:], t[m:], d[m:], strict=True)]
    return out


class _SliceText:
    """The slices' text as _slice_events joins it (`heads[c]`, the start, `, "dur": `, the
    duration, `tails[c]`, events joined by ", "), made by numpy as bytes instead of formatted
    event by event: each event a row of a byte matrix (its head and tail gathered by code from a
    table, its two numbers' digits from tables of four digits), the padding of the shorter heads,
    tails and numbers zero bytes, dropped at the end (bytes.replace: JSON text has no NUL). The
    same text; ~1/3 of the instructions of the f-strings (issue 31: the 1.6M slices of a
    10^6-line log were ~0.8 CPU-s of its export). Times and durations >= 0 (whole us from t0)."""

    MID = np.frombuffer(b', "dur": ', dtype=np.uint8)

    def __init__(self, heads: list[str], tails: list[str]) -> None:
        self.heads, self.tails = _byte_table(heads), _byte_table([t + ", " for t in tails])

    def join(self, c: np.ndarray, t: np.ndarray, d: np.ndarray) -> str:
        pieces = (np.take(self.heads, c, axis=0), _digits(t), self.MID, _digits(d), np.take(self.tails, c, axis=0))
        rows = np.empty((len(c), sum(p.shape[-1] for p in pieces)), dtype=np.uint8)
        at = 0
        for p in pieces:
            rows[:, at:at + p.shape[-1]] = p
            at += p.shape[-1]
        return rows.tobytes().replace(b"\0", b"")[:-2].decode("ascii")  # (the last event's ", " cut)


def _byte_table(texts: list[str]) -> np.ndarray:
    """ASCII texts as the rows of a uint8 matrix, each padded with zero bytes to the longest."""
    raw = [t.encode("ascii") for t in texts]
    out = np.zeros((len(raw), max(map(len, raw))), dtype=np.uint8)
    for row, b in zip(out, raw, strict=True):
        row[:len(b)] = np.frombuffer(b, dtype=np.uint8)
    return out


@cache
def _four_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0..9999 as four ASCII digits in a little-endian uint32 each: all four ('0042'); leading
    zeros as zero bytes ('\\0\\042'), 0 all zero bytes; the same, 0 as '\\0\\0\\00'."""
    i = np.arange(10_000, dtype=np.int64)
    full, lead = np.zeros(10_000, dtype=np.int64), np.zeros(10_000, dtype=np.int64)
    for k in range(4):  # (the first character in the lowest byte)
        digit = (i // 10 ** (3 - k)) % 10 + 48
        full |= digit << (8 * k)
        lead |= (digit * (i >= 10 ** (3 - k))) << (8 * k)
    return full.astype("<u4"), lead.astype("<u4"), (lead + (i == 0) * (48 << 24)).astype("<u4")


def _digits(v: np.ndarray) -> np.ndarray:
    """(len(v), width) uint8: each v >= 0 in decimal, right-aligned to the widest, its leading
    positions zero bytes."""
    full, lead, lead0 = _four_digits()
    width = len(str(int(v.max()))) if len(v) else 1
    chunks = -(-width // 4)
    out = np.empty((len(v), chunks), dtype="<u4")
    rest, above = v.astype(np.int64), None  # above: some chunk before this one is not 0
    for k in range(chunks):
        p = 10 ** (4 * (chunks - 1 - k))
        q = rest // p
        rest = rest - q * p
        first = np.take(lead0 if k == chunks - 1 else lead, q)
        out[:, k] = first if above is None else np.where(above, np.take(full, q), first)
        above = q > 0 if above is None else above | (q > 0)
    return out.view(np.uint8)[:, 4 * chunks - width:]


def _changed(some: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """Of the rows `some`, those whose figures (`values`, bit for bit: NaN, -0.0) differ from
    the previous such row's, and the last: a counter track's events (issue 31: a day of
    samples at 50 Hz is millions of events, most of them repeating a power, clock or idle
    figure)."""
    rows = np.flatnonzero(some)
    if len(rows) < 3:
        return some
    same = np.ones(len(rows) - 1, dtype=bool)
    for v in values:
        bits = v[rows].view(np.int64)
        same &= bits[1:] == bits[:-1]
    same[-1] = False  # (the last row stays)
    out = some.copy()
    out[rows[1:][same]] = False
    return out


def _slice_text(phase: str, partition: int) -> tuple[str, str, str]:
    """A phase's slice name, category and args, as JSON text."""
    st = style_for(phase)
    args: dict[str, Any] = {"phase": phase}
    if partition >= 0:
        args["partition"] = partition
    if phase.startswith(RANGE_PREFIX):  # a user's record_function / NVTX range: its whole name
        slice_name, cat = phase[len(RANGE_PREFIX):], "user_annotation"
    elif phase.startswith(GPU_RANGE_PREFIX):  # the same range as it ran on a stream
        slice_name, cat = phase[len(GPU_RANGE_PREFIX):], "gpu_user_annotation"
    else:
        slice_name, cat = (st.label if st.group != "other" else phase), st.group
    return json.dumps(slice_name), json.dumps(cat), json.dumps(args)


def _figures(v: np.ndarray, scale: float, nd: int) -> np.ndarray:
    """round(v * scale, nd) as JSON writes it (repr), each distinct value formatted once;
    an object array, None where v is not finite."""
    out = np.full(len(v), None, dtype=object)
    ok = np.isfinite(v)
    if ok.any():
        x = v[ok] * scale if scale != 1.0 else v[ok]
        bits, inverse = np.unique(x.view(np.int64), return_inverse=True)  # (bits: -0.0 stays -0.0)
        vals = bits.view(np.float64)
        if nd >= 1 and float(np.abs(vals).max()) < 1e9:
            # '%.{nd}f' rounds the exact binary value as round() does; under 1e9 its digits, trailing
            # zeros cut, are round()'s repr (fixed notation: a non-zero figure is at least 10**-nd)
            fixed = [(f"%.{nd}f" % f).rstrip("0") for f in vals.tolist()]
            text = np.array([t + "0" if t[-1] == "." else t for t in fixed], dtype=object)
        else:
            text = np.array([repr(round(f, nd)) for f in vals.tolist()], dtype=object)
        out[ok] = text[inverse.ravel()]
    return out


def _counter_blocks(tw: np.ndarray, t0: float, tracks: list) -> Iterator[str]:
    """The counter events of one GPU's samples, BLOCK rows at a time: per row, each track
    whose figures it has (`tracks`: (text before ts, text before the args, columns, the rows
    that have any of its figures))."""
    for lo in range(0, len(tw), BLOCK):
        sl = slice(lo, lo + BLOCK)
        stamps = _us_of(tw[sl], t0)
        grid = np.full((len(stamps), len(tracks)), None, dtype=object)  # (row, track): its event
        for k, (head, mid, cols, some) in enumerate(tracks):
            rows = np.flatnonzero(some[sl])
            if not rows.size:
                continue
            args: list[str | None] = [None] * rows.size
            for key, v, scale, nd in cols:  # '"key": figure' pieces joined by ", " where a row has them
                pre = f'"{key}": '
                args = [a if f is None else (pre + f if a is None else a + ", " + pre + f)
                        for a, f in zip(args, _figures(v[sl][rows], scale, nd).tolist(), strict=True)]
            grid[rows, k] = [f"{head}{t}{mid}{a}}}}}" for t, a in zip(stamps[rows].tolist(), args, strict=True)]
        flat = grid.ravel()
        yield ", ".join(flat[flat != None].tolist())  # noqa: E711 (elementwise)
