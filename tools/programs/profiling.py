"""The torch.profiler set-up the capture programs share: a few active steps of CPU and CUDA
activity, then a Chrome trace. `maybe_profile(path)` returns None when no trace is asked for."""

from __future__ import annotations

from typing import Any


def maybe_profile(path: str | None, active: int = 3) -> Any:
    if not path:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=1, warmup=1, active=active, repeat=1))
    prof.start()
    return prof


def finish(prof: Any, path: str | None) -> None:
    if prof is not None and path:
        prof.stop()
        prof.export_chrome_trace(path)
