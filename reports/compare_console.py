"""Rich renderables for `compare` and the what-if projection.

Inputs are the JSON documents (Comparison.to_json(), typed once as compare.document.CompareDoc, so
mypy checks every key read here; WhatIf.to_json()), so the console and `--json` always show the
same numbers; labels, sources, names and notes from the inputs are
shown literally (reports.safe_text). No parsing, no GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from gpuscope.linerate import source_text
from gpuscope.reports.numbers import cms as _ms
from gpuscope.reports.numbers import gbs as _gbs
from gpuscope.reports.numbers import is_num as _n
from gpuscope.reports.numbers import num as _num
from gpuscope.reports.numbers import pct as _pct
from gpuscope.reports.numbers import rms as _r
from gpuscope.reports.numbers import secs as _secs
from gpuscope.reports.numbers import signed_pct as _err
from gpuscope.reports.safe_text import LiteralTable, name, text, visible

if TYPE_CHECKING:
    from gpuscope.analysis.compare.document import CompareDoc, PredictionDoc, SideDoc
    from gpuscope.analysis.document import PciePhaseDoc

MAX_COMPONENTS = 20


def _table(title: str):
    """The compare tables' look: the analyze tables' (a rule under the header, no frame)."""
    from rich import box

    return LiteralTable(title=title, title_justify="left", caption_justify="left", box=box.SIMPLE_HEAD,
                        pad_edge=False, padding=(0, 1), collapse_padding=True)


def components_table(doc: CompareDoc, limit: int = MAX_COMPONENTS):
    a, b = doc["a"]["label"], doc["b"]["label"]
    t = _table(f"Components (ms): median and p10-p90; ratio B/A = {b}/{a} with 95% bootstrap CI")
    t.add_column("component")  # a long name breaks between its words (safe_text.name)
    t.add_column("A", justify="right", no_wrap=True)
    t.add_column("p10-p90", justify="right", no_wrap=True, style="dim", min_width=9)
    t.add_column("B", justify="right", no_wrap=True)
    t.add_column("p10-p90", justify="right", no_wrap=True, style="dim", min_width=9)
    t.add_column("B/A", justify="right", no_wrap=True)
    t.add_column("95% CI", justify="right", no_wrap=True, min_width=9)
    t.add_column("", no_wrap=True, width=1)  # "*": the interval excludes 1
    rows = [(k, v) for k, v in (doc.get("components") or {}).items() if v.get("a_count") and v.get("b_count")]
    for comp, r in rows[:limit]:
        # a change beyond the noise: marked in text (survives a pipe, no colour) and in bold
        lo, hi = r["ci_low"], r["ci_high"]
        beyond = lo is not None and hi is not None and _n(lo) and _n(hi) and (lo > 1 or hi < 1)
        t.add_row(
            name(comp),
            _ms(r["a_median_ms"]),
            f"{_r(r['a_p10_ms'])}-{_r(r['a_p90_ms'])}",
            _ms(r["b_median_ms"]),
            f"{_r(r['b_p10_ms'])}-{_r(r['b_p90_ms'])}",
            _num(r["ratio"], 2),
            _ci(lo, hi, beyond),
            "*" if beyond else "",
            style="bold" if beyond else None,
        )
    mark = "*: the 95% interval excludes 1 (a change beyond the run-to-run noise)"
    t.caption = f"{len(rows) - limit} more components in --json; {mark}" if len(rows) > limit else mark
    t.caption_justify = "left"
    return t


def _ci(lo: Any, hi: Any, beyond: bool) -> str:
    """`lo-hi` with 2 decimals; a bound of an interval that excludes 1 keeps the digits that
    show it (0.998, not 1.00); `-` when the interval is unknown."""
    if not (_n(lo) and _n(hi)):
        return "-"

    def one(v: float) -> str:
        t = f"{v:.2f}"
        if beyond and t == "1.00":
            t = f"{v:.3f}" if f"{v:.3f}" != "1.000" else ("<1" if v < 1 else ">1")
        return t

    return f"{one(lo)}-{one(hi)}"


def _words(side: SideDoc | None) -> dict:
    """A side's vocabulary (compare.Side.vocabulary); the CuZK prover's when it has none."""
    v = side.get("vocabulary") if side is not None else None
    if isinstance(v, dict) and v.get("units"):
        return v
    return {"records": "tenures", "unit": "partition", "units": "partitions", "held": "mutex_held", "lock": True,
            "cuzk": True}


def run_table(doc: CompareDoc):

    a, b = doc["a"], doc["b"]
    w = _words(a)
    t = _table("Run")
    t.add_column("")
    t.add_column(f"A {a['label']}", justify="right")
    t.add_column(f"B {b['label']}", justify="right")
    t.add_row(f"{w['units']} (complete {w['records']})" if w["units"] != w["records"] else f"complete {w['records']}",
              str(a["partitions"]), str(b["partitions"]))
    t.add_row(f"throughput ({w['units']}/min)", _num(a["throughput_ppm"], 1), _num(b["throughput_ppm"], 1))
    t.add_row("GPU lock held (share of span)" if w.get("lock") else f"share of the span inside {w['records']}",
              _pct(a["lock_held_fraction"]), _pct(b["lock_held_fraction"]))
    if (_n(a.get("sm_active_mean")) or _n(b.get("sm_active_mean"))) and not (a.get("activity") or b.get("activity")):
        # (with samples, the GPU activity table below gives it, time-weighted, with the rest)
        t.add_row("SM activity (NVML GPM, mean)", _pct(a.get("sm_active_mean")), _pct(b.get("sm_active_mean")))
    if any(_n(x) for x in (a["upload_ms_median"], b["upload_ms_median"], a["upload_gbs"], b["upload_gbs"])):
        t.add_row(f"upload ({a.get('upload_field') or b.get('upload_field') or '-'}) median ms",
                  _ms(a["upload_ms_median"]), _ms(b["upload_ms_median"]))
        t.add_row("upload rate", _gbs(a["upload_gbs"]), _gbs(b["upload_gbs"]))
    none: PciePhaseDoc = {}
    phases = sorted(set(a.get("pcie_per_phase") or {}) | set(b.get("pcie_per_phase") or {}))
    for ph in phases:
        pa = (a.get("pcie_per_phase") or {}).get(ph, none)
        pb = (b.get("pcie_per_phase") or {}).get(ph, none)
        t.add_row("PCIe RX outside the phases" if ph == "(none)" else f"PCIe RX during {ph}",
                  _gbs(_rx(pa)), _gbs(_rx(pb)))
        if any(_tx_dominates(r) for r in (pa, pb)):
            # bytes going the other way dominate (a read-back phase): its TX, the direction that moved
            t.add_row("PCIe TX outside the phases" if ph == "(none)" else f"PCIe TX during {ph}",
                      _gbs(_rx(pa, "tx")), _gbs(_rx(pb, "tx")))
    return t


def _tx_dominates(row: PciePhaseDoc) -> bool:
    """Bytes going the other way dominate the phase: its TX measured and above its RX (or RX not measured)."""
    rx, tx = _rx(row), _rx(row, "tx")
    if tx is None or not _n(tx):
        return False
    return rx is None or not _n(rx) or tx > rx


def _rx(row: PciePhaseDoc, direction: str = "rx") -> float | None:
    """The median PCIe rate of a phase in one direction (GB/s), None when not measured."""
    return row.get("rx_gbs_median") if direction == "rx" else row.get("tx_gbs_median")


def prediction_table(pred: PredictionDoc, words: dict | None = None):

    v = words or _words(None)
    w = pred.get("whatif") or {}
    t = _table(f"What-if (pinned uploads at {_num(pred.get('line_rate_gbs'), 1)} GB/s), "
               f"predicted from {pred.get('from_label') or pred.get('from')} against the measured {pred.get('against')}")
    t.add_column("")
    t.add_column("predicted", justify="right")
    t.add_column("measured", justify="right")
    t.add_column("error", justify="right")
    t.add_row(f"{v['held']} median (ms)", _ms(pred.get("held_ms_predicted")), _ms(pred.get("held_ms_measured")),
              _err(pred.get("held_error")))
    if "held_mean_ms_predicted" in pred:
        t.add_row(f"{v['held']} mean (ms)", _ms(pred.get("held_mean_ms_predicted")),
                  _ms(pred.get("held_mean_ms_measured")), _err(pred.get("held_mean_error")))
    t.add_row(f"throughput ({v['units']}/min)", _num(pred.get("throughput_ppm_predicted"), 1),
              _num(pred.get("throughput_ppm_measured"), 1), _err(pred.get("throughput_error")))
    sp, sm = pred.get("stalled_predicted"), pred.get("stalled_measured")
    if sp and sm and None not in sp and v.get("cuzk"):
        t.add_row("tenures stalled at the barrier", f"{sp[0]} of {sp[1]}", f"{sm[0]} of {sm[1]}", "")
    if w.get("notes"):
        t.caption = "; ".join(w["notes"])
    return t


ACTIVITY_SOURCE = {"gpm_sm_active": "GPM SM activity", "utilization": "utilization.gpu", "trace": "profiler trace"}
ACTIVITY_ROWS = (
    ("source", "activity from", "str"), ("span_s", "span", "s"),
    ("busy_fraction", "GPU busy, whole span", "pct"), ("working_busy_fraction", "GPU busy, working time", "pct"),
    ("idle_fraction", "no compute, working time", "pct"), ("copy_fraction", "copying, working time", "pct"),
    ("idle_total_s", "idle gaps total", "s"),
    ("idle_longest_s", "longest idle gap", "s"), ("rx_p90_gbs", "PCIe RX p90 (GB/s)", "x1"),
    ("tx_p90_gbs", "PCIe TX p90 (GB/s)", "x1"),
    ("time_near_line_rate_s", "time near the line rate", "s"),
)


def activity_table(doc: CompareDoc):
    """The two sides' GPU activity (NVML samples or a profiler trace), when either has it."""

    fa, fb = doc["a"].get("activity"), doc["b"].get("activity")
    if not fa and not fb:
        return None
    a: dict[str, Any] = dict(fa or {})  # (read by the row table's keys below)
    b: dict[str, Any] = dict(fb or {})
    t = _table("GPU activity")
    t.add_column("")
    t.add_column(f"A {doc['a']['label']}", justify="right")
    t.add_column(f"B {doc['b']['label']}", justify="right")
    fmt = {"pct": _pct, "s": _secs, "x1": lambda v: _num(v, 1),
           "str": lambda v: ACTIVITY_SOURCE.get(v, str(v or "-"))}
    for key, label, kind in ACTIVITY_ROWS:
        if a.get(key) is not None or b.get(key) is not None:
            t.add_row(label, fmt[kind](a.get(key)), fmt[kind](b.get(key)))
    srcs = {a.get("source"), b.get("source")} - {None}
    notes = []
    if srcs - {"trace"}:
        notes.append("no compute = SM activity under 5%, copying = PCIe RX or TX busy (samples)")
    if "trace" in srcs:
        notes.append("no compute = no kernel, memset or device copy running, copying = a host copy running, idle gaps = nothing running (trace)")
    if "trace" not in srcs:
        notes.append("sample readings follow one another closely: no bootstrap interval for these")
    t.caption = "; ".join(notes)
    t.caption_justify = "left"
    return t


