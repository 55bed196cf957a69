"""The top-kernels table of a profiler trace: the kernels that took the most GPU time, by
name, as Nsight Systems' and HTA's kernel summaries show them.

    top_kernels(frames.gpu, limit=20) -> [{"name", "short_name", "count", "total_ms", "share",
                                            "median_us", "mean_us", "max_us"}, ...]

One row per kernel name (over every rank, device and stream), most total time first. `share`
is the name's part of all kernel time (the sum of kernel durations: kernels that overlap on
several streams count each, so the shares add up to 1). `short_name` is the name a reader can
take in at a glance (short_name below); `name` is the trace's, whole. Plain pandas; no
printing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuscope import native
from gpuscope.analysis.evidence.trace.device_sets import first_come

TOP = 20
SHORT_MAX = 38  # the console table keeps it on one line of 80 columns


def top_kernels(gpu: pd.DataFrame, limit: int = TOP) -> list[dict]:
    """The `limit` kernels of most total time (TRACE_GPU_SCHEMA rows; copies and memsets are
    left out)."""
    kern = (gpu["kind"] == "kernel").to_numpy(dtype=bool)  # (a categorical compares its codes: no row copied)
    if not kern.any():
        return []
    d = _kernel_durations(gpu, kern)
    # (pandas' Series.sum of these, no NaN among them: numpy's pairwise sum of the same array,
    # without the mask and copy pandas' nansum makes)
    total = float(np.sum(d))
    del d  # (_by_codes reads the frame's column; _by_pandas its own copy again)
    table = _by_codes(gpu, kern, limit)
    if table is None:
        table = _by_pandas(gpu["name"], kern, _kernel_durations(gpu, kern), limit)
    names = [n for n, *_ in table]
    shorts = unique_short_names(names)
    return [{"name": n, "short_name": s, "count": c, "total_ms": t / 1e3, "share": t / total if total > 0 else None,
             "median_us": med, "mean_us": mean, "max_us": mx}
            for (n, c, t, mean, mx, med), s in zip(table, shorts, strict=True)]


Row = tuple[str, int, float, float, float, float]  # name, count, sum, mean, max, median


def _kernel_durations(gpu: pd.DataFrame, kern: np.ndarray) -> np.ndarray:
    """The kernels' durations, NaN and negative ones as 0 (fillna(0.0).clip(lower=0.0)), in the
    kernels' own copy: the frame's float64 column needs no coercion, and each pandas step copied
    10M kernels' 80 MB again."""
    d = gpu["dur_us"].to_numpy(dtype="float64")[kern]
    d[~(d >= 0.0)] = 0.0
    return d


def _by_pandas(name: pd.Series, kern: np.ndarray, d: np.ndarray, limit: int) -> list[Row]:
    """count, sum, mean, max per name by pandas' groupby (its sums are compensated), the `limit`
    names of most time; the median only for those, each its own rows' (groupby's median sorted
    every kernel's duration: at 10M kernels ~200 MB beside the frame)."""
    keys, vals, label = _keys(name, kern, d)
    g = pd.Series(vals, copy=False).groupby(keys, sort=False).agg(["count", "sum", "mean", "max"])
    g = g.sort_values(["sum", "count"], ascending=[False, False], kind="stable").head(limit)
    return [(label(k), int(r["count"]), float(r["sum"]), float(r["mean"]), float(r["max"]), _median(vals[keys == k]))
            for k, r in g.iterrows()]


def _runs(lab: np.ndarray, block: int = 1 << 18) -> int:
    """How many runs of one label the labels >= 0 make, in order (a block at a time)."""
    runs, last = 0, None
    for a in range(0, lab.size, block):
        b = lab[a:a + block]
        b = b[b >= 0]
        if b.size:
            runs += int(np.count_nonzero(b[1:] != b[:-1])) + (last is None or int(b[0]) != last)
            last = int(b[-1])
    return runs


def _by_codes(gpu: pd.DataFrame, kern: np.ndarray, limit: int) -> list[Row] | None:
    """_by_pandas's table without a copy of the kernels' durations or pandas' codes of them (~20
    bytes a kernel): a label per row (its name's, -1 for other rows), pandas' compensated sums
    by the C helper's one pass over the frame's own duration column (gpuscope._groupstats
    `moments`: the same operations in the same order as pandas' group_sum), and each shown
    name's max and median from its own rows. None where that is not pandas' answer to the bit:
    no C helper, names not a categorical, a duration NaN, negative or -0.0 (_by_pandas zeroes
    them), or each name's kernels in one run (pandas sums those another way)."""
    mod = native.load("groupstats")  # (GPUSCOPE_PURE_SCANNER=1 or not built: None)
    name = gpu["name"]
    if mod is None or not isinstance(name.dtype, pd.CategoricalDtype):
        return None
    dur = np.ascontiguousarray(gpu["dur_us"].to_numpy(dtype="float64"))
    step = 1 << 20
    for a in range(0, dur.size, step):  # (a block at a time: no full-length masks)
        x, k = dur[a:a + step], kern[a:a + step]
        if bool((k & (np.signbit(x) | ~(x >= 0.0))).any()):
            return None
    ids, texts = pd.factorize(np.array([str(c) for c in name.cat.categories], dtype=object))
    n = len(texts)
    lut = np.append(ids, -1).astype(np.int16 if n < 2**15 else np.int32 if n < 2**31 else np.int64)
    lab = lut[name.cat.codes.to_numpy()]  # (code -1, a missing name: lut's last, -1)
    lab[~kern] = -1
    order = first_come(lab)  # (pandas' groups: in the order the names first come)
    if not order.size or _runs(lab) == order.size:
        return None
    s_b, c_b, _, _, _ = mod.moments(lab, dur, n, 1)
    sums, counts = np.frombuffer(s_b, dtype=np.float64)[order], np.frombuffer(c_b, dtype=np.int64)[order]
    g = pd.DataFrame({"count": counts, "sum": sums, "mean": sums / counts}, index=order)
    g = g.sort_values(["sum", "count"], ascending=[False, False], kind="stable").head(limit)
    out = []
    for k, r in g.iterrows():
        x = dur[lab == k]
        out.append((str(texts[k]), int(r["count"]), float(r["sum"]), float(r["mean"]), float(x.max()), _median(x)))
    return out


