"""A JAX / XLA profiler trace (`jax.profiler.trace(..., create_perfetto_trace=True)`'s
perfetto_trace.json.gz, TensorFlow's trace viewer JSON) read as the Kineto trace it is the
picture of: the same Chrome trace format, another vocabulary.

- a GPU is a process named `/device:GPU:<n>`; its streams are threads named `Stream #<id>(...)`
  (`Stream #14(Compute)`, `Stream #15(MemcpyH2D)`); its other threads (`XLA Ops`, `XLA Modules`,
  `Steps`) summarise the streams' events again and are not read (they would count them twice);
- an event on a stream named `Memcpy<Dir>` (MemcpyH2D, MemcpyD2H, MemcpyD2D, MemcpyP2P) is a copy:
  its `memcpy_details` (`kind_src:pageable kind_dst:device size:67108864 dest:0 async:1`, or the older
  `kind:pageable size:8 ...`) give the host memory kind and the bytes; any other stream event is a
  kernel;
- the host's events (`/host:CPU`) carry no category Kineto's have (which are runtime calls is not read here): not
  read, and the notes say so.

So a JAX trace gets the copies' and kernels' evidence and rules a PyTorch trace gets (pageable
copies, idle gaps between kernels), and nothing that needs the host's calls."""

from __future__ import annotations

import re

from gpuscope.parsers.trace.kineto_json import Args, Decoded, Event

_GPU = re.compile(r"^/device:GPU:(\d+)")
_STREAM = re.compile(r"^Stream #(\d+)")
_DETAILS = re.compile(r"(?:kind_src:(\w+)\s+kind_dst:(\w+)|kind:(\w+))(?:.*?\bsize:(\d+))?")
# the copy's direction in its event name, and Kineto's word for it
_DIRECTION = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH", "MemcpyD2D": "DtoD", "MemcpyP2P": "PtoP"}
_KIND = {"pageable": "Pageable", "pinned": "Pinned", "device": "Device", "managed": "Managed"}
READER = "(an XLA trace, read as Kineto's)"
NOTE = ("a JAX / XLA profiler trace: its GPU streams' kernels and copies read as a PyTorch trace's; its host "
        "events (not in Kineto's categories) and the XLA Ops / Modules summaries not read")


def kineto_shaped(decoded: Decoded) -> Decoded:
    """A decoded trace as Kineto's: an XLA trace's stream events converted (as_kineto), its reader
    said, its host events counted as `host_unread` (there, not read); any other trace as it is."""
    if not is_xla(decoded.events):
        return decoded
    decoded.events, host, summaries = as_kineto(decoded.events)
    decoded.reader = f"{decoded.reader} {READER}"
    decoded.header["counts"] = {k: v for k, v in (("host_unread", host), ("xla_summaries", summaries)) if v}
    return decoded


def reader_notes(readers: list[str]) -> list[str]:
    """The note an XLA trace's reading owes (what was not read), once."""
    return [NOTE] if any(r.endswith(READER) for r in readers) else []


def is_xla(events: list[Event]) -> bool:
    """Whether a trace's metadata names a process `/device:GPU:<n>` (XLA's device planes)."""
    return any(e.ph == "M" and e.name == "process_name" and e.args is not None and _GPU.match(e.args.name)
               for e in events[:4096])


def as_kineto(events: list[Event]) -> tuple[list[Event], int, int]:
    """The trace's stream events as Kineto's kernel and gpu_memcpy events (device, stream, bytes,
    the copy's memory kinds in its name); every other event as it was (counted, not read); and how
    many complete events the host's threads and the devices' summary threads hold."""
    device: dict[int | str, int] = {}
    stream: dict[tuple[int | str, int | str], int] = {}
    for e in events:
        if e.ph != "M" or e.args is None:
            continue
        if e.name == "process_name" and (m := _GPU.match(e.args.name)) is not None:
            device[e.pid] = int(m.group(1))
        elif e.name == "thread_name" and (m := _STREAM.match(e.args.name)) is not None:
            stream[(e.pid, e.tid)] = int(m.group(1))
    out: list[Event] = []
    host = summaries = 0
    for e in events:
        s = stream.get((e.pid, e.tid)) if e.ph == "X" and e.pid in device else None
        if s is None:
            out.append(e)
            if e.ph == "X":
                summaries += e.pid in device
                host += e.pid not in device
            continue
        d = _DIRECTION.get(e.name)
        if d is None:
            out.append(Event(ph="X", cat="kernel", name=e.name, pid=e.pid, tid=e.tid, ts=e.ts, dur=e.dur,
                             args=Args(device=device[e.pid], stream=s)))
            continue
        details = e.args.memcpy_details if e.args is not None else ""
        src, dst, size = _kinds(d, details)
        out.append(Event(ph="X", cat="gpu_memcpy", name=f"Memcpy {d} ({src} -> {dst})", pid=e.pid, tid=e.tid,
                         ts=e.ts, dur=e.dur, args=Args(device=device[e.pid], stream=s, bytes=size)))
    return out, host, summaries


def _kinds(direction: str, details: str) -> tuple[str, str, float]:
    """(source kind, destination kind, bytes) of a copy's memcpy_details, in Kineto's words."""
    m = _DETAILS.search(details)
    src = dst = "Unknown"
    size = float("nan")
    if m is not None:
        if m.group(1):
            src, dst = _KIND.get(m.group(1).lower(), "Unknown"), _KIND.get(m.group(2).lower(), "Unknown")
        elif m.group(3):  # (the older form: one kind, the host side's)
            host = _KIND.get(m.group(3).lower(), "Unknown")
            src, dst = (host, "Device") if direction == "HtoD" else ("Device", host) if direction == "DtoH" \
                else ("Device", "Device")
        if m.group(4):
            size = float(m.group(4))
    return src, dst, size
