"""gpuscope's samples.csv -> the samples frame, streamed into compact columns.

    read(path)                  the file (a run directory: its samples.csv), in chunks
    read(path, text=...)        text a caller already read

Two readers, one result: the compiled one (parsers/_samples.c, `gpuscope.parsers._samples`)
reads the file in CHUNK-byte pieces straight into the columns, never holding the whole text;
the Python one (pandas' C parser over the well-shaped lines) is used without the extension,
with GPUSCOPE_PURE_SCANNER=1, and for the files whose lines pandas splits on a lone carriage
return or which hold NUL bytes (read whole, as before). The rules (parsers.samples) are the
same in both, and so are the frames: tests/test_samples_paths.py compares them.

The columns are compact (docs/ARCHITECTURE.md "samples.csv"): times float64; any other
number column float32 when float32 holds every value of it exactly (whole numbers, halves:
clocks, watts, percentages), else float64, and a column with no value at all one NaN seen
n times (a read-only view, no memory); gpu int16 (indices are below 1024), wrap_suspect int8,
pcie_source a categorical. Every value is the float64 the text denotes, so figures computed
from them in float64 are those of float64 columns to the bit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope import native as compiled
from gpuscope.errors import read_error
from gpuscope.native import PURE_ENV as PURE_ENV  # (re-exported)
from gpuscope.parsers.limits import cap, readable_file, too_big
from gpuscope.parsers.samples.samples_base import (
    BOUNDS,
    INT_COLUMNS,
    INT_DTYPES,
    NAN,
    REQUIRED,
    SAMPLE_COLUMNS,
    STR_COLUMNS,
    _attrs,
    _categorical,
    _frame,
    _int_column,
    _nan_view,
    _read_text,
    small_pages,
)
from gpuscope.parsers.samples.samples_pyread import python_reader

CHUNK = 4 << 20
OUT_BYTES = 512 << 10
Progress = Callable[[int, int], None]


def native():
    """The compiled reader, or None (not built, or GPUSCOPE_PURE_SCANNER=1)."""
    return compiled.load("samples")


def read(path: str | os.PathLike[str], *, text: str | None = None,
         progress: Progress | None = None) -> pd.DataFrame:
    """gpuscope's samples.csv (a run directory: its samples.csv), or `text` already read."""
    with small_pages():
        return _read(path, text, progress)


def _read(path: str | os.PathLike[str], text: str | None, progress: Progress | None) -> pd.DataFrame:
    mod = native()
    if text is None and mod is not None:
        p = _file(Path(path))
        if p is not None:
            df = _Stream(mod, p, progress).read()
            if df is not None:
                return df
    text, p, nul = _read_text(path, text)
    if mod is not None:
        data = text.encode("utf-8", "surrogatepass")
        df = _Stream(mod, p, None).read_bytes(data)
        if df is not None:
            return _with_nul(df, nul)
    return python_reader(text, p, nul)


def _with_nul(df: pd.DataFrame, nul: tuple[int, int]) -> pd.DataFrame:
    df.attrs["nul_bytes"] = int(nul[0])
    df.attrs["nul_rows"] = int(nul[1])
    df.attrs["malformed_rows"] = int(df.attrs["malformed_rows"]) + int(nul[1])
    return df


def _file(p: Path) -> Path | None:
    """The regular file to stream (a directory: its samples.csv), None for anything else (a
    FIFO: read whole, as before)."""
    try:
        if p.is_dir():
            p = p / "samples.csv"
    except (OSError, ValueError) as e:
        raise read_error(p, e) from None
    return p if readable_file(p) == "file" else None


# -- the compiled reader --------------------------------------------------------------------

