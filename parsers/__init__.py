"""Text -> pandas DataFrames. Pure: no rich, no cupy, no NVML, no printing.

    parse_log(source, fmt=None, *, held_key="mutex_held") -> ParsedLog   (timing logs)
    read_samples(path) -> DataFrame        (samples.csv, nvidia-smi dmon, nvidia-smi --query-gpu)

The sample readers load pandas; they are imported when first used, so parsing a timing log
(whose frames are built from columns when read: parsers/log/parsed.py) does not load it.
"""

from gpuscope.parsers.log.detect import detect_format
from gpuscope.parsers.log.logparse import parse_log
from gpuscope.parsers.log.parsed import FORMATS, ParsedLog

_SAMPLE_READERS = ("read_dmon", "read_query_gpu", "read_samples", "read_samples_csv")

__all__ = [
    "FORMATS",
    "ParsedLog",
    "detect_format",
    "parse_log",
    "read_dmon",
    "read_query_gpu",
    "read_samples",
    "read_samples_csv",
]


def __getattr__(name: str):
    if name in _SAMPLE_READERS:
        from gpuscope.parsers import samples

        return getattr(samples, name)
    raise AttributeError(f"module 'gpuscope.parsers' has no attribute {name!r}")
