"""What a file's first bytes say it is, for the facade's choice of a reader (gpuscope.sources.open),
without importing that reader: parsers.samples and its Prometheus reader load pandas (~0.25
CPU-s), which a JSON-lines timing log, read by the log parser, never needs (issue 21)."""

from __future__ import annotations


def looks_like_prometheus(head: bytes | str) -> bool:
    """A Prometheus API response (or several): JSON naming `resultType` and `status` early."""
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    s = text.lstrip("\ufeff \t\r\n")
    return s[:1] in ("{", "[") and '"status"' in text and ('"resultType"' in text or '"errorType"' in text)


#: the column families of an `nvidia-smi --query-gpu` CSV header (beside `timestamp` or `index`)
QUERY_FIELD_PREFIXES = ("utilization.", "memory.", "power.", "clocks.", "pcie.", "temperature.")


def query_fields(line: str) -> list[str]:
    """A CSV line's fields as --query-gpu names them: `utilization.gpu [%]` -> `utilization.gpu`."""
    return [f.strip().split(" [")[0].strip().lower() for f in line.split(",")]


def looks_like_query_header(line: str) -> bool:
    """A `--query-gpu` CSV header: `timestamp` or `index` and a column of its families."""
    if "," not in line or "=" in line:
        return False
    fields = query_fields(line)
    return ("timestamp" in fields or "index" in fields) and any(f.startswith(QUERY_FIELD_PREFIXES) for f in fields)
