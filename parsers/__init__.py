"""Text -> pandas DataFrames. Pure: no rich, no cupy, no NVML, no printing.

    parse_log(source, fmt=None, *, held_key="mutex_held") -> ParsedLog   (timing logs)
    read_samples(path) -> DataFrame        (samples.csv, nvidia-smi dmon, nvidia-smi --query-gpu)
"""

from gpuscope.parsers.detect import detect_format
from gpuscope.parsers.logparse import parse_log
from gpuscope.parsers.parsed import FORMATS, ParsedLog
from gpuscope.parsers.samples import read_dmon, read_query_gpu, read_samples, read_samples_csv

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
