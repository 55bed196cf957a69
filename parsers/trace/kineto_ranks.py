"""The rank side of the Kineto reader (parsers/trace/kineto.py): a folder of rank traces read as
far as it can be, and the bound on a ProfilerStep#N's step number. Pure: no printing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.trace.tracefile import folder_traces, read_file

# a ProfilerStep#N range whose N is at or beyond 2^53 (an id's bound, kineto.ID_MAX) is damage: the
# step number is an id every reader of the frames turns into an int64 (issue 34, class 6)
STEP_MAX = 1 << 53
STEP_DIGITS_MAX = 16
_STEP_NO = re.compile(r"^ProfilerStep#(\d+)")
R = TypeVar("R")


def step_problems(why: np.ndarray, names: list[str]) -> None:
    """A ProfilerStep#N with N >= 2^53 (or more digits than one could hold): its reason set."""
    for k, name in enumerate(names):
        if why[k] == "" and name.startswith("ProfilerStep#") and (m := _STEP_NO.match(name)) is not None:
            digits = m.group(1).lstrip("0")
            if len(digits) > STEP_DIGITS_MAX or (digits and int(digits) >= STEP_MAX):
                why[k] = "a step number beyond 2^53"


def read_ranks(p: Path, read_one: Callable[[bytes, str, bool], R]) -> tuple[list[R], list[str], list[Any]]:
    """(ranks read, their files, the errors of those that could not be) of a folder of rank traces
    (or of per-rank trace folders): a rank file that is cut, empty or not JSON is left out, the
    others read (issue 34, class 12). The error itself when the folder holds one trace only, the
    first rank's when none can be read."""
    files = folder_traces(p)
    if not files:
        raise NoDataError(f"{p}: no profiler traces (*.json, *.json.gz with traceEvents) in the folder"
                          " or in its sub-folders")
    ranks: list[R] = []
    read: list[str] = []
    failed: list[InputError | NoDataError] = []
    for f in files:
        try:
            data, cut = read_file(f)
            ranks.append(read_one(data, str(f), cut))
        except (InputError, NoDataError) as e:
            if len(files) == 1:
                raise
            failed.append(e)
            continue
        read.append(str(f))
    if not ranks:
        raise failed[0]
    return ranks, read, failed
