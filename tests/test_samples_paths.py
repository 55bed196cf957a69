"""The compiled samples.csv reader (parsers/_samples.c) against the Python one (pandas' C parser):
the same frame (rows, values to the bit, dtypes, damage counts) on generated hostile files
(hypothesis) read as a file (streamed in chunks) and as text, on every samples.csv of the test
data, and on a file longer than one chunk; and the compact columns hold the values exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope.parsers.samples import SAMPLE_COLUMNS, read_samples_csv, samples_csv
from tests.conftest import DATA

pytestmark = pytest.mark.skipif(samples_csv.native() is None, reason="the compiled samples reader is not built")

TOKENS = ["0", "1", "3", "1023", "1024", "-1", "-0", "0.5", "350.5", "1980", "100", "0.3", "6.207902", "1.5e3",
          "1E-3", "+.5", "5.", ".", "-", "", " ", "N/A", "[N/A]", "[Not Supported]", "nan", "NaN", "inf", "-inf",
          "1e400", "1e-400", "٩٨", "９８", "98_765", "12..", '"1"', "True", "0x10", "99999999999999999999", "1e20",
          "0.1234567890123456789", "1.5e", " 1.5 ", "1.5\x1f", "\xa01.5", "1.5\u3000", "\ufffd", "9007199254740993",
          "1796047200.25", "1796047201", "counter", " gpm ", "throughput", "é", "2.5\t", "00012.50", "1e5", "7e-5"]


def _both(path=None, text=None, monkeypatch=None):
    fast = read_samples_csv(path if path is not None else "x", text=text)
    monkeypatch.setenv("GPUSCOPE_PURE_SCANNER", "1")
    try:
        slow = read_samples_csv(path if path is not None else "x", text=text)
    finally:
        monkeypatch.delenv("GPUSCOPE_PURE_SCANNER")
    return fast, slow


def _values(s: pd.Series) -> list:
    if s.dtype.kind == "f":
        x = s.to_numpy()
        return [("nan" if np.isnan(v) else (float(v), bool(np.signbit(v)))) for v in x]
    return s.astype(object).where(s.notna(), None).tolist()


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns) == list(SAMPLE_COLUMNS)
    assert a.attrs == b.attrs
    assert len(a) == len(b)
    for c in a.columns:
        assert a[c].dtype == b[c].dtype, c
        assert _values(a[c]) == _values(b[c]), c


def _header(rng_cols: list[str]) -> str:
    return ",".join(rng_cols)


rows = st.lists(st.lists(st.sampled_from(TOKENS), min_size=0, max_size=9), min_size=0, max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, torn=st.booleans(), crlf=st.booleans(), blank=st.booleans(), extra=st.booleans())
def test_generated_files_read_alike(rows, torn, crlf, blank, extra, tmp_path, monkeypatch):
    cols = ["t_wall", "gpu", "rx_gbs", "pcie_source", "wrap_suspect", "sm_active", "power_w"] + (["junk"] if extra else [])
    lines = [",".join(cols)]
    for i, r in enumerate(rows):
        t = f"{1796047200 + i * 0.02:.3f}"
        fields = ([t, str(i % 3)] + r)[: len(cols) + (1 if i % 7 == 3 else 0)]
        if len(fields) < len(cols) and i % 5 != 1:
            fields += ["0"] * (len(cols) - len(fields))
        lines.append(",".join(fields))
        if blank and i % 4 == 0:
            lines.append("  \t")
    text = ("\r\n" if crlf else "\n").join(lines) + ("" if torn else "\n")
    a, b = _both(text=text, monkeypatch=monkeypatch)
    same(a, b)
    p = tmp_path / "samples.csv"
    p.write_bytes(text.encode())
    a, b = _both(path=p, monkeypatch=monkeypatch)
    same(a, b)


@pytest.mark.parametrize("body", [
    "1.0,0\r,1.5,c\n2.0,0,1.5,c\n",          # a lone CR: pandas splits the line there
    "1.0,0,1.5,c\n\x00\x00\x00",             # NUL bytes at the end
    "1.0,0,1.5,c\n2.0,0\x00,1.5,c\n3,0,1,c\n",  # a line holding a NUL
    "1.0,0,1.5,c",                           # torn
    "",
    "\n\n   \n",
])
def test_odd_files_read_alike(body, tmp_path, monkeypatch):
    text = "t_wall,gpu,rx_gbs,pcie_source\n" + body
    p = tmp_path / "samples.csv"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())
    a, b = _both(path=p, monkeypatch=monkeypatch)
    same(a, b)


def test_every_test_capture_reads_alike(monkeypatch):
    files = sorted(DATA.rglob("samples*.csv"))
    assert len(files) >= 10
    for p in files:
        a, b = _both(path=p, monkeypatch=monkeypatch)
        same(a, b)


def test_many_chunks_and_compact_columns(tmp_path, monkeypatch):
    """A file of several chunks (a small CHUNK): the same frame; float32 only where exact."""
    monkeypatch.setattr(samples_csv, "CHUNK", 4096)
    rng = np.random.default_rng(3)
    n = 5000
    lines = ["t_wall,t_mono,gpu,rx_gbs,power_w,sm_clock_mhz,pcie_source,wrap_suspect"]
    for i in range(n):
        lines.append(f"{1796047200 + i * 0.02:.3f},{i * 0.02:.6f},{i % 2},{rng.uniform(0, 9):.6f},"
                     f"{rng.integers(100, 700) / 2},{rng.integers(800, 1980)},{'counter' if i % 3 else ' gpm'},0")
    p = tmp_path / "samples.csv"
    p.write_text("\n".join(lines) + "\n")
    a, b = _both(path=p, monkeypatch=monkeypatch)
    same(a, b)
    assert len(a) == n
    assert a["power_w"].dtype == np.float32 and a["sm_clock_mhz"].dtype == np.float32  # halves, whole numbers
    assert a["rx_gbs"].dtype == np.float64 and a["t_wall"].dtype == np.float64
    assert a["gpu"].dtype == np.int16 and isinstance(a["pcie_source"].dtype, pd.CategoricalDtype)
    assert a["tensor_active"].to_numpy().strides == (0,)  # a column with no value: no memory
    back = pd.read_csv(p)
    assert np.array_equal(a["power_w"].to_numpy(np.float64), back["power_w"].to_numpy())
    assert sorted(set(a["pcie_source"].astype(str))) == ["counter", "gpm"]
