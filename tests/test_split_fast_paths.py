"""The split's fast paths give the plain path's tables bit for bit: the regular grid (a
reshaped view of the parser's values) against the general sum per (record, component), and
split_table's shared and in-place sums against the sums as the split first wrote them (zeros
plus each part, NaN counted as 0, a fresh array per step)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscope.analysis.evidence.log import split
from gpuscope.analysis.evidence.log.table import Table
from gpuscope.rolemodel import SPLIT_ROLES, load_model
from gpuscope.schemas import COMPONENT_COLUMNS, RECORD_COLUMNS, Columns

MODEL = load_model()
NAMES = ["mutex_held", "ntt_kernels", "h2d", "msm_invoke", "d_b_alloc", "barrier_wait", "mutex_wait", "prep_msm"]


def _log(rng, n_rec: int, p: int, regular: bool, values: str, int_width):
    """Components and records of n_rec records printing the first p of NAMES (regular: each
    once, in order; else some left out, repeated, on GPUs or tied to no record)."""
    rows = []
    for r in range(n_rec):
        if regular:
            rows += [(r, -1, c) for c in range(p)]
        else:
            for c in range(p):
                for _ in range(int(rng.integers(0, 3))):
                    rows.append((r if rng.random() > 0.05 else -1, int(rng.integers(-1, 2)), c))
    if not rows:
        rows = [(0, -1, 0)]
    rec, gpu, code = (np.array(x) for x in zip(*rows, strict=True))
    m = len(rec)
    v = {"plain": np.round(rng.uniform(0, 500, m), 1), "nan": np.where(rng.random(m) < 0.2, np.nan, rng.normal(50, 20, m)),
         "zeros": rng.choice([0.0, -0.0, 3.0, np.nan], m), "inf": rng.choice([np.inf, 1.0, 2.0], m)}[values]
    comps = Columns(COMPONENT_COLUMNS, {"record": rec.astype(int_width), "gpu": gpu.astype(int_width),
                                        "component": code.astype(np.int32), "value_ms": v},
                    cats={"component": NAMES[:p]})
    complete = rng.random(n_rec) > (0.0 if regular else 0.2)
    records = Columns(RECORD_COLUMNS, {
        "record": np.arange(n_rec).astype(int_width), "first_line": np.arange(n_rec).astype(int_width),
        "last_line": np.arange(n_rec).astype(int_width) + 1, "ts_start": rng.random(n_rec), "ts_end": rng.random(n_rec),
        "n_gpus": rng.integers(1, 3, n_rec).astype(int_width), "held_ms": rng.choice([np.nan, 100.0, 800.0, 0.0], n_rec),
        "complete": complete})
    return comps, records


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))
    return np.array_equal(a, b)


def _plain_split(records, wide: Table, model) -> dict:
    """split_table as it was first written: a fresh array per step."""
    complete = np.asarray(records["complete"], dtype=bool)
    zero_nan = lambda x: np.where(np.isnan(x), 0.0, x)  # noqa: E731
    n = int(complete.sum())
    sums = {role: np.zeros(n) for role in SPLIT_ROLES}
    for col in wide.columns:
        role = model.role_of(col)
        if role not in SPLIT_ROLES:
            continue
        values, spec = wide[col], model.contains.get(col)
        if spec is not None and spec.inner in wide:
            inner = wide[spec.inner]
            both = ~np.isnan(values) & ~np.isnan(inner)
            with np.errstate(invalid="ignore"):
                remainder = np.clip(values - inner, 0.0, None)
            sums[spec.remainder_role] = sums[spec.remainder_role] + np.where(both, remainder, 0.0)
            sums[role] = sums[role] + zero_nan(np.where(~both, values, 0.0))
        else:
            sums[role] = sums[role] + zero_nan(values)
    held = records["held_ms"][complete].astype("float64")
    parts = sums["h2d"] + sums["gpu_compute"] + sums["cpu_stall"] + sums["d2h"]
    raw = held - parts
    with np.errstate(invalid="ignore"):
        return {"held_ms": held, "h2d_ms": sums["h2d"], "gpu_compute_ms": sums["gpu_compute"],
                "cpu_stall_ms": sums["cpu_stall"], "d2h_ms": sums["d2h"], "other_ms": np.clip(raw, 0.0, None),
                "parts_ms": parts, "excess_ms": np.clip(-raw, 0.0, None), "inconsistent": raw < 0,
                "record": records["record"][complete], "first_line": records["first_line"][complete]}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60), st.integers(1, len(NAMES)), st.booleans(), st.sampled_from(["plain", "nan", "zeros", "inf"]),
       st.sampled_from([np.int32, np.int64]), st.integers(0, 2**32 - 1))
def test_fast_split_is_the_plain_split(n_rec, p, regular, values, int_width, seed):
    rng = np.random.default_rng(seed)
    comps, records = _log(rng, n_rec, p, regular, values, int_width)
    wide = split.wide_table(comps, records)
    real = split._regular_grid
    split._regular_grid = lambda *a: None  # the general path: a sum per (record, component)
    try:
        plain_wide = split.wide_table(comps, records)
    finally:
        split._regular_grid = real
    assert wide.columns == plain_wide.columns and np.array_equal(wide.index, plain_wide.index)
    for c in wide.columns:
        assert _same(wide[c], plain_wide[c]), c
    t = split.split_table(records, wide, MODEL)
    for c, ref in _plain_split(records, wide, MODEL).items():
        assert _same(t[c], ref), c


def test_a_regular_log_shares_the_parsers_values():
    """A regular log's wide columns are read-only views of the parser's value column; a
    part of one component is that column, a part of none the shared zeros."""
    rng = np.random.default_rng(3)
    comps, records = _log(rng, 50, 6, True, "plain", np.int64)
    wide = split.wide_table(comps, records)
    assert np.shares_memory(wide["h2d"], comps["value_ms"]) and not wide["h2d"].flags.writeable
    t = split.split_table(records, wide, MODEL)
    assert np.shares_memory(t["cpu_stall_ms"], comps["value_ms"])  # barrier_wait alone
    assert not t["d2h_ms"].any() and not t["d2h_ms"].flags.writeable  # (the shared zeros)
    assert np.shares_memory(t["held_ms"], records["held_ms"])
