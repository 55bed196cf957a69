"""Format detection: `cuzk` when the log has CUZK_ / TIMELINE / GPU_TIMING / FIN_TIMING
lines, else `condensed` when it has the article's keys, else the generic `kv`."""

from __future__ import annotations

CUZK_MARKERS = ("CUZK_TIMING:", "CUZK_NTT_H:", "TIMELINE,", "GPU_TIMING ", "FIN_TIMING ")
CONDENSED_KEYS = ("mutex_held_ms=", "mutex_wait_ms=", "ntt_kernels=")


def detect_format(text: str) -> str:
    if any(m in text for m in CUZK_MARKERS):
        return "cuzk"
    if any(k in text for k in CONDENSED_KEYS):
        return "condensed"
    return "kv"