class _Stream:
    """The file in chunks through _samples.scan into growing compact columns."""

    def __init__(self, mod, p: Path, progress: Progress | None):
        self.mod, self.p, self.progress = mod, p, progress

    def read(self) -> pd.DataFrame | None:
        """The frame, or None when the file needs the Python reader (NUL bytes, a lone CR, a
        byte-order mark of UTF-16 or 32, no header in the first chunk)."""
        limit = cap("samples")
        try:
            with open(self.p, "rb") as f:
                total = os.fstat(f.fileno()).st_size
                if total > limit:
                    raise too_big(self.p, "samples", limit)
                first = f.read(CHUNK)
                head = first[3:] if first.startswith(b"\xef\xbb\xbf") else first
                if first[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head or b"\n" not in head:
                    return None
                header, body = head.split(b"\n", 1)
                self.line_bytes = max(len(body) / max(body.count(b"\n"), 1), 8.0)
                if not self.start(header, total):
                    return None
                done = len(first)
                # one buffer for the whole file: the lines not yet read at its start, the next
                # chunk read in after them (no chunk copied, no new memory per chunk)
                buf = bytearray(2 * CHUNK + len(body))
                buf[: len(body)] = body
                have = len(body)
                del first, head, body
                while True:
                    if have == len(buf):  # a line longer than the buffer
                        buf.extend(bytearray(len(buf)))
                    with memoryview(buf) as mv:
                        n = f.readinto(mv[have:])
                    if buf.find(b"\x00", have, have + n) >= 0:
                        return None
                    done += n
                    if done > limit:
                        raise too_big(self.p, "samples", limit)
                    if not n:
                        break
                    end = have + n
                    cut = buf.rfind(b"\n", 0, end) + 1
                    if cut:
                        with memoryview(buf) as mv:
                            ok = self.feed(mv[:cut])
                        if not ok:
                            return None
                        buf[: end - cut] = bytes(buf[cut:end])
                    have = end - cut
                    if self.progress is not None:
                        self.progress(done, total)
        except OSError as e:
            raise read_error(self.p, e) from None
        cut = buf.rfind(b"\n", 0, have) + 1
        with memoryview(buf) as mv:
            ok = self.feed(mv[:cut])
        if not ok:
            return None
        return self.finish(bytes(buf[cut:have]))

    def read_bytes(self, data: bytes) -> pd.DataFrame | None:
        """Text already read (and cleaned of NULs) as UTF-8 bytes."""
        if b"\n" not in data:
            return None
        header, body = data.split(b"\n", 1)
        self.line_bytes = max(len(body) / max(body.count(b"\n"), 1), 8.0)
        if not self.start(header, len(data)):
            return None
        cut = body.rfind(b"\n") + 1
        if not self.feed(body[:cut]):
            return None
        return self.finish(body[cut:])

    def start(self, header_bytes: bytes, total: int) -> bool:
        header = [h.strip() for h in header_bytes.decode("utf-8", errors="replace").split(",")]
        if "t_wall" not in header or "gpu" not in header or len(header) > 4096:
            return False  # (the Python reader says what it is)
        self.header = header
        self.numeric = [c for c in SAMPLE_COLUMNS if c in header and c not in STR_COLUMNS]
        self.strcol = "pcie_source" if "pcie_source" in header else None
        spec = bytearray([0xFF] * len(header))
        for k, c in enumerate(self.numeric):
            spec[header.index(c)] = k
        if self.strcol:
            spec[header.index(self.strcol)] = 0xFE
        self.spec = bytes(spec)
        self.flags = bytes((1 if c in INT_COLUMNS else 0) | (2 if c in REQUIRED else 0)
                           | (4 if c == "wrap_suspect" else 0) | (8 if c == "gpu" else 0) for c in self.numeric)
        self.bounds = np.array([BOUNDS.get(c, (-np.inf, np.inf)) for c in self.numeric], dtype=np.float64).tobytes()
        self.cats: dict[bytes, int] = {}
        self.catlist: list[bytes] = []
        # rows per scan: its K x rows doubles stay in the core's cache (512 KiB) while the scan
        # writes them and the columns read them back (4M rows: ~0.2 CPU-s less than 64Ki rows)
        self.rows_cap = max(1024, min(1 << 16, OUT_BYTES // (8 * max(1, len(self.numeric)))))
        self.out = np.empty((len(self.numeric), self.rows_cap), dtype=np.float64)
        self.codes = np.empty(self.rows_cap, dtype=np.int32)
        est = int(1.25 * total / self.line_bytes) + 1024  # rows (pages never written are never resident)
        self.cols = _Columns(self.numeric, est, bool(self.strcol))
        self.bad_shape = self.dropped = 0
        self.bad = np.zeros(len(self.numeric), dtype=np.int64)
        return True

    def feed(self, buf: bytes | memoryview) -> bool:
        pos, size = 0, len(buf)
        with memoryview(buf) as view:
            while pos < size:
                with view[pos:] as part:
                    r = self.mod.scan(part, self.spec, self.flags, self.bounds, self.out, self.codes,
                                      self.cats, self.catlist, self.rows_cap)
                if not self._took(r):
                    return False
                pos += r[0]
        return True

    def _took(self, r: tuple) -> bool:
        _, rows, shape, dropped, lone_cr, bad, not32, anyv = r
        if lone_cr:
            return False
        self.bad_shape += shape
        self.dropped += dropped
        self.bad += np.frombuffer(bad, dtype=np.int64)
        self.cols.append(self.out, self.codes, rows, not32, anyv)
        return True

    def finish(self, tail: bytes) -> pd.DataFrame:
        torn = 1 if tail else 0  # the last line has no newline: cut short by a crash
        malformed = torn + self.bad_shape + self.dropped
        bad_values = {c: int(n) for c, n in zip(self.numeric, self.bad, strict=True) if n and c not in REQUIRED}
        k = self.cols.n
        if not k:
            return _attrs(_frame([], malformed, "gpuscope"), malformed, "gpuscope")
        data = self.cols.columns(self.catlist)
        df = pd.DataFrame({c: data[c] for c in SAMPLE_COLUMNS}, columns=list(SAMPLE_COLUMNS), copy=False)
        return _attrs(df, malformed, "gpuscope", bad_values)


class _Columns:
    """Numeric columns that grow by chunks: None while every value is missing, float32 while
    float32 holds every value exactly, float64 from the first value it does not."""

    def __init__(self, names: list[str], est: int, have_str: bool):
        self.names = names
        self.cap = est
        self.n = 0
        self.store: list[np.ndarray | None] = [None] * len(names)
        self.codes = np.empty(est, dtype=np.int32) if have_str else None

    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        self.cap = max(need, int(self.cap * 1.5))
        for i, a in enumerate(self.store):
            if a is not None:
                b = np.empty(self.cap, dtype=a.dtype)
                b[: self.n] = a[: self.n]
                self.store[i] = b
        if self.codes is not None:
            c = np.empty(self.cap, dtype=np.int32)
            c[: self.n] = self.codes[: self.n]
            self.codes = c

    def append(self, out: np.ndarray, codes: np.ndarray, rows: int, not32: bytes, anyv: bytes) -> None:
        if not rows:
            return
        a, b = self.n, self.n + rows
        self._grow(b)
        for i in range(len(self.names)):
            s = self.store[i]
            if s is None and not anyv[i]:
                continue
            if self.names[i] in INT_DTYPES:  # (gpu, wrap_suspect: straight into their integer dtype)
                if s is None:
                    s = np.zeros(self.cap, dtype=INT_DTYPES[self.names[i]])
                    self.store[i] = s
                part = out[i, :rows]
                s[a:b] = np.where(np.isfinite(part), part, 0)  # (_int_column's rule: missing reads 0)
                continue
            wide = bool(not32[i]) or self.names[i] in ("t_wall", "t_mono")
            if s is None:
                s = np.empty(self.cap, dtype=np.float64 if wide else np.float32)
                s[:a] = NAN
            elif wide and s.dtype != np.float64:
                s = s.astype(np.float64)  # (exact: every value so far was a float32)
            self.store[i] = s
            s[a:b] = out[i, :rows]
        if self.codes is not None:
            self.codes[a:b] = codes[:rows]
        self.n = b

    def columns(self, catlist: list[bytes]) -> dict[str, object]:
        k = self.n
        data: dict[str, object] = {}
        for name, s in zip(self.names, self.store, strict=True):
            data[name] = _nan_view(k) if s is None else s[:k]
        for c in INT_COLUMNS:
            have = data.get(c)
            data[c] = have if isinstance(have, np.ndarray) and have.dtype == INT_DTYPES.get(c) else _int_column(c, have, k)
        for c in SAMPLE_COLUMNS:
            if c not in data and c not in STR_COLUMNS:
                data[c] = _nan_view(k)
        raw = [v.decode("utf-8", errors="replace") for v in catlist]
        data["pcie_source"] = _categorical(raw, self.codes[:k] if self.codes is not None else None, k)
        return data
