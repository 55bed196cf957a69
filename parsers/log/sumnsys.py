"""What an `nsys stats` summary carries, said as totals (parsers/log/sumtable.py reads the
tables): per copy direction the bytes, count, time and achieved rate (a memory-operation
summary by time beside one by size); the GPU kernel total (the kernel summary); the share of
the CUDA API time spent in calls that block the host (the API summary).

What it does not carry is said, with what would tell: the host memory kind of a copy
(pinned or pageable) is in no stats table (the SQLite export, `nsys export --type sqlite`,
has it per copy); the capture's span is in none either, so a kernel total is not a busy
fraction. Where it could mislead: a sum of kernel times over several streams or GPUs can
exceed the wall time (said, never a share of it); an API table's `Time (%)` is a share of
the time inside CUDA API calls, not of the run; an average rate over copies of very
different sizes is one figure for all of them (small copies pull it down)."""

from __future__ import annotations

import re

from gpuscope.parsers.log.tabledoc import SIZE_UNITS, TIME_UNITS, BenchTable

# calls that return only when the GPU work (or the copy) is done: the host waits inside them
BLOCKING = frozenset(("cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
                      "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
                      "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyHtoD", "cuMemcpyDtoH",
                      "cuMemcpy", "cuMemcpy2D", "cuMemcpy3D"))
_DIRECTIONS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
               "HtoH": "Host-to-Host", "PtoP": "Peer-to-Peer", "DtoA": "Device-to-Array", "AtoD": "Array-to-Device"}
NO_LINE = ("a stats table names no GPU and no link: `--line-rate GB/s` (the link's measured rate) gives each "
           "direction's share of it")
WHAT_TELLS = ("the host memory kind (pinned or pageable) of each copy is in no stats table: the SQLite export "
              "(`nsys export --type sqlite report.nsys-rep`) has it per copy")


def direction(op: str) -> str:
    """`[CUDA memcpy HtoD]` and `[CUDA memcpy Host-to-Device]` -> `Host-to-Device`;
    unified memory keeps its own name; a memset is `memset`."""
    s = op.strip().strip("[]")
    if "memset" in s.lower():
        return "memset"
    um = "Unified Memory " if "Unified" in s else ""  # (a migration, never a copy of the line: its own traffic)
    last = s.split()[-1] if s.split() else s
    return um + _DIRECTIONS.get(last, last)


def _col(part: dict, name: str, kinds: tuple[str, ...]) -> int | None:
    return next((k for k, c in enumerate(part["columns"]) if c["name"] == name and c["kind"] in kinds), None)


def _total(part: dict, kind: str) -> tuple[int, dict[str, float]] | None:
    """The column of totals (`Total Time` in seconds, `Total` in bytes) by row name."""
    k = _col(part, "Total Time", ("time",)) if kind == "time" else _col(part, "Total", ("size",))
    if k is None:
        return None
    scale = (TIME_UNITS if kind == "time" else SIZE_UNITS).get(part["columns"][k]["unit"])
    if scale is None:
        return None
    out: dict[str, float] = {}
    for r in part["rows"]:
        v = r["values"][k]
        if isinstance(v, int | float):
            out[r["name"]] = out.get(r["name"], 0.0) + v * scale
    return k, out


def _count(part: dict) -> dict[str, int]:
    k = next((k for k, c in enumerate(part["columns"]) if c["kind"] == "count"), None)
    if k is None:
        return {}
    return {r["name"]: int(r["values"][k]) for r in part["rows"] if isinstance(r["values"][k], int | float)}


def _role(part: dict) -> str:
    rep, title = (part.get("report") or "").lower(), (part.get("title") or "").lower()
    names = [r["name"] for r in part["rows"]]
    if names and all(n.startswith("[CUDA ") for n in names):
        return "copy_size" if _col(part, "Total", ("size",)) is not None else "copy_time"
    if "api" in rep or "api" in title:
        return "api"
    if "kern" in rep or "kernel" in title:
        return "kernels"
    return ""


