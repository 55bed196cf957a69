"""The measured PCIe line rate: the `gpuscope bandwidth` result cache, keyed by GPU UUID.

File: `$XDG_CACHE_HOME/gpuscope/bandwidth.json` (default `~/.cache/gpuscope/bandwidth.json`):

    {"schema_version": 1,
     "gpus": {"GPU-uuid": {"line_rate_gbs": 55.4, "measured_at": "...Z", "name": "...",
                           "result": {... the full `bandwidth --json` object ...}}}}

`line_rate_gbs` is the best median pinned H2D rate over the measured sizes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuscope" / "bandwidth.json"


def _load() -> dict[str, Any]:
    p = cache_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"schema_version": SCHEMA_VERSION, "gpus": {}}
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), dict):
        return {"schema_version": SCHEMA_VERSION, "gpus": {}}
    return data


def save(uuid: str, result: dict[str, Any]) -> Path:
    """Store a bandwidth result for one GPU (atomic replace). Raises OSError if unwritable."""
    data = _load()
    data["schema_version"] = SCHEMA_VERSION
    data["gpus"][uuid] = {
        "line_rate_gbs": result.get("line_rate_gbs"),
        "measured_at": result.get("measured_at"),
        "name": (result.get("gpu") or {}).get("name"),
        "result": result,
    }
    p = cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return p


def measured_line_rate(uuid: str | None = None) -> float | None:
    """The measured pinned H2D line rate (GB/s) for `uuid`; with uuid=None, the most recent
    measurement of any GPU. None when nothing usable was saved."""
    gpus = _load()["gpus"]
    if uuid is not None:
        entry = gpus.get(uuid)
        return _rate(entry)
    best: tuple[str, float] | None = None
    for entry in gpus.values():
        r = _rate(entry)
        if r is None:
            continue
        when = str(entry.get("measured_at") or "")
        if best is None or when > best[0]:
            best = (when, r)
    return best[1] if best else None


def _rate(entry: Any) -> float | None:
    if not isinstance(entry, dict):
        return None
    r = entry.get("line_rate_gbs")
    if isinstance(r, int | float) and r > 0:
        return float(r)
    return None


# -- the one rule every command uses to pick the line rate --------------------------------

DEFAULT_LINE_RATE_GBS = 50.0

# What pinned copies reach of a PCIe link's raw rate (its generation x width, after the line
# code): TLP headers and flow control take ~10-12% at the usual 256-byte payloads. Measured here:
# an H200 on Gen5 x16 (63.0 GB/s raw) reads back pinned memory at 54.4-55.3 GB/s, and
# `gpuscope bandwidth` measured 55.4 GB/s on it: 0.88 of the raw rate.
LINK_EFFICIENCY = 0.88

# Short keys go into JSON (`line_rate_source`); the text is what reports print.
SOURCE_TEXT = {
    "option": "--line-rate",
    "meta": "run meta.json (measured)",
    "cache": "gpuscope bandwidth cache (measured)",
    "link": f"the run's PCIe link (raw rate x {LINK_EFFICIENCY:g}, not measured)",
    "default": f"default {DEFAULT_LINE_RATE_GBS:g} GB/s",
    "trace": "the trace's fastest host copies (the link carries at least this; not measured)",
    "gpu_name": f"the GPU model's usual PCIe link (assumed from its name, raw rate x {LINK_EFFICIENCY:g}; not measured)",
}


# The host link of GPU models named by a trace's deviceProperties (or a capture): PCIe generation
# by model, x16 assumed. Raw x16 rates after the line code: Gen3 15.75, Gen4 31.5, Gen5 63.0 GB/s.
# A model with a host link other than PCIe (GH200/GB200: NVLink-C2C) or one not listed: no guess.
_RAW_X16 = {3: 15.75, 4: 31.5, 5: 63.0}
_MODEL_GEN: tuple[tuple[str, int | None], ...] = (
    (r"\bG[HB]200\b", None), (r"\bH100\b", 5), (r"\bH200\b", 5), (r"\bH20\b", 5), (r"\bH800\b", 5),
    (r"\bB200\b", 5), (r"\bRTX 50\d0", 5), (r"\bRTX PRO 6000\b", 5),
    (r"\bA100\b", 4), (r"\bA800\b", 4), (r"\bA10G?\b", 4), (r"\bA30\b", 4), (r"\bA40\b", 4),
    (r"\bA16\b", 4), (r"\bA2\b", 4), (r"\bL4\b", 4), (r"\bL40S?\b", 4), (r"\bRTX A\d000\b", 4),
    (r"\bRTX 6000 Ada\b", 4), (r"\bRTX 30\d0", 4), (r"\bRTX 40\d0", 4),
    (r"\bV100", 3), (r"\bT4\b", 3), (r"\bP100\b", 3), (r"\bP40\b", 3), (r"\bRTX 20\d0", 3),
    (r"\bQuadro RTX\b", 3),
)


def named_line_rate(names: list[str]) -> tuple[float, str] | None:
    """(GB/s, what was assumed) for the GPU models `names` name: the usual PCIe generation of
    the model at x16, raw rate x LINK_EFFICIENCY; the slowest when they differ; None when any
    name is unknown or not on PCIe (no guess beats a wrong one)."""
    import re

    found: list[tuple[int, str]] = []
    for n in {str(x).strip() for x in names if str(x).strip()}:
        gen = next((g for pat, g in _MODEL_GEN if re.search(pat, n, re.IGNORECASE)), 0)
        if not gen:
            return None
        found.append((gen, n))
    if not found:
        return None
    gen, name = min(found)
    return (round(_RAW_X16[gen] * LINK_EFFICIENCY, 1),
            f"{name}: PCIe Gen{gen} x16 assumed from the model, raw rate x {LINK_EFFICIENCY:g}, not measured")


def source_text(key: str) -> str:
    """How reports name a line-rate source key."""
    return SOURCE_TEXT.get(key, key)


def meta_line_rate(meta: dict | None) -> float | None:
    """The line rate a run measured and wrote into its meta.json, or None."""
    v = (meta or {}).get("line_rate_gbs")
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    v = float(v)
    return v if v > 0 and v != float("inf") else None


def link_line_rate(meta: dict | None) -> float | None:
    """The line rate a run's PCIe link allows (meta.json's gpus[].pcie_link.max_gbs, the raw
    rate of its maximum generation and width, times LINK_EFFICIENCY); the slowest GPU's when
    they differ; None when no GPU of the run says."""
    rates = []
    for g in (meta or {}).get("gpus") or []:
        link = g.get("pcie_link") if isinstance(g, dict) else None
        v = link.get("max_gbs") if isinstance(link, dict) else None
        if not isinstance(v, bool) and isinstance(v, int | float) and 0 < v < 1e4:
            rates.append(float(v))
    return round(min(rates) * LINK_EFFICIENCY, 1) if rates else None


def _run_uuids(meta: dict | None) -> list[str]:
    return [g["uuid"] for g in (meta or {}).get("gpus") or [] if isinstance(g, dict) and isinstance(g.get("uuid"), str)]


def resolve_line_rate(option: float | None, meta: dict | None = None) -> tuple[float, str]:
    """(GB/s, source key): the caller's option, else the run's measured rate (meta.json), else
    this machine's `gpuscope bandwidth` cache of the run's GPU, else the run's PCIe link
    (raw rate x LINK_EFFICIENCY), else the cache of any GPU, else 50 GB/s. A run's own link
    goes before another GPU's measurement: the cache is of the machine analysing, which need
    not be the one recorded."""
    if option is not None:
        return float(option), "option"
    rate = meta_line_rate(meta)
    if rate is not None:
        return rate, "meta"
    try:
        own = [r for u in _run_uuids(meta) if (r := measured_line_rate(u))]
        rate = None if own else (None if link_line_rate(meta) else measured_line_rate())
    except Exception:  # a broken cache must not stop an analysis
        own, rate = [], None
    if own:
        return float(min(own)), "cache"
    link = link_line_rate(meta)
    if link is not None:
        return link, "link"
    if rate and rate > 0:
        return float(rate), "cache"
    return DEFAULT_LINE_RATE_GBS, "default"
