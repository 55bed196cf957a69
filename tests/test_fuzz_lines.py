"""Hypothesis: lines people print, mutated, and random text never make the `lines` parser
raise anything but InputError / NoDataError; the frames keep their schema and the records
their invariants (a record's held time is finite and non-negative, every component's
record exists, quantities point at lines that exist)."""

from __future__ import annotations

import math
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope import parsers
from gpuscope.errors import InputError, NoDataError
from gpuscope.parsers.log.lines import line as lineread
from gpuscope.schemas import QUANTITY_COLUMNS
from tests.conftest import DATA
from tests.test_fuzz_parsers import _check

_RUNS = DATA / "h200_foreign" / "runs"
REAL = sorted({ln for run in sorted(_RUNS.iterdir()) for ln in (run / "timing.log").read_text().splitlines()[:6]} | {
    "Epoch 1 | batch 20 | loss 0.53 | fwd 12.1 ms | bwd 20.3 ms",
    "INFO step 7: data_time=0.120s compute_time=0.031s",
    "epoch 3 took 1.2s",
    "latency_us: 150",
    '{"step": 3, "h2d_ms": 12.5}',
    "copy 512 MiB: 57.2 ms (9.4 GB/s)",
    "loaded 3 files in 12 dirs",
    "100%|██████████| 10/10 [00:01<00:00,  9.35it/s]",
    "TIMELINE,5,GPU_END,j,worker=0,partition=1,gpu_ms=2",
})
CHARS = st.sampled_from(list("=|,;: .-_0123456789msuµ%/(){}[]\"'\t\r\x00\xffeE+") + [
    " ms", "s ", "_ms", "step", "total", "time", "printed_at=1796115683.6", "\n", "é", "1e400", "nan", "-"])


@st.composite
def mutated(draw):
    lines = draw(st.lists(st.sampled_from(REAL), min_size=1, max_size=10))
    for op, pos, ch in draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6), CHARS), max_size=10)):
        i = pos % len(lines)
        s = lines[i]
        k = pos % (len(s) + 1)
        lines[i] = (s[:k] + ch + s[k:], s[:k] + s[k + 1:], s[:k] + ch + s[k + 1:], s[:k])[op]
    return "\n".join(lines) + "\n"


def _check_lines(p):
    _check(p)
    assert {c: str(t) for c, t in p.quantities.dtypes.items()} == QUANTITY_COLUMNS
    assert p.quantities["line"].between(1, p.total_lines).all()
    held = p.records.loc[p.records["complete"], "held_ms"]
    assert all(math.isfinite(h) and h >= 0 for h in held)
    assert (p.components["value_ms"] >= 0).all()
    assert p.whole is None or p.whole in set(p.components["component"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.sampled_from([None, "lines"]))
def test_mutated_printed_lines_never_crash(text, fmt):
    try:
        p = parsers.parse_log(text, fmt)
    except (InputError, NoDataError):
        return
    if p.format == "lines":
        _check_lines(p)
    else:
        _check(p)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_random_text_never_crashes_the_lines_format(text):
    try:
        p = parsers.parse_log(text + "\nx: 1ms", "lines")
    except (InputError, NoDataError):
        return
    _check_lines(p)


def _frames(p):
    return p.components, p.records, p.quantities, p.skipped


def _parse_both(text, monkeypatch_ctx):
    try:
        a = parsers.parse_log(text, "lines")
    except (InputError, NoDataError) as e:
        a = type(e)
    with monkeypatch_ctx() as m:
        m.setattr(lineread, "USE_PLANS", False)
        try:
            b = parsers.parse_log(text, "lines")
        except (InputError, NoDataError) as e:
            b = type(e)
    return a, b


@st.composite
def repeated(draw):
    """Lines of a few shapes, each printed many times with other numbers (what plans replay)."""
    shapes = draw(st.lists(mutated(), min_size=1, max_size=3))
    nums = st.sampled_from(["0", "7", "12.5", "-3", "1e400", "1796115683.6", "2000", "0.0", "99999999999999999",
                            "1.5", "3/40", "12.", "1e3", "5e-1"])
    out = []
    for _ in range(draw(st.integers(2, 12))):
        line = draw(st.sampled_from(shapes)).splitlines()[0] if shapes else ""
        parts = re.split(r"[0-9]+", line)
        out.append("".join(p + (draw(nums) if k < len(parts) - 1 else "") for k, p in enumerate(parts)))
    return "\n".join(out) + "\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repeated())
def test_replayed_plans_read_like_the_full_reading(text):
    import pandas as pd
    import pytest

    a, b = _parse_both(text, pytest.MonkeyPatch.context)
    if isinstance(a, type) or isinstance(b, type):
        assert a == b
        return
    for x, y in zip(_frames(a), _frames(b), strict=True):
        pd.testing.assert_frame_equal(x, y)
    assert (a.whole, a.notes, a.timing_lines) == (b.whole, b.notes, b.timing_lines)


def test_plans_on_the_captures_read_like_the_full_reading():
    import pandas as pd
    import pytest

    for run in sorted(_RUNS.iterdir()):
        text = (run / "timing.log").read_text()
        try:
            parsers.parse_log(text, "lines")
        except NoDataError:
            continue  # (a run that printed no timing lines: nothing to compare)
        a, b = _parse_both(text, pytest.MonkeyPatch.context)
        for x, y in zip(_frames(a), _frames(b), strict=True):
            pd.testing.assert_frame_equal(x, y)
