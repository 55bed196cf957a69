"""Text -> pandas DataFrames. Pure: no rich, no cupy, no NVML, no printing.

    parse_log(source, fmt=None, *, held_key="mutex_held") -> ParsedLog   (timing logs)
    read_samples(path) -> DataFrame                                      (samples.csv, dmon, query-gpu)
"""

from parsers.detect import detect_format
from parsers.logparse import parse_log
from parsers.model import FORMATS, ParsedLog

__all__ = ["FORMATS", "ParsedLog", "detect_format", "parse_log"]
