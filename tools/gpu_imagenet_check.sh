#!/usr/bin/env bash
# The ImageNet-example-style ResNet-50 loop (tools/programs/imagenet_style.py) recorded three
# ways on a GPU machine: a starved loader, a fed one, and the starved one printing nothing (NVML
# samples only); each analyzed and plotted. Usage (device, repo root): bash tools/gpu_imagenet_check.sh OUT
# (carry .whl for msgspec)
set -u
OUT=${1:?output folder}
W=$(mktemp -d)
. tools/gpu_setup.sh
GS="python3 -m gpuscope"
P=tools/programs/imagenet_style.py
mkdir -p "$W/runs"
rec() {  # rec NAME ARGS...
  local name=$1; shift
  local t0=$(date +%s%N)
  timeout 150 $GS record --out "$W/runs/$name" --no-summary -- python3 $P "$@" >"$W/$name.stdout" 2>"$W/$name.stderr"
  echo "$name rc=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  $GS analyze "$W/runs/$name" >"$W/$name.analyze.txt" 2>&1
  $GS analyze "$W/runs/$name" --json >"$W/$name.analyze.json" 2>/dev/null
  $GS plot "$W/runs/$name" -o "$W/$name.png" >/dev/null 2>&1
}
rec imagenet_slow --workers 1 --work 6 --steps 60
rec imagenet_fast --workers 12 --work 1 --steps 60
rec imagenet_quiet --workers 1 --work 6 --steps 60 --print-freq 0
$GS compare "$W/runs/imagenet_slow" "$W/runs/imagenet_fast" >"$W/compare.txt" 2>&1
python3 - "$W" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
for name in ("imagenet_slow", "imagenet_fast", "imagenet_quiet"):
    try:
        d = json.loads((out / f"{name}.analyze.json").read_text())
    except Exception as e:
        print(f"{name:15s} unreadable: {e}"); continue
    act = d.get("activity") or {}
    first = (d.get("diagnoses") or [{}])[0]
    print(f"{name:15s} records={d.get('records')} format={d.get('format')} split={ {k: d['split'].get(k) for k in ('cpu_stall_share', 'other_share')} if d.get('split') else None} "
          f"sm_busy={act.get('busy_fraction')} working={ (act.get('active') or {}).get('busy_fraction')} "
          f"first={first.get('severity')}:{first.get('id')}")
    print("    ", (first.get("summary") or "")[:220])
PY
tail -5 "$W/compare.txt"
tar czf "$OUT/imagenet.tgz" -C "$W" .
