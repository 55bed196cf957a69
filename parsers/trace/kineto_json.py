"""Profiler trace bytes -> decoded events (parsers.kineto's reader; see its docstring).

msgspec decodes the document into slotted structs holding only the fields gpuscope reads
(docs/BENCHMARKS.md, "Profiler traces"); a document that does not fit those types is decoded
generically and converted event by event (bad events reported, not fatal); a document cut
short is salvaged with the stdlib decoder up to its last complete event. Content detection and gzip
handling live in parsers/trace/tracefile.py (no msgspec there).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gpuscope.allocator import gc_paused
from gpuscope.errors import GpuscopeError, InputError, NoDataError

try:
    import msgspec
except ImportError:  # a dependency of gpuscope; an install with --no-deps may lack it
    raise GpuscopeError("reading a profiler trace needs the msgspec package (a gpuscope dependency): "
                        "pip install msgspec") from None

NAN = math.nan


# -- the decoded shapes (only the fields gpuscope reads; every other key is ignored) ----------

class Args(msgspec.Struct, gc=False):
    device: int = -1
    stream: int = -1
    correlation: int = -1
    bytes: float = NAN
    gbs: float = msgspec.field(name="memory bandwidth (GB/s)", default=NAN)
    name: str = ""  # (a metadata event's process or thread name: an XLA trace's devices and streams)
    memcpy_details: str = ""  # (an XLA trace's copy: its memory kinds and bytes, parsers/trace/xla_events.py)


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: float = NAN
    dur: float = NAN
    args: Args | None = None


class Device(msgspec.Struct, gc=False):
    id: int = -1
    name: str = ""
    numSms: int = -1
    totalGlobalMem: float = NAN


class Distributed(msgspec.Struct, gc=False):
    rank: int = -1


class Document(msgspec.Struct, gc=False):
    traceEvents: list[Event] | None = None
    baseTimeNanoseconds: int | None = None
    deviceProperties: list[Device] | None = None
    distributedInfo: Distributed | None = None


# -- bytes in ---------------------------------------------------------------------------------

# -- JSON -> events ---------------------------------------------------------------------------

@dataclass
class Decoded:
    events: list[Event]
    header: dict[str, Any]
    bad: list[tuple[int, str, str]]  # (index, reason, name) of events that did not fit
    reader: str
    truncated: bool = False


def header_dict(doc: Document) -> dict[str, Any]:
    h: dict[str, Any] = {"baseTimeNanoseconds": doc.baseTimeNanoseconds}
    if doc.deviceProperties:
        h["deviceProperties"] = [{"id": d.id, "name": d.name, "numSms": d.numSms,
                                  "totalGlobalMem": d.totalGlobalMem} for d in doc.deviceProperties]
    if doc.distributedInfo is not None:
        h["rank"] = doc.distributedInfo.rank
    return h


def loose_header(obj: dict) -> dict[str, Any]:
    """The header fields of a generically decoded document, wrong types dropped."""
    h: dict[str, Any] = {}
    base = obj.get("baseTimeNanoseconds")
    if isinstance(base, (int, float)) and not isinstance(base, bool) and math.isfinite(base):
        h["baseTimeNanoseconds"] = int(base)
    devs = obj.get("deviceProperties")
    if isinstance(devs, list):
        h["deviceProperties"] = [d for d in devs if isinstance(d, dict)]
    dist = obj.get("distributedInfo")
    if isinstance(dist, dict) and isinstance(dist.get("rank"), int):
        h["rank"] = dist["rank"]
    return h


def convert(raw: list, start_index: int = 0) -> tuple[list[Event], list[tuple[int, str, str]]]:
    events: list[Event] = []
    bad: list[tuple[int, str, str]] = []
    for i, e in enumerate(raw, start_index):
        try:
            events.append(msgspec.convert(e, Event, strict=False))
        except msgspec.ValidationError as err:
            name = e.get("name") if isinstance(e, dict) else None
            bad.append((i, f"malformed event: {err}", str(name)[:120] if name is not None else ""))
    return events, bad


def decode_generic(data: bytes, where: str) -> Decoded:
    obj = msgspec.json.decode(data)
    if isinstance(obj, list):
        raw, header = obj, {}
    elif isinstance(obj, dict):
        if "traceEvents" not in obj:
            raise NoDataError(f"{where}: JSON without traceEvents (not a Chrome trace)")
        raw, header = obj["traceEvents"], loose_header(obj)
        if not isinstance(raw, list):
            raise NoDataError(f"{where}: traceEvents is not a list")
    else:
        raise NoDataError(f"{where}: JSON {type(obj).__name__}, not a Chrome trace")
    events, bad = convert(raw)
    return Decoded(events, header, bad, "msgspec (generic: the trace did not fit the typed reader)")


def salvage(data: bytes, where: str, err: Exception) -> Decoded:
    """Events up to the point where the document stops being JSON; InputError unless that
    point is its end (a cut trace) -- the stdlib decoder also takes NaN, which msgspec refuses."""
    text = data.decode("utf-8", errors="replace")
    at = text.find('"traceEvents"')
    start = text.find("[", at) if at >= 0 else (0 if text.lstrip()[:1] == "[" else -1)
    if start < 0:
        raise InputError(f"{where}: not valid JSON ({err})") from None
    dec = json.JSONDecoder()
    raw: list = []
    pos, n = start + 1, len(text)
    cut = False
    ws = " \t\r\n"

    def bad(msg: str, at: int) -> InputError:
        line = text.count("\n", 0, at) + 1
        col = at - text.rfind("\n", 0, at)
        return InputError(f"{where}: not valid JSON: {msg} at line {line} column {col}")

    while True:
        while pos < n and text[pos] in ws:
            pos += 1
        if pos >= n:
            cut = True
            break
        if text[pos] == "]" and not raw:
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            if e.pos >= len(text.rstrip()) - 1 or e.msg.startswith("Unterminated string"):
                cut = True
                break
            raise bad(e.msg, e.pos) from None
        raw.append(obj)
        while pos < n and text[pos] in ws:
            pos += 1
        if pos >= n:
            cut = True
            break
        if text[pos] == "]":
            break
        if text[pos] != ",":
            raise bad("expecting ',' between events", pos)
        pos += 1
    header: dict[str, Any] = {}
    if at > 0:  # Kineto writes the header keys before traceEvents
        try:
            head = json.loads(text[:at].rstrip().rstrip(",") + "}")
            header = loose_header(head) if isinstance(head, dict) else {}
        except json.JSONDecodeError:
            header = {}
    if not cut:
        try:
            json.loads(text)
        except json.JSONDecodeError:
            cut = True  # events complete, the document's end missing
    events, misfits = convert(raw)
    return Decoded(events, header, misfits, "stdlib json (salvage)", truncated=cut)


def decode(data: bytes, where: str) -> Decoded:
    """The events of a document; one nested deeper than the decoders go (msgspec's and the
    stdlib's recursion limits, about 1,000 levels: no trace nests past a few) is an InputError."""
    try:
        return _decode(data, where)
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to be a profiler trace") from None


def _decode(data: bytes, where: str) -> Decoded:
    if not data.strip():
        raise NoDataError(f"{where} is empty")
    if b"\x00" in data[:8192]:
        raise NoDataError(f"{where} looks binary (NUL bytes), not a trace")
    with gc_paused():
        try:
            doc = msgspec.json.decode(data, type=Document)
        except msgspec.ValidationError:
            try:
                return decode_generic(data, where)
            except msgspec.DecodeError as e:
                return salvage(data, where, e)
        except msgspec.DecodeError as e:
            return salvage(data, where, e)
    if doc.traceEvents is None:
        raise NoDataError(f"{where}: JSON without traceEvents (not a Chrome trace)")
    return Decoded(doc.traceEvents, header_dict(doc), [], "msgspec")