def _median(x: np.ndarray) -> float:
    """groupby's median of one group's values (none NaN): the middle one, or the two middle ones'
    mean, (a + b) / 2, as pandas' selection takes it. A zero with its sign set among them (which of
    two equal zeros a selection returns is its own): pandas' groupby itself."""
    if bool((np.signbit(x) & (x == 0.0)).any()):
        return float(pd.Series(x).groupby(np.zeros(x.size, dtype=np.int8)).median().iloc[0])
    n = x.size
    k = n // 2
    x.partition(k)  # (x is this call's own gathered copy)
    return float(x[k]) if n % 2 else float((x[k] + x[:k].max()) / 2)


def _keys(name: pd.Series, rows: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, Callable]:
    """(key per kernel, its duration, key -> name): the kernels' (`rows` of the frame) grouping
    keys in the order the names first come; a missing name left out (as groupby leaves a NaN key).
    A categorical column is keyed by integers, one per distinct text of its categories (at 10M
    kernels an object array of the names was 80 MB and hashing its strings most of the table's
    time); the figures are the same rows' in the same order, so the same numbers."""
    if not isinstance(name.dtype, pd.CategoricalDtype):
        return name.astype(str).to_numpy()[rows], dur, str
    ids, texts = pd.factorize(np.array([str(c) for c in name.cat.categories], dtype=object))
    codes = name.cat.codes.to_numpy()[rows]
    named = codes >= 0
    every = bool(named.all())  # (then the durations as they are, not a masked copy)
    keys = (ids.astype(np.int32) if len(ids) < 2**31 else ids)[codes if every else codes[named]] if len(ids) else \
        codes[named]
    return keys, (dur if every else dur[named]), (lambda i: str(texts[i]))


def unique_short_names(names: list[str]) -> list[str]:
    """short_name of each; names that would read alike keep their template arguments."""
    shorts = [short_name(n) for n in names]
    seen: dict[str, int] = {}
    for s in shorts:
        seen[s] = seen.get(s, 0) + 1
    out = [short_name(n, templates=True) if seen[s] > 1 else s for n, s in zip(names, shorts, strict=True)]
    count: dict[str, int] = {}
    for i, s in enumerate(out):  # still alike (cut in the same place): numbered, in the table's order
        count[s] = count.get(s, 0) + 1
        if count[s] > 1:
            out[i] = f"{s} ({count[s]})"
    return out


def short_name(name: str, *, templates: bool = False, limit: int = SHORT_MAX) -> str:
    """A kernel's name as a reader takes it in: without its return type and parameter list,
    its template arguments as `<…>` (kept with `templates`), `(anonymous namespace)::` and
    leading namespaces dropped while it is too long, a mangled name's nested name read
    (`_ZN17cutlass__5x_cudnn6KernelI...` -> `cutlass__5x_cudnn::Kernel<…>`), at most `limit`
    characters (a cut leaves its head and tail around a `…`)."""
    s = name.strip()
    if s.startswith("_Z"):
        s = _mangled(s) or s
    s = re.sub(r"^(?:void|static|__global__)\s+", "", s)
    s = _drop_params(s)
    s = s.replace("(anonymous namespace)::", "")
    if not templates:
        s = _collapse_templates(s)
    while len(s) > limit and "::" in _outside_templates(s):
        s = s.split("::", 1)[1]
    if len(s) > limit:  # the head and the tail: template arguments and tile sizes differ at the end
        head = (limit - 1) * 3 // 5
        s = s[:head].rstrip() + "…" + s[len(s) - (limit - 1 - head):].lstrip()
    return s


def _drop_params(s: str) -> str:
    """Without the trailing top-level `(...)` (the parameter list)."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                head = s[:i].rstrip()
                return head if head and not head.endswith("::") else s
    return s


def _collapse_templates(s: str) -> str:
    """Top-level `<...>` as `<…>`."""
    out, depth = [], 0
    for c in s:
        if c == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def _outside_templates(s: str) -> str:
    return re.sub(r"<[^<>]*>", "", _collapse_templates(s))


def _mangled(s: str) -> str | None:
    """The nested name of an Itanium-mangled symbol (`_ZN<len><id>...E` or `_Z<len><id>`), with
    `<…>` where template arguments follow; None when it does not read."""
    m = re.match(r"_Z(N)?", s)
    assert m is not None
    i, nested = m.end(), bool(m.group(1))
    parts: list[str] = []
    while i < len(s):
        if s.startswith(("St", "Sa"), i) and not parts:
            parts.append("std")
            i += 2
            continue
        d = re.match(r"\d+", s[i:])
        if not d:
            break
        n = int(d.group())
        j = i + len(d.group())
        if n <= 0 or j + n > len(s):
            return None
        parts.append(s[j:j + n])
        i = j + n
        if not nested:
            break
    if not parts:
        return None
    tail = "<…>" if i < len(s) and s[i] == "I" else ""
    return "::".join(parts) + tail
