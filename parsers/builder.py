"""Column accumulators: the parsers append plain Python values to lists and the frames are
built once at the end from columns (never row by row)."""

from __future__ import annotations

import math

import numpy as np

from parsers.model import (
    COMPONENT_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
    frame,
)

NAN = math.nan
SKIP_TEXT = 120


class Components:
    """Per-line attributes are stored once per line and repeated over the line's values."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.values: list[float] = []
        self.count: list[int] = []
        self.line: list[int] = []
        self.ts: list[float] = []
        self.record: list[int] = []
        self.gpu: list[int] = []
        self.source: list[str] = []
        self.worker: list[int] = []
        self.partition: list[int] = []

    def add(self, line, ts, record, gpu, source, worker, partition, names, values) -> None:
        self.names += names
        self.values += values
        self.count.append(len(names))
        self.line.append(line)
        self.ts.append(ts)
        self.record.append(record)
        self.gpu.append(gpu)
        self.source.append(source)
        self.worker.append(worker)
        self.partition.append(partition)

    def set_record(self, index: int, record: int) -> None:
        """Re-tag the index-th added line (kv format: records known only afterwards)."""
        self.record[index] = record

    def frame(self):
        counts = np.asarray(self.count, dtype=np.int64)

        def rep(col, dtype):
            return np.repeat(np.asarray(col, dtype=dtype), counts)

        src = np.repeat(np.asarray(self.source, dtype=object), counts)
        return frame(
            {
                "record": rep(self.record, np.int64),
                "gpu": rep(self.gpu, np.int64),
                "component": self.names,
                "value_ms": np.asarray(self.values, dtype=np.float64),
                "line": rep(self.line, np.int64),
                "ts": rep(self.ts, np.float64),
                "source": src,
                "worker": rep(self.worker, np.int64),
                "partition": rep(self.partition, np.int64),
            },
            COMPONENT_COLUMNS,
        )


class Records:
    def __init__(self) -> None:
        self.first: list[int] = []
        self.last: list[int] = []
        self.ts0: list[float] = []
        self.ts1: list[float] = []
        self.n_ntt: list[int] = []
        self.gpu_tids: list[set[int]] = []
        self.held: list[float] = []
        self.complete: list[bool] = []

    def open(self, line: int, ts: float) -> int:
        self.first.append(line)
        self.last.append(line)
        self.ts0.append(ts)
        self.ts1.append(ts)
        self.n_ntt.append(0)
        self.gpu_tids.append(set())
        self.held.append(NAN)
        self.complete.append(False)
        return len(self.first) - 1

    def touch(self, rec: int, line: int, ts: float) -> None:
        self.last[rec] = line
        if ts == ts:
            if self.ts0[rec] != self.ts0[rec]:
                self.ts0[rec] = ts
            self.ts1[rec] = ts

    def frame(self):
        n = len(self.first)
        n_gpus = [max(a, len(b), 1) for a, b in zip(self.n_ntt, self.gpu_tids, strict=True)]
        return frame(
            {
                "record": np.arange(n, dtype=np.int64),
                "first_line": self.first,
                "last_line": self.last,
                "ts_start": self.ts0,
                "ts_end": self.ts1,
                "n_gpus": n_gpus,
                "held_ms": self.held,
                "complete": np.asarray(self.complete, dtype=bool),
            },
            RECORD_COLUMNS,
        )


class Timeline:
    def __init__(self) -> None:
        self.cols: dict[str, list] = {c: [] for c in TIMELINE_COLUMNS}

    def add(self, line, ts, offset, event, job, partition, worker, synth, gpu) -> None:
        c = self.cols
        c["line"].append(line)
        c["ts"].append(ts)
        c["offset_ms"].append(offset)
        c["event"].append(event)
        c["job_id"].append(job)
        c["partition"].append(partition)
        c["worker"].append(worker)
        c["synth_ms"].append(synth)
        c["gpu_ms"].append(gpu)

    def frame(self):
        return frame(self.cols, TIMELINE_COLUMNS)


class Skipped:
    def __init__(self) -> None:
        self.line: list[int] = []
        self.reason: list[str] = []
        self.text: list[str] = []

    def add(self, line: int, reason: str, text: str) -> None:
        self.line.append(line)
        self.reason.append(reason)
        self.text.append(text[:SKIP_TEXT])

    def __len__(self) -> int:
        return len(self.line)

    def frame(self):
        return frame({"line": self.line, "reason": self.reason, "text": self.text}, SKIPPED_COLUMNS)
