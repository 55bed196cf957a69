"""An Nsight export's GPU frame holds rank, device, stream and correlation in the narrowest signed
integer dtype their values fit (gpuscope.schemas.TRACE_GPU_NARROW; issue 32: 10M kernels in 1 GB):
the same numbers as the int64 frame, row for row, and the same analysis."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuscope.parsers.trace import nsys_sqlite
from gpuscope.parsers.trace.nsys_columns import narrowest
from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
from gpuscope.schemas import TRACE_GPU_NARROW, TRACE_GPU_SCHEMA
from tests.test_nsys_sqlite import EXPORTS, _path, needs_exports


@pytest.mark.parametrize(("values", "dtype"), [
    ([0, 127], np.int8), ([-128, 5], np.int8), ([0, 128], np.int16), ([-129], np.int16),
    ([2**15], np.int32), ([-(2**31)], np.int32), ([2**31], np.int64), ([-1, 2**40], np.int64), ([], np.int8),
])
def test_narrowest_holds_every_value(values, dtype):
    assert narrowest([np.array(values[:1], dtype=np.int64), np.array(values[1:], dtype=np.int64)]) == dtype


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_narrow_columns_are_the_int64_frames_numbers(name, monkeypatch):
    fr = read_nsys_sqlite(_path(name))
    assert all(fr.gpu[c].dtype.itemsize < 8 for c in TRACE_GPU_NARROW)  # (these exports' ids all fit)
    monkeypatch.setattr(nsys_sqlite, "TRACE_GPU_NARROW", ())
    wide = read_nsys_sqlite(_path(name)).gpu
    assert dict(wide.dtypes.astype(str)) == TRACE_GPU_SCHEMA
    pd.testing.assert_frame_equal(fr.gpu.astype({c: "int64" for c in TRACE_GPU_NARROW}), wide)


@needs_exports
@pytest.mark.parametrize("name", EXPORTS)
def test_trace_gbs_is_one_nan_seen_in_every_row(name):
    """No Nsight row carries a trace bandwidth: the column is one NaN broadcast (no 8 bytes a row),
    read as the NaN column it was, and an analysis of the frame leaves it so."""
    from gpuscope.analysis.trace_analysis import analyze_trace
    fr = read_nsys_sqlite(_path(name))
    col = fr.gpu["trace_gbs"].to_numpy()
    assert col.strides == (0,) and col.size == len(fr.gpu) and np.isnan(col).all()
    assert fr.gpu["trace_gbs"].dtype == np.float64 and fr.gpu["bytes"].to_numpy().strides == (8,)
    a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="option")
    assert all(r["trace_gbs_median"] is None for r in a.memcpy)
    assert fr.gpu["trace_gbs"].to_numpy().strides == (0,)
