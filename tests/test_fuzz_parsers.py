"""Hypothesis: mutations of real log lines never make the parsers raise anything but the
documented InputError / NoDataError, and the frames keep their schema."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope import parsers
from gpuscope.errors import InputError, NoDataError
from gpuscope.schemas import (
    COMPONENT_COLUMNS,
    RECORD_COLUMNS,
    SKIPPED_COLUMNS,
    TIMELINE_COLUMNS,
)
from tests.conftest import EXAMPLES

_daemon = (EXAMPLES / "cuzk_daemon.log").read_text().splitlines()
REAL = sorted(set(
    [ln for ln in _daemon if "CUZK_" in ln or "TIMELINE," in ln or "_TIMING " in ln][:80]
    + _daemon[:15]
    + (EXAMPLES / "article_excerpt.log").read_text().splitlines()
    + [
        "Nov 30 14:30:00 prover-7 cuzk-daemon[48121]: CUZK_TIMING: gpu_tid=1 batch_add_ms=401",
        "\x1b[2m2026-03-01T12:00:00.1Z\x1b[0m \x1b[32m INFO\x1b[0m x: FIN_TIMING finalizer worker_id=0 partition=Some(3) finish_ms=410",
        "[pod/cuzk-0/daemon] 2026-11-30T14:30:00.123456789Z TIMELINE,5,GPU_END,j,worker=0,partition=1,gpu_ms=2",
        "cuzk-1  | upload=1.5s, compute=250us wait_ms=3",
    ]
))
CHARS = st.sampled_from(list("=|, :.-_0123456789msuZT()[]\x1b\t\r\x00\xff") + ["CUZK_", "TIMELINE,", "_TIMING ", "\n", "é"])


@st.composite
def mutated_log(draw):
    lines = draw(st.lists(st.sampled_from(REAL), min_size=1, max_size=12))
    ops = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10**6), CHARS), max_size=8))
    for op, pos, ch in ops:
        i = pos % len(lines)
        s = lines[i]
        k = pos % (len(s) + 1)
        if op == 0:
            lines[i] = s[:k] + ch + s[k:]  # insert
        elif op == 1:
            lines[i] = s[:k] + s[k + 1:]  # delete
        elif op == 2:
            lines[i] = s[:k] + ch + s[k + 1:]  # replace
        elif op == 3:
            lines[i] = s[:k]  # truncate
        elif op == 4:
            lines.insert(i, s)  # duplicate
        else:
            lines[i], lines[-1] = lines[-1], lines[i]  # reorder
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "\n"
    return text


def _check(p):
    assert {c: str(t) for c, t in p.components.dtypes.items()} == COMPONENT_COLUMNS
    assert {c: str(t) for c, t in p.records.dtypes.items()} == RECORD_COLUMNS
    assert {c: str(t) for c, t in p.timeline.dtypes.items()} == TIMELINE_COLUMNS
    assert {c: str(t) for c, t in p.skipped.dtypes.items()} == SKIPPED_COLUMNS
    assert p.timing_lines >= len(p.skipped)
    assert p.components["line"].between(1, p.total_lines).all()
    assert p.components["record"].between(-1, max(len(p.records) - 1, -1)).all()
    assert (p.records["n_gpus"] >= 1).all()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_log(), st.sampled_from([None, "cuzk", "condensed", "kv"]))
def test_mutated_real_lines_never_crash(text, fmt):
    for source in (text, text.encode("utf-8", "surrogatepass")):
        try:
            p = parsers.parse_log(source, fmt)
        except (InputError, NoDataError):
            continue
        _check(p)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text):
    try:
        p = parsers.parse_log(text + "\n=")
    except (InputError, NoDataError):
        return
    _check(p)