def copies_table(doc: CompareDoc):
    """A profiler trace's copies by direction and host memory, side by side."""

    ra, rb = doc["a"].get("memcpy") or [], doc["b"].get("memcpy") or []
    if not ra and not rb:
        return None
    keys = sorted({(r["direction"], r["host_memory"]) for r in ra + rb})
    t = _table("Copies (profiler trace)")
    for col in ("direction", "host memory", "A count", "A GB/s", "B count", "B GB/s"):
        t.add_column(col, justify="left" if col in ("direction", "host memory") else "right")
    for d, m in keys:
        x = next((r for r in ra if (r["direction"], r["host_memory"]) == (d, m)), None)
        y = next((r for r in rb if (r["direction"], r["host_memory"]) == (d, m)), None)
        t.add_row(d, m, str(x["count"]) if x else "-", _num(x["gbs"] if x else None, 1),
                  str(y["count"]) if y else "-", _num(y["gbs"] if y else None, 1))
    return t


def compare_renderables(doc: CompareDoc, *, limit: int = MAX_COMPONENTS) -> list:
    """The compare report, in reading order: what the terminal prints and the HTML page shows."""
    out: list = [Text("gpuscope compare", style="bold")]
    for k in ("a", "b"):  # the sources here, not in a table column they would stretch
        side = doc[k]
        src = side.get("source")
        out.append(Text(f"  {k.upper()} = {visible(side['label'])}" + (f": {visible(src)}" if src else "")))
    common = [k for k, v in (doc.get("components") or {}).items() if v.get("a_count") and v.get("b_count")]
    if common:
        out.append(components_table(doc, limit))
    elif doc.get("components"):  # (a log beside a trace or samples: nothing printed on both sides)
        out.append(Text("Components: none printed on both sides (nothing to set side by side)"))
    if any(side.get("format") not in ("trace", "samples") for side in (doc["a"], doc["b"])):
        out.append(run_table(doc))
    for extra in (activity_table(doc), copies_table(doc)):
        if extra is not None:
            out.append(extra)
    pred = doc.get("prediction")
    if pred and pred.get("available", True):
        out.append(prediction_table(pred, _words(doc["a"])))
    elif pred:
        out.append(text(f"what-if: not available ({pred.get('reason')})"))
    out.extend(text(f"note: {n}") for n in doc.get("notes") or [])
    out.append(Text.assemble(("Verdict:", "bold"), " ", visible(doc["verdict"], newlines=True)))
    return out


