#!/usr/bin/env python3
"""The first findings gpuscope names for every source of a bounds capture (the folder
tools/gpu_capture_bounds.sh packs, or tests/data/h200_bounds): per program, its recording
(runs/NAME), its nvidia-smi captures (smi/NAME_dmon.txt, smi/NAME_query.csv) and its
profiler trace (traces/NAME.json.gz), side by side, so one story per program can be checked
at a glance.

    python tools/bounds_table.py tests/data/h200_bounds [--json OUT] [--top 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def analyze(path: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(path), "--json"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:160]}
    d = json.loads(p.stdout)
    act = d.get("activity") or {}
    return {"diagnoses": [(x.get("severity"), x.get("id"), x.get("summary", "")) for x in d.get("diagnoses", [])],
            "busy": act.get("busy_fraction"), "copy": act.get("copy_fraction"), "source": act.get("source")}


def sources_of(root: Path, name: str) -> list[tuple[str, Path]]:
    cands = [("recording", root / "runs" / name), ("dmon", root / "smi" / f"{name}_dmon.txt"),
             ("query-gpu", root / "smi" / f"{name}_query.csv"), ("trace", root / "traces" / f"{name}.json.gz"),
             ("traces", root / "traces" / name)]
    return [(k, p) for k, p in cands if p.exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--top", type=int, default=2, help="findings shown per source")
    args = ap.parse_args(argv)
    names = sorted(p.name for p in (args.root / "runs").iterdir() if p.is_dir())
    out: dict[str, dict] = {}
    for name in names:
        out[name] = {}
        print(f"== {name}")
        for kind, path in sources_of(args.root, name):
            r = analyze(path)
            out[name][kind] = r
            if "error" in r:
                print(f"   {kind:<10} error: {r['error']}")
                continue
            busy = "-" if r["busy"] is None else f"{r['busy']:.2f}"
            copy = "-" if r.get("copy") is None else f"{r['copy']:.2f}"
            head = [f"{s.upper()} {i}" for s, i, _ in r["diagnoses"][: args.top]] or ["(no finding)"]
            print(f"   {kind:<10} busy {busy:>5} copy {copy:>5} {r['source'] or '-':<14} {'; '.join(head)}")
            if r["diagnoses"]:
                print(f"   {'':<10} {r['diagnoses'][0][2][:150]}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
