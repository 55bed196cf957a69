"""A bare time-named number is seconds when the lines' own stamps say so (parsers/log/stampunit.py):
the time between one line and the next agrees with it (CLTR's `epoch_time=150.973` on lines
~150 s apart); a time the gaps do not match, or a log without stamps, gives no unit."""

from __future__ import annotations

import pytest

from gpuscope import parsers
from gpuscope.errors import NoDataError
from gpuscope.parsers.log.lines import line as lineread


def _log(gaps: list[float], values: list[float], second_stamps: bool = False) -> str:
    t, out = 1000.0, []
    for g, v in zip(gaps, values, strict=True):
        t += g
        sec = int(t)
        stamp = f"2023-06-24 05:{sec // 60 % 60:02d}:{sec % 60:02d}" + ("" if second_stamps else f",{int(t * 1000) % 1000:03d}")
        out.append(f"{stamp} - app - INFO - Training Epoch:[{len(out)}/9]\t loss=1.2\t epoch_time={v}\n")
    return "".join(out)


def test_stamps_that_agree_give_seconds_and_the_note_says_so():
    gaps = [10.0, 12.5, 11.0, 10.2, 12.0]
    p = parsers.parse_log(_log(gaps, [g - 0.001 for g in gaps]))
    assert p.format == "lines" and p.components["value_ms"].round(0).tolist() == [9999.0, 12499.0, 10999.0, 10199.0,
                                                                                  11999.0]
    assert any("read as seconds: epoch_time (the lines' stamps" in n for n in p.notes)


def test_stamps_to_the_second_agree_within_their_resolution():
    gaps = [30.0, 31.0, 29.0, 30.0, 32.0]
    p = parsers.parse_log(_log(gaps, [g - 0.4 for g in gaps], second_stamps=True))
    assert set(p.components["component"]) == {"epoch_time"}


@pytest.mark.parametrize("values", [
    [4.0, 4.1, 3.9, 4.2, 4.0],  # each epoch's time well under its gap (an evaluation between): no unit
    [10000.0, 12500.0, 11000.0, 10200.0, 12000.0],  # the gaps in ms: not seconds
])
def test_stamps_that_do_not_agree_give_no_unit(values):
    with pytest.raises(NoDataError, match="names a time but prints no unit"):
        parsers.parse_log(_log([10.0, 12.5, 11.0, 10.2, 12.0], values))


def test_the_reading_is_the_same_replayed_or_read_in_full(monkeypatch):
    gaps = [10.0, 12.5, 11.0, 10.2, 12.0, 10.0, 11.0]
    text = _log(gaps, [g - 0.001 for g in gaps])
    planned = parsers.parse_log(text).components["value_ms"].tolist()
    monkeypatch.setattr(lineread, "USE_PLANS", False)
    assert parsers.parse_log(text).components["value_ms"].tolist() == planned
