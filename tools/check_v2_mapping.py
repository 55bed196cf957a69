"""Check that `analyze --json` version 2 holds every figure and finding of version 1, each at its
v2 place (docs/ARCHITECTURE.md, "The JSON document": the mapping table below is that table).

    # 1. before the change, with main's tree: version-1 outputs of every input
    bash tools/dump_analyze_json.sh /tmp/v1out /work/main
    for f in /work/shared/data/nsight/*.sqlite; do n=nsight_$(basename $f .sqlite)
      /work/main/.venv/bin/gpuscope analyze $f --json > /tmp/v1out/$n.json 2> /tmp/v1out/$n.err
      echo "$? $f" >> /tmp/v1out/_rc.txt; done
    # 2. this tree: run the same inputs, compare through the mapping
    .venv/bin/python tools/check_v2_mapping.py /tmp/v1out [--v2-out /tmp/v2out] [--reuse] [--only SUBSTR]

Each difference is listed with its input; a difference that is a named correction (a trace's
`records: 0` gone with its log part; a split role no component has: null, not 0.0) is counted
under its name, anything else is listed as UNEXPLAINED and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: v1 top-level key -> its v2 path (a tuple of keys); "activity" depends on the source (see place())
LOG_KEYS = ("records", "steps_per_record", "read_notes", "incomplete_records", "skipped_lines", "total_lines",
            "timing_lines", "components", "split", "timeline", "bounds", "pcie", "roles", "whole")
TRACE_KEYS = ("memcpy", "memset", "kernels", "top_kernels", "idle_gaps", "phases", "trace")
MAPPING: dict[str, tuple[str, ...]] = {
    "format": ("source", "kind"), "source": ("source", "path"), "model": ("source", "model"),
    "vocabulary": ("source", "vocabulary"), "options": ("source", "options"),
    **{k: ("log", k) for k in LOG_KEYS},
    **{k: ("trace", k) for k in TRACE_KEYS},
    "diagnoses": ("findings",), "first_cause": ("first_cause",), "what_if": ("what_if",),
    "evidence": ("evidence",), "samples_read": ("samples", "read"), "nvml_activity": ("samples", "activity"),
    "ranks": ("ranks",), "benchmark_table": ("table",),
}
NO_LOG_KINDS = ("trace", "samples", "ranks", "benchmark_table")
SPLIT_ROLES = ("h2d", "gpu_compute", "cpu_stall", "d2h")


def place(v1: dict, key: str) -> tuple[str, ...]:
    """The v2 path of v1's `key`: `activity` was the trace's when the source had one (the
    samples' then moved to `nvml_activity`), else the samples'."""
    if key == "activity":
        return ("trace", "activity") if "trace" in v1 else ("samples", "activity")
    return MAPPING.get(key, ("?", key))


def get(doc, path: tuple[str, ...]):
    for k in path:
        if not isinstance(doc, dict) or k not in doc:
            return KeyError
        doc = doc[k]
    return doc


def diff(a, b, path: str, out: list[tuple[str, str, str]]) -> None:
    """Every leaf where a (v1) and b (v2) differ: (path, v1 value, v2 value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            diff(a[k], b.get(k, KeyError), f"{path}.{k}", out)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diff(x, y, f"{path}[{i}]", out)
        return
    if path.endswith(".seconds"):  # a wall time of the run itself (the ranks' reading), not a figure of the input
        return
    if a == b or (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-12 * max(1.0, abs(a))):
        return
    out.append((path, _short(a), _short(b)))


def _short(x) -> str:
    s = "(absent)" if x is KeyError else json.dumps(x)
    return s if len(s) < 100 else s[:97] + "..."


def correction(v1: dict, v2: dict, key: str, path: str, old: str, new: str) -> str | None:
    """The name of the correction a difference is, or None (unexplained)."""
    kind = v1.get("format")
    if key in LOG_KEYS and kind in NO_LOG_KINDS and v2.get("log") is None:
        return f"no log part for a {kind} source (v1 carried its empty log's {key})"
    if key == "split" and new == "null":
        field = path.rsplit(".", 1)[-1]
        role = field.rsplit("_", 1)[0]
        comps = (v2.get("log") or {}).get("components") or {}
        if role in SPLIT_ROLES and all(c.get("role") != role for c in comps.values()):
            return "split role no component has: null, not 0 (not printed)"
    return None


def compare(v1: dict, v2: dict) -> tuple[list[str], Counter]:
    unexplained: list[str] = []
    corrections: Counter = Counter()
    if v2.get("version") != 2:
        return [f"version {v2.get('version')!r}, not 2"], corrections
    for key, value in v1.items():
        where = place(v1, key)
        got = get(v2, where)
        out: list[tuple[str, str, str]] = []
        diff(value, got, ".".join(where), out)
        for path, old, new in out:
            name = correction(v1, v2, key, path, old, new)
            if name is None:
                unexplained.append(f"{key} -> {path}: {old} -> {new}")
            else:
                corrections[name] += 1
    return unexplained, corrections


def inputs(v1dir: Path) -> list[tuple[str, list[str], str]]:
    """(name, analyze arguments, output stem) of each input dump_analyze_json.sh ran."""
    out = []
    for line in (v1dir / "_rc.txt").read_text().splitlines():
        rc, _, rest = line.partition(" ")
        if rest.startswith("pair "):
            n = rest.split()[1]
            out.append((rest, [f"tests/data/h200_bounds/runs/{n}", "--trace",
                               f"tests/data/h200_bounds/traces/{n}.json.gz"], f"pair_{n}"))
        elif rest.startswith("/"):  # an Nsight export named by its absolute path
            out.append((rest, [rest], "nsight_" + Path(rest).name.removesuffix(".sqlite")))
        else:
            out.append((rest, [rest], rest.replace("/", "_")))
    return out


def run_v2(args: list[str], dest: Path, stem: str) -> int:
    gs = ROOT / ".venv" / "bin" / "gpuscope"
    with open(dest / f"{stem}.json", "w") as f, open(dest / f"{stem}.err", "w") as e:
        p = subprocess.run([str(gs), "analyze", *args, "--json"], cwd=ROOT, stdout=f, stderr=e, timeout=300)
    return p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("v1dir", type=Path)
    ap.add_argument("--v2-out", type=Path, default=Path("/tmp/v2out"))
    ap.add_argument("--reuse", action="store_true", help="compare the outputs already in --v2-out")
    ap.add_argument("--only", help="inputs whose name contains this")
    ns = ap.parse_args()
    ns.v2_out.mkdir(parents=True, exist_ok=True)
    rcs = {line.partition(" ")[2]: line.partition(" ")[0] for line in (ns.v1dir / "_rc.txt").read_text().splitlines()}
    total: Counter = Counter()
    bad = checked = 0
    for name, args, stem in inputs(ns.v1dir):
        if ns.only and ns.only not in name:
            continue
        rc2 = int((ns.v2_out / f"{stem}.rc").read_text()) if ns.reuse else run_v2(args, ns.v2_out, stem)
        (ns.v2_out / f"{stem}.rc").write_text(str(rc2))
        checked += 1
        if str(rc2) != rcs[name]:
            print(f"== {name}: exit {rcs[name]} -> {rc2}: UNEXPLAINED")
            bad += 1
            continue
        if rc2 != 0:
            continue  # the same refusal (its one line is the CLI's, unchanged)
        v1 = json.loads((ns.v1dir / f"{stem}.json").read_text())
        v2 = json.loads((ns.v2_out / f"{stem}.json").read_text())
        unexplained, corr = compare(v1, v2)
        total.update(corr)
        for c, n in sorted(corr.items()):
            print(f"== {name}: correction x{n}: {c}")
        for u in unexplained:
            print(f"== {name}: UNEXPLAINED {u}")
        bad += bool(unexplained)
    print(f"\n{checked} inputs checked; {bad} with unexplained differences")
    for c, n in sorted(total.items()):
        print(f"  correction, {n} figure(s): {c}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