def render_compare(doc: CompareDoc, console, *, limit: int = MAX_COMPONENTS) -> None:
    for r in compare_renderables(doc, limit=limit):
        console.print(r)


def whatif_table(w: dict, words: dict | None = None):

    v = words or _words(None)
    m, p, f = w["measured"], w["predicted"], w["floors"]
    t = _table(f"What-if: pinned uploads at {_num(w['line_rate_gbs'], 1)} GB/s "
               f"({source_text(w['line_rate_source'])}), "
               f"{w['bytes_per_partition'] / 2**30:.2f} GiB per {v['unit']} ({w['bytes_source']}), "
               f"{w['workers']} workers")
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
    t.add_row(f"throughput ({v['units']}/min)", _num(m["throughput_ppm"], 1), _num(p["throughput_ppm"], 1))
    t.add_row("GPU lock held share" if v.get("lock") else f"share of the span inside {v['records']}",
              _pct(m["gpu_busy_fraction"]), _pct(p["gpu_busy_fraction"]))
    t.add_row("GPU compute share", "-", _pct(p["gpu_compute_fraction"]))
    floors = f"GPU floor {_num(f['gpu_floor_s'], 1)} s"
    if _n(f.get("cpu_floor_s")):
        floors += f", CPU floor {_num(f['cpu_floor_s'], 1)} s"
    floors += f": {f['binding'].upper()}-bound"
    mc = w.get("model_check") or {}
    check = (f"; the model replays the measured run at {_err(mc.get('throughput_error'))} throughput error"
             if _n(mc.get("throughput_error")) else "")
    t.caption = floors + check + ("; " + "; ".join(w["notes"]) if w.get("notes") else "")
    return t


def render_whatif_doc(doc: dict, console, words: dict | None = None) -> None:
    """`analyze --what-if`: the projection, or why it is not available."""
    if not doc.get("available"):
        console.print(text(f"what-if: not available ({doc.get('reason')})"))
        return
    render_whatif(doc, console, words)


def whatif_renderables(w: dict, words: dict | None = None) -> list:
    """The what-if projection's table and its sentence (the console's and the page's)."""
    v = words or _words(None)
    out: list = [whatif_table(w, v)]
    p = w["predicted"]
    if _n(p.get("held_speedup")):
        sp = p.get("throughput_speedup")
        out.append(Text.assemble(("What-if:", "bold"), visible(
            f" pinned uploads would cut {v['held']} {p['held_speedup']:.1f}x"
            + (f" and raise throughput {sp:.1f}x" if _n(sp) else ""))))
    return out


def render_whatif(w: dict, console, words: dict | None = None) -> None:
    for r in whatif_renderables(w, words):
        console.print(r)
