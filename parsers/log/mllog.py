"""MLPerf's logging lines (mlperf-logging's mllog): `:::MLLOG {json}`, one event per line:
`{"time_ms": 1700000061000, "event_type": "INTERVAL_END", "key": "epoch_stop", ...}`.

An interval is a `<name>_start` INTERVAL_START event and the next `<name>_stop` INTERVAL_END
event of the same name (and `epoch_num` / `block_num` where the metadata has one): the END
line carries the time `<name>` = stop - start, in milliseconds (`epoch`, `block`, `run`).
`time_ms` is a time stamp (the line's own time), never a duration; POINT_IN_TIME events and
other keys carry no time. A :::MLLOG line that is not a JSON object, or an interval whose
end comes before its start, is damage."""

from __future__ import annotations

import json

from gpuscope.parsers.numbers import MAX_MS

MARKER = ":::MLLOG "


def read_mllog(line: str, opened: dict) -> tuple[str, float, float] | str | None:
    """(name, duration ms, stamp s) for an interval's end, a damage reason, or None (an
    event without a time). `opened`: the intervals open so far ((name, num) -> start ms)."""
    at = line.find(MARKER)
    try:
        ev = json.loads(line[at + len(MARKER):])
    except (ValueError, RecursionError):
        return "MLLOG line is not a JSON object"
    if not isinstance(ev, dict):
        return "MLLOG line is not a JSON object"
    raw, kind, key = ev.get("time_ms"), ev.get("event_type"), ev.get("key")
    if not isinstance(key, str) or kind not in ("INTERVAL_START", "INTERVAL_END"):
        return None
    if not isinstance(raw, (int, float)) or isinstance(raw, bool) or not 1e12 <= raw < 1e13:
        return "MLLOG time_ms is not an epoch time in milliseconds"
    t = float(raw)
    meta = ev.get("metadata")
    num = None
    if isinstance(meta, dict):
        num = meta.get("epoch_num", meta.get("block_num"))
    name, _, end = key.rpartition("_")
    if kind == "INTERVAL_START" and end == "start" and name:
        opened[(name, num)] = t
        return None
    if kind == "INTERVAL_END" and end in ("stop", "end") and name:
        start = opened.pop((name, num), None)
        if start is None:
            return None
        ms = t - start
        if ms < 0:
            return f"MLLOG {key}: ends before its start"
        if ms > MAX_MS:
            return f"MLLOG {key}: an interval beyond any duration"
        return name, ms, t / 1e3
    return None
