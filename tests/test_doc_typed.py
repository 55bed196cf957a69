"""The `analyze --json` document is typed once (gpuscope/analysis/document.py, issue 31): every
object of a real document carries the keys its TypedDict names (its NotRequired keys may be
absent) and no other, and each figure is of its declared kind, down through the typed lists
(a trace's copies, streams, gaps and phases; the ranks' rows and stragglers; the samples' nested
figures; the log's PCIe phases). A key a producer adds without its type, or a key typed and never
written, fails here. A part still typed `dict[str, Any]` (the table, findings, what_if, evidence)
is not looked into."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import pytest
from typer.testing import CliRunner

from gpuscope.analysis.doctypes import AnalysisDoc
from gpuscope.cli import app

from .conftest import DATA, EXAMPLES

BOUNDS = DATA / "h200_bounds"
INPUTS = {
    "cuzk_log": [EXAMPLES / "cuzk_daemon.log"],
    "run_with_samples": [DATA / "h100_lock" / "runs" / "copy_pinned"],
    "trace_readback": [BOUNDS / "traces" / "readback_pageable.json.gz"],
    "trace_upload": [BOUNDS / "traces" / "upload_pageable.json.gz"],
    "run_with_trace": [BOUNDS / "runs" / "hbm_bound", "--trace", BOUNDS / "traces" / "hbm_bound.json.gz"],
    "foreign_trace": [DATA / "h200_foreign" / "traces" / "launch_bound.json.gz"],
    "rank_traces": [BOUNDS / "traces" / "ranks2"],
    "rank_runs": [BOUNDS / "runs" / "ranks2"],
    "two_gpus_samples": [BOUNDS / "two_gpus" / "samples.csv"],  # pooled, with per_gpu
    "query_gpu_samples": [BOUNDS / "smi" / "hbm_bound_query.csv"],  # no PCIe counters
}
NSIGHT = Path(__file__).parents[2] / "shared" / "data" / "nsight"  # (real exports, read where they are)


def _hints(td: type) -> dict[str, Any]:
    return get_type_hints(td, include_extras=True)


def _required(td: type) -> set[str]:
    """The keys `td` requires. (Python 3.11 does not read NotRequired[...] inside a string annotation
    of a module with `from __future__ import annotations` into __required_keys__: read from the hints.)"""
    return {k for k, t in _hints(td).items() if k in td.__required_keys__ and get_origin(t) is not NotRequired}


def _fits(value: Any, tp: Any) -> bool:
    """Whether `value` is of `tp` as far as its keys (TypedDicts) and kinds (scalars) go."""
    return not _mismatches(value, tp, "")


def _mismatches(value: Any, tp: Any, path: str) -> list[str]:
    origin, args = get_origin(tp), get_args(tp)
    if origin is NotRequired:
        return _mismatches(value, args[0], path)
    if tp is Any or tp is object:
        return []
    if origin in (Union, types.UnionType):
        fits = [a for a in args if _fits(value, a)]
        if fits:
            return []
        members = [a for a in args if a is not type(None)]
        return [f"{path}: {value!r:.80} is none of {args}"] if len(members) != 1 else _mismatches(value, members[0], path)
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r:.80} is not null"]
    if origin is Literal:
        return [] if value in args else [f"{path}: {value!r} not in {args}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object ({tp.__name__})"]
        hints = _hints(tp)
        out = [f"{path}: {tp.__name__} has no key {k!r}" for k in value if k not in hints]
        out += [f"{path}: {tp.__name__}'s key {k!r} is missing" for k in _required(tp) if k not in value]
        for k, v in value.items():
            if k in hints:
                out += _mismatches(v, hints[k], f"{path}.{k}")
        return out
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__}, not a list"]
        return [m for i, v in enumerate(value) for m in _mismatches(v, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        return [m for k, v in value.items() for m in _mismatches(v, args[1], f"{path}.{k}")]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        return []  # (a form this check does not read)
    return [] if ok else [f"{path}: {value!r:.80} is not {getattr(tp, '__name__', tp)}"]


@pytest.mark.parametrize("name", INPUTS)
def test_every_typed_part_carries_exactly_its_keys(name):
    r = CliRunner().invoke(app, ["analyze", *map(str, INPUTS[name]), "--json"])
    assert r.exit_code == 0, r.output
    assert _mismatches(json.loads(r.stdout), AnalysisDoc, "") == []


@pytest.mark.skipif(not NSIGHT.is_dir(), reason=f"the real Nsight exports are not at {NSIGHT}")
def test_an_nsight_report_carries_exactly_its_keys():
    r = CliRunner().invoke(app, ["analyze", str(NSIGHT / "h100_2gpu_1s.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    assert _mismatches(json.loads(r.stdout), AnalysisDoc, "") == []


def test_the_literal_keys_are_the_producers_names():
    """Keys read through a variable are typed by Literals: they name what the producers key by."""
    from gpuscope.analysis.doctypes import ClassName, PipeName
    from gpuscope.analysis.evidence.samples import samplegrid as sg

    assert get_args(ClassName) == sg.CLASSES and get_args(PipeName) == sg.PIPE_COLUMNS


def test_the_check_sees_an_undeclared_key_and_a_missing_one():
    from gpuscope.analysis.doctypes import RankCollectivesDoc, TraceMemcpyDoc

    row = {"direction": "HtoD", "host_memory": "pinned", "count": 1, "bytes": 8, "ms": 1.0, "gbs": 8e-6,
           "per_event_gbs_median": None, "trace_gbs_median": None, "devices": [0]}
    assert _mismatches(row, TraceMemcpyDoc, "") == []  # (line_rate_share and ms_at_line_rate: NotRequired)
    assert _mismatches({**row, "new": 1}, TraceMemcpyDoc, "") == [": TraceMemcpyDoc has no key 'new'"]
    assert _mismatches({k: v for k, v in row.items() if k != "ms"}, TraceMemcpyDoc, "") == [
        ": TraceMemcpyDoc's key 'ms' is missing"]
    assert _mismatches({**row, "count": 1.5}, TraceMemcpyDoc, "") == [".count: 1.5 is not int"]
    assert _mismatches([row], list[RankCollectivesDoc], "")
