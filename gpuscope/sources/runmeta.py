"""Typed reading of a run directory's meta.json (docs/ARCHITECTURE.md "Run directory").

meta.json is written by gpuscope run / record, but a user may hand-edit or damage it: every
accessor returns None (or a default) for a missing or mistyped field instead of raising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PAGEABLE_NAMES = ("pageable", "unpinned")

_NUM = (int, float)
# the types meta.json's fields have when gpuscope wrote them (docs/ARCHITECTURE.md "Run
# directory"); a field of another type is dropped on the way in (clean_meta), so nothing
# downstream meets a list where it reads a number
SCHEMA: dict[str, tuple[type, ...]] = {
    "argv": (list,), "capture": (str,), "child_returncode": (int, type(None)), "command": (list,),
    "cwd": (str,), "driver": (dict,), "ended": (str, type(None)), "errors": (list,),
    "exit_code": (int, type(None)), "gpus": (list,), "gpuscope_version": (str,), "host": (dict,),
    "kind": (str,), "line_rate_gbs": (*_NUM, type(None)), "mode": (str, type(None)), "notes": (list,),
    "output_burst_lines": (int,), "output_lines": (int,), "pipeline": (dict,), "pipeline_started": (str,),
    "sampler": (dict, str), "schema_version": (int,), "setup": (dict,), "signals_forwarded": (list,),
    "signals_received": (list,), "started": (str, type(None)), "status": (str,), "stdin": (str,),
    "workload": (dict,), "summary": (str,),
}
GPU_SCHEMA: dict[str, tuple[type, ...]] = {
    "capabilities": (dict,), "index": (int,), "line_rate_gbs": (*_NUM, type(None)),
    "memory_total_mib": (*_NUM, type(None)), "max_sm_clock_mhz": (*_NUM, type(None)), "name": (str,),
    "pci_bus_id": (str,), "pcie_link": (dict,), "uuid": (str,),
}
MAX_NUMBER = 1e15  # a number in meta.json beyond it is damage (no count, size or rate is that large)


def _fits(v: Any, types: tuple[type, ...]) -> bool:
    if v is None:  # a field gpuscope could not fill (no NVML: no driver): absent, not damage
        return True
    if isinstance(v, bool):
        return bool in types
    if not isinstance(v, types):
        return False
    return not isinstance(v, _NUM) or -MAX_NUMBER <= v <= MAX_NUMBER


def clean_meta(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(meta.json with every known field of the wrong type dropped, the dropped fields);
    unknown fields are kept as they are (a newer gpuscope may write more)."""
    out: dict[str, Any] = {}
    dropped: list[str] = []
    for k, v in data.items():
        if k in SCHEMA and not _fits(v, SCHEMA[k]):
            dropped.append(k)
            continue
        out[k] = v
    gpus = []
    for i, g in enumerate(out.get("gpus") or []):
        if not isinstance(g, dict):
            dropped.append(f"gpus[{i}]")
            continue
        bad = [k for k, v in g.items() if k in GPU_SCHEMA and not _fits(v, GPU_SCHEMA[k])]
        dropped += [f"gpus[{i}].{k}" for k in bad]
        gpus.append({k: v for k, v in g.items() if k not in bad})
    if "gpus" in out:
        out["gpus"] = gpus
    return out, dropped


def _positive_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


@dataclass(frozen=True)
class RunMeta:
    """meta.json as read (`raw`, {} when the source has none) with typed accessors."""

    raw: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.raw)

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def workload(self) -> dict[str, Any]:
        w = self.raw.get("workload")
        return w if isinstance(w, dict) else {}

    @property
    def mode(self) -> str | None:
        """pinned | pageable | registered for a workload run, "record" for a recording."""
        m = self.raw.get("mode") or self.workload.get("mode")
        return str(m) if m else None

    @property
    def mode_effective(self) -> str:
        return str(self.workload.get("mode_effective") or "")

    @property
    def cpu_reference(self) -> bool:
        """The run used the CPU reference backend (host-memory modes have no effect there)."""
        return self.mode_effective.startswith("none")

    @property
    def log_n(self) -> int | None:
        return _positive_int(self.workload.get("log_n"))

    @property
    def bytes_per_partition(self) -> float | None:
        """Host-to-device bytes of one partition, from the workload config."""
        for key in ("h2d_bytes_per_partition", "abc_bytes_per_partition"):
            v = self.workload.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
                return float(v)
        return None

    @property
    def workers_per_gpu(self) -> int | None:
        return _positive_int(self.workload.get("workers_per_gpu"))

    @property
    def synth_threads(self) -> int | None:
        return _positive_int(self.workload.get("synth_threads"))

    @property
    def workload_gpus(self) -> int:
        gpus = self.workload.get("gpus")
        return len(gpus) if isinstance(gpus, list) and gpus else 1

    @property
    def budget_slots(self) -> int | None:
        """Partitions the run's host budget let be in flight, or None."""
        budget = _positive_int(self.workload.get("host_budget_bytes"))
        part = _positive_int(self.workload.get("partition_host_bytes"))
        if budget and part and budget >= part:
            return budget // part
        return None

    @property
    def line_rate_gbs(self) -> float | None:
        """The line rate the run measured and wrote into its meta.json, or None."""
        v = self.raw.get("line_rate_gbs")
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        v = float(v)
        return v if 0 < v < float("inf") else None