def summarize(t: BenchTable) -> None:
    """An nsys summary's totals, added to its summary lines and notes (nothing for other tools)."""
    if t.tool != "nsys_stats":
        return
    parts = [{"columns": t.columns, "rows": t.rows, **t.section}, *t.sections]
    by_role: dict[str, list[dict]] = {}
    for p in parts:
        by_role.setdefault(_role(p), []).append(p)
    _copies(t, by_role.get("copy_time", []), by_role.get("copy_size", []))
    for p in by_role.get("kernels", [])[:1]:
        tot = _total(p, "time")
        if tot is not None:
            n = sum(_count(p).values())
            t.summary.append({"name": "GPU kernel time (sum over kernels)", "value": round(sum(tot[1].values()), 6),
                              "unit": "s", "verdict": f"({n:,} launches of {len(tot[1])} kernel{'s' if len(tot[1]) != 1 else ''})"})
            t.notes.append("the kernel total is a sum over kernels: kernels on several streams or GPUs overlap, and "
                           "the capture's span is in no stats table, so it is not a busy fraction (the SQLite export "
                           "has both)")
    for p in by_role.get("api", [])[:1]:
        _api(t, p)


def _copies(t: BenchTable, times: list[dict], sizes: list[dict]) -> None:
    if not times and not sizes:
        return
    tt = _total(times[0], "time") if times else None
    bb = _total(sizes[0], "size") if sizes else None
    count = _count(times[0] if times else sizes[0])
    secs = {direction(k): v for k, v in (tt[1] if tt else {}).items()}
    nbytes = {direction(k): v for k, v in (bb[1] if bb else {}).items()}
    counts = {direction(k): v for k, v in count.items()}
    for d in dict.fromkeys([*secs, *nbytes]):
        if d == "memset":
            continue
        s, b = secs.get(d), nbytes.get(d)
        each = f" ({b / counts[d] / 1e6:,.3f} MB each on average)" if b is not None and counts.get(d) else ""
        said = ", ".join(x for x in (f"{b / 1e9:,.3f} GB" if b is not None else "",
                                     f"{counts[d]:,} copies{each}" if d in counts else "",
                                     f"{s:,.6f} s" if s is not None else "") if x)
        if s and b is not None:
            t.summary.append({"name": f"{d} copies", "value": round(b / s / 1e9, 3), "unit": "GB/s",
                              "verdict": f"({said}: the average rate over all of them)", "direction": d})
        else:
            t.summary.append({"name": f"{d} copies", "value": None, "unit": "", "direction": d,
                              "verdict": f"({said}; no rate: the summary by {'size' if s else 'time'} is missing)"})
    t.notes.append(WHAT_TELLS)
    unit = sizes[0]["columns"][bb[0]]["unit"] if sizes and bb else ""
    if unit in ("MB", "KB", "GB"):
        t.notes.append(f"read: {unit} as {dict(KB='10^3', MB='10^6', GB='10^9')[unit]} bytes (nsys's decimal units)")
    if any(s.get("direction") and s.get("value") is not None for s in t.summary):
        t.notes.append(NO_LINE)


def _api(t: BenchTable, p: dict) -> None:
    tot = _total(p, "time")
    if tot is None or not sum(tot[1].values()):
        return
    whole = sum(tot[1].values())
    blocking = {n: v for n, v in tot[1].items() if re.sub(r"_v\d+$", "", n) in BLOCKING}
    share = 100.0 * sum(blocking.values()) / whole
    top = ", ".join(f"{n} {100.0 * v / whole:.1f}%" for n, v in sorted(blocking.items(), key=lambda x: -x[1])[:4])
    t.summary.append({"name": "host-blocking CUDA API calls", "value": round(share, 1), "unit": "%",
                      "verdict": f"of the time inside CUDA API calls ({top or 'none'})"})
    t.notes.append("an API table's shares are of the time inside CUDA API calls, not of the run: how long the host "
                   "waited per step needs the run's span (a trace or the SQLite export)")


def against_line_rate(t: BenchTable, rate: float) -> None:
    """Each copy direction's rate as a share of the line rate the caller gave (--line-rate):
    a stats table names no GPU and no link."""
    if rate > 0 and NO_LINE in t.notes:
        t.notes.remove(NO_LINE)
    for s in t.summary:
        if s.get("direction") and isinstance(s.get("value"), int | float) and rate > 0:
            share = 100.0 * s["value"] / rate
            s["verdict"] = f"{s['verdict']}, {share:.0f}% of the {rate:g} GB/s line rate"
            if share < 50 and s["direction"] in ("Host-to-Device", "Device-to-Host"):
                s["verdict"] += (": below half of it, as pageable host memory or small copies would make it; which one "
                                 "is in the SQLite export (each copy's memory kind and size)")
