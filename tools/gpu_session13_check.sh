#!/usr/bin/env bash
# One device call (thirteenth session): two workers sharing the GPU under a lock, recorded where
# the lock is mostly free (--fill every: host-bound) and where they queue for it (--fill once
# --workers 4: the seed's shape), pageable and pinned, in kv and prose; each analyzed, the
# queued twins compared. What it checks: the lock-held split from the program's own words, the
# first cause (host where the lock is free; upload where pageable copies hold a queued lock),
# and that no pinned run gets "copy from pinned memory". Prints a short table last; captures in
# OUT/captures.tgz, the rest in OUT/rest.tgz.
# Usage (device machine, repo root; carry .whl for msgspec): bash tools/gpu_session13_check.sh OUT [STYLES]
# (STYLES: "kv prose", the default, or "kv" alone when device time is short)
set -u
OUT=${1:?output folder}
W=$(mktemp -d); mkdir -p "$W/runs"
. tools/gpu_setup.sh
GS="python3 -m gpuscope"
P=tools/programs
step "gpu"; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
for mem in pageable pinned; do
  for style in ${2:-kv prose}; do
    step "record queued lock_workers $mem $style"
    timeout 120 $GS record --out "$W/runs/queued_${mem}_$style" --no-summary -- python3 $P/lock_workers.py \
        --memory $mem --style $style --fill once --workers 4 --partitions 6 >"$W/queued_${mem}_$style.stdout" 2>&1
    echo "record rc=$?"
  done
  step "record free lock_workers $mem kv"
  timeout 120 $GS record --out "$W/runs/free_${mem}_kv" --no-summary -- python3 $P/lock_workers.py \
      --memory $mem --style kv --partitions 4 >"$W/free_${mem}_kv.stdout" 2>&1; echo "record rc=$?"
done
step "analyze"
for x in "$W"/runs/*; do
  n=$(basename "$x")
  $GS analyze "$x" --json >"$W/$n.analysis.json" 2>"$W/$n.analysis.err"; echo "$n rc=$?" >>"$W/rcs.txt"
  $GS analyze "$x" >"$W/$n.analysis.txt" 2>&1
done
$GS compare "$W/runs/queued_pageable_kv" "$W/runs/queued_pinned_kv" >"$W/compare.txt" 2>&1; echo "compare rc=$?"
tar czf "$OUT/captures.tgz" -C "$W" runs
tar czf "$OUT/rest.tgz" -C "$W" --exclude runs .
step "table"
cat "$W/rcs.txt" | tr '\n' ' '; echo
python3 - "$W" <<'PY'
import json, sys, pathlib
w = pathlib.Path(sys.argv[1])
print(f"{'run':22} {'cause':10} {'cover':>5} {'wait':>6} {'h2d%':>5} findings / h2d advice")
for f in sorted(w.glob("*.analysis.json")):
    try:
        d = json.loads(f.read_text())
    except Exception as e:
        print(f"{f.name:22} unreadable: {str(e)[:60]}"); continue
    log = d.get("log") or {}
    comps = log.get("components") or {}
    wait = next((c["median_ms"] for c in comps.values() if c.get("role") == "contention"), None)
    cover = (log.get("timeline") or {}).get("steady_busy_fraction")
    share = (log.get("split") or {}).get("h2d_share")
    ids = " ".join(f"{x['id']}:{x['severity']}" for x in d["findings"][:4])
    adv = next((x["recommendation"][:40] for x in d["findings"] if x["id"] == "h2d_bound"), "-")
    fmt = lambda v, p: "-" if v is None else f"{v:{p}}"
    print(f"{f.name.replace('.analysis.json',''):22} {str(d.get('first_cause')):10} {fmt(cover,'5.2f')} "
          f"{fmt(wait,'6.0f')} {fmt(share,'5.2f')} {ids} | {adv}")
PY
tail -4 "$W/compare.txt"
