"""Rich renderables for `compare` and the what-if projection.

Inputs are the JSON documents (Comparison.to_json(), WhatIf.to_json()), so the console and
`--json` always show the same numbers. No parsing, no GPU.
"""

from __future__ import annotations

import math
from typing import Any

from gpuscope.linerate import source_text

MAX_COMPONENTS = 20


def _n(v: Any) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)


def _ms(v: Any) -> str:
    if not _n(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def _r(v: Any) -> str:
    """Compact ms for ranges: no thousands separator."""
    if not _n(v):
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


def _x(v: Any, digits: int = 2) -> str:
    return f"{v:.{digits}f}" if _n(v) else "-"


def _pct(v: Any) -> str:
    return f"{v * 100:.1f}%" if _n(v) else "-"


def _err(v: Any) -> str:
    return f"{v * 100:+.1f}%" if _n(v) else "-"


def _gbs(v: Any) -> str:
    return f"{v:.1f} GB/s" if _n(v) else "-"


def components_table(doc: dict, limit: int = MAX_COMPONENTS):
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    a, b = doc["a"]["label"], doc["b"]["label"]
    t = Table(title=escape(f"Components (ms): median and p10-p90; ratio B/A = {b}/{a} with 95% bootstrap CI"),
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    t.add_column("component", overflow="ellipsis", max_width=18, no_wrap=True)
    t.add_column("A", justify="right", no_wrap=True)
    t.add_column("p10-p90", justify="right", no_wrap=True, style="dim", min_width=9)
    t.add_column("B", justify="right", no_wrap=True)
    t.add_column("p10-p90", justify="right", no_wrap=True, style="dim", min_width=9)
    t.add_column("B/A", justify="right", no_wrap=True)
    t.add_column("95% CI", justify="right", no_wrap=True, min_width=9)
    rows = [(k, v) for k, v in doc["components"].items() if v.get("a_count") and v.get("b_count")]
    for name, r in rows[:limit]:
        style = None
        if _n(r["ci_low"]) and _n(r["ci_high"]) and (r["ci_low"] > 1 or r["ci_high"] < 1):
            style = "bold"
        t.add_row(
            escape(name),
            _ms(r["a_median_ms"]),
            f"{_r(r['a_p10_ms'])}-{_r(r['a_p90_ms'])}",
            _ms(r["b_median_ms"]),
            f"{_r(r['b_p10_ms'])}-{_r(r['b_p90_ms'])}",
            _x(r["ratio"]),
            f"{_x(r['ci_low'])}-{_x(r['ci_high'])}",
            style=style,
        )
    if len(rows) > limit:
        t.caption = f"{len(rows) - limit} more components in --json; bold: the interval excludes 1"
    else:
        t.caption = "bold: the interval excludes 1"
    return t


def _words(side: dict) -> dict:
    """A side's vocabulary (compare.Side.vocabulary); the CuZK prover's when it has none."""
    v = side.get("vocabulary")
    if isinstance(v, dict) and v.get("units"):
        return v
    return {"records": "tenures", "unit": "partition", "units": "partitions", "held": "mutex_held", "lock": True,
            "cuzk": True}


def run_table(doc: dict):
    from rich.markup import escape
    from rich.table import Table

    a, b = doc["a"], doc["b"]
    w = _words(a)
    t = Table(title="Run", title_justify="left")
    t.add_column("")
    t.add_column(escape(f"A {a['label']}"), justify="right")
    t.add_column(escape(f"B {b['label']}"), justify="right")
    t.add_row("source", escape(str(a.get("source") or "-")), escape(str(b.get("source") or "-")))
    t.add_row(f"{w['units']} (complete {w['records']})", str(a["partitions"]), str(b["partitions"]))
    t.add_row(f"throughput ({w['units']}/min)", _x(a["throughput_ppm"], 1), _x(b["throughput_ppm"], 1))
    t.add_row("GPU busy" if w.get("lock") else f"share of the span inside {w['records']}",
              _pct(a["gpu_busy_fraction"]), _pct(b["gpu_busy_fraction"]))
    t.add_row(f"upload ({a.get('upload_field') or '-'}) median ms", _ms(a["upload_ms_median"]), _ms(b["upload_ms_median"]))
    t.add_row("upload rate", _gbs(a["upload_gbs"]), _gbs(b["upload_gbs"]))
    phases = sorted(set(a.get("pcie_per_phase") or {}) | set(b.get("pcie_per_phase") or {}))
    for ph in phases:
        pa = (a.get("pcie_per_phase") or {}).get(ph, {})
        pb = (b.get("pcie_per_phase") or {}).get(ph, {})
        t.add_row(f"PCIe RX during {ph}", _gbs(_rx(pa)), _gbs(_rx(pb)))
    return t


def _rx(row: dict) -> Any:
    for k in ("rx_gbs_median", "rx_gbs", "rx_median_gbs"):
        if k in row:
            return row[k]
    return None


def prediction_table(pred: dict, words: dict | None = None):
    from rich.markup import escape
    from rich.table import Table

    v = words or _words({})
    w = pred.get("whatif") or {}
    t = Table(title=escape(f"What-if (pinned uploads at {_x(pred.get('line_rate_gbs'), 1)} GB/s), "
                           f"predicted from {pred.get('from')} against the measured {pred.get('against')}"),
              title_justify="left")
    t.add_column("")
    t.add_column("predicted", justify="right")
    t.add_column("measured", justify="right")
    t.add_column("error", justify="right")
    t.add_row(f"{v['held']} median (ms)", _ms(pred.get("held_ms_predicted")), _ms(pred.get("held_ms_measured")),
              _err(pred.get("held_error")))
    if "held_mean_ms_predicted" in pred:
        t.add_row(f"{v['held']} mean (ms)", _ms(pred.get("held_mean_ms_predicted")),
                  _ms(pred.get("held_mean_ms_measured")), _err(pred.get("held_mean_error")))
    t.add_row(f"throughput ({v['units']}/min)", _x(pred.get("throughput_ppm_predicted"), 1),
              _x(pred.get("throughput_ppm_measured"), 1), _err(pred.get("throughput_error")))
    sp, sm = pred.get("stalled_predicted"), pred.get("stalled_measured")
    if sp and sm and None not in sp and v.get("cuzk"):
        t.add_row("tenures stalled at the barrier", f"{sp[0]} of {sp[1]}", f"{sm[0]} of {sm[1]}", "")
    if w.get("notes"):
        t.caption = escape("; ".join(w["notes"]))
    return t


def render_compare(doc: dict, console, *, limit: int = MAX_COMPONENTS) -> None:
    from rich.markup import escape

    console.print(f"[bold]gpuscope compare[/bold]  A = {escape(doc['a']['label'])}   B = {escape(doc['b']['label'])}")
    console.print(components_table(doc, limit))
    console.print(run_table(doc))
    pred = doc.get("prediction")
    if pred and pred.get("available", True):
        console.print(prediction_table(pred, _words(doc["a"])))
    elif pred:
        console.print(escape(f"what-if: not available ({pred.get('reason')})"))
    for n in doc.get("notes") or []:
        console.print(escape(f"note: {n}"))
    console.print(f"[bold]Verdict:[/bold] {escape(doc['verdict'])}")


def whatif_table(w: dict, words: dict | None = None):
    from rich.markup import escape
    from rich.table import Table

    v = words or _words({})
    m, p, f = w["measured"], w["predicted"], w["floors"]
    t = Table(title=escape(f"What-if: pinned uploads at {_x(w['line_rate_gbs'], 1)} GB/s ({source_text(w['line_rate_source'])}), "
                     f"{w['bytes_per_partition'] / 2**30:.2f} GiB per {v['unit']} ({w['bytes_source']}), "
                     f"{w['workers']} workers"),
              title_justify="left")
    t.add_column("")
    t.add_column("measured", justify="right")
    t.add_column("predicted", justify="right")
    t.add_row(f"upload ({w['upload_field']}) ms", _ms(m["upload_ms_median"]), _ms(p["upload_ms"]))
    t.add_row("upload rate", _gbs(m["upload_gbs"]), _gbs(w["line_rate_gbs"]))
    t.add_row(f"{v['held']} median (ms)", _ms(m["held_ms_median"]),
              f"{_ms(p['held_ms_median'])} [{_ms(p['held_ms_p10'])}-{_ms(p['held_ms_p90'])}]")
    if "held_ms_mean" in p:
        t.add_row(f"{v['held']} mean (ms)", _ms(m.get("held_ms_mean")), _ms(p["held_ms_mean"]))
    if v.get("cuzk"):
        t.add_row("barrier_wait median (ms)", _ms(m["barrier_ms_median"]), _ms(p["barrier_ms_median"]))
    if "stalled_tenures" in p and v.get("cuzk"):
        n = w.get("partitions")
        t.add_row("tenures stalled at the barrier", f"{m.get('stalled_tenures')} of {n}", f"{p['stalled_tenures']} of {n}")
    t.add_row(f"throughput ({v['units']}/min)", _x(m["throughput_ppm"], 1), _x(p["throughput_ppm"], 1))
    t.add_row("GPU lock held share" if v.get("lock") else f"share of the span inside {v['records']}",
              _pct(m["gpu_busy_fraction"]), _pct(p["gpu_busy_fraction"]))
    t.add_row("GPU compute share", "-", _pct(p["gpu_compute_fraction"]))
    floors = f"GPU floor {_x(f['gpu_floor_s'], 1)} s"
    if _n(f.get("cpu_floor_s")):
        floors += f", CPU floor {_x(f['cpu_floor_s'], 1)} s"
    floors += f": {f['binding'].upper()}-bound"
    mc = w.get("model_check") or {}
    check = (f"; the model replays the measured run at {_err(mc.get('throughput_error'))} throughput error"
             if _n(mc.get("throughput_error")) else "")
    t.caption = escape(floors + check + ("; " + "; ".join(w["notes"]) if w.get("notes") else ""))
    return t


def render_whatif(w: dict, console, words: dict | None = None) -> None:
    v = words or _words({})
    console.print(whatif_table(w, v))
    p = w["predicted"]
    if _n(p.get("held_speedup")):
        sp = p.get("throughput_speedup")
        console.print(f"[bold]What-if:[/bold] pinned uploads would cut {v['held']} {p['held_speedup']:.1f}x"
                      + (f" and raise throughput {sp:.1f}x" if _n(sp) else ""))
