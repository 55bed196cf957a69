"""Format detection's pass over the whole log: the compiled `markers` (memmem) and the Python
search give the same format, for a marker anywhere: first line, last line, across the seam of
two 1 MiB blocks, none at all."""

from __future__ import annotations

import pytest

from gpuscope.parsers.log import detect
from gpuscope.parsers.log.logparse import open_input

FILLER = b"step 12 loss=0.5 data: 1.2ms compute: 3.4ms\n"


def _log(tmp_path, marker: bytes, at: int | None):
    body = FILLER * (3 * (1 << 20) // len(FILLER))
    if at is not None:
        body = body[:at] + marker + body[at:]
    p = tmp_path / "t.log"
    p.write_bytes(body)
    return p


@pytest.mark.parametrize("marker", [b"CUZK_TIMING:", b"TIMELINE,", b"FIN_TIMING ", b"mutex_held_ms=", b"ntt_kernels="])
@pytest.mark.parametrize("at", [None, 0, (1 << 20) - 5, (1 << 20) - 1, 2 * (1 << 20) + 7, -1])
def test_compiled_and_python_agree(tmp_path, monkeypatch, marker, at):
    p = _log(tmp_path, marker, None if at is None else (at if at >= 0 else 3 * (1 << 20) - 100))
    compiled = detect.detect_input(open_input(str(p), None))
    monkeypatch.setenv("GPUSCOPE_PURE_SCANNER", "1")
    assert detect._compiled() is None
    python = detect.detect_input(open_input(str(p), None))
    assert compiled == python
    want = "lines" if at is None else ("condensed" if marker in detect.CONDENSED_BYTES else "cuzk")
    assert compiled == want


def test_markers_bits():
    mod = detect._compiled()
    if mod is None:
        pytest.skip("compiled scanner not built")
    assert mod.markers(b"a CUZK_NTT_H: b", detect._MARKERS) == 1 << detect._MARKERS.index(b"CUZK_NTT_H:")
    assert mod.markers(memoryview(b"xxmutex_wait_ms=1")[2:], detect._MARKERS) == 1 << detect._MARKERS.index(b"mutex_wait_ms=")
    assert mod.markers(b"", detect._MARKERS) == 0
    with pytest.raises(TypeError):
        mod.markers(b"x", ("str",))
