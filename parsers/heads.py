"""What a file's first bytes say it is, for the facade's choice of a reader (gpuscope.sources.open),
without importing that reader: parsers.samples and its Prometheus reader load pandas (~0.25
CPU-s), which a JSON-lines timing log, read by the log parser, never needs (issue 21)."""

from __future__ import annotations


def looks_like_prometheus(head: bytes | str) -> bool:
    """A Prometheus API response (or several): JSON naming `resultType` and `status` early."""
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    s = text.lstrip("\ufeff \t\r\n")
    return s[:1] in ("{", "[") and '"status"' in text and ('"resultType"' in text or '"errorType"' in text)
