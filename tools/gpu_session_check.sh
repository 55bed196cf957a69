#!/usr/bin/env bash
# One device call after a refactor: the GPU tests, the PCIe counter read's costs (for the
# sampler), and the demo's pageable vs pinned runs at log-n 24 with --verify, then compare.
# Usage (device machine, repo root): bash tools/gpu_session_check.sh OUT   (carry .whl for msgspec)
set -u
OUT=${1:?output folder}
W=$(mktemp -d)
. tools/gpu_setup.sh
GS="python3 -m gpuscope"
step "gpu tests"
timeout 300 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu_tests.log"
step "counter read costs"
timeout 120 python3 tools/gpu_sampler_check.py --explore >"$OUT/explore.json" 2>&1; echo "explore rc=$?"
step "bandwidth"
$GS bandwidth --sizes 512M --repeats 3 >"$W/bandwidth.txt" 2>&1; echo "bandwidth rc=$?"; tail -4 "$W/bandwidth.txt"
for mode in pageable pinned; do
  step "run $mode"
  timeout 200 $GS run --mode $mode --log-n 24 --partitions 16 --verify --out "$W/runs/$mode" >"$W/run_$mode.txt" 2>&1
  echo "run $mode rc=$?"; grep -E "partitions|upload|verify|h2d_bound|pcie_underused" "$W/run_$mode.txt" | head -8
done
step "compare"
$GS compare "$W/runs/pageable" "$W/runs/pinned" >"$W/compare.txt" 2>&1; echo "compare rc=$?"
$GS compare "$W/runs/pageable" "$W/runs/pinned" --json >"$W/compare.json" 2>/dev/null
tail -30 "$W/compare.txt"
cp "$W"/*.txt "$W/compare.json" "$OUT/" 2>/dev/null
tar czf "$OUT/runs.tgz" -C "$W" runs
step "done"
python3 - "$OUT/explore.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("explore: unreadable", e); sys.exit()
for tag, m in d.items():
    print(tag, " ".join(f"{k}={v['cpu_us']}/{v['wall_us']}" for k, v in m.items() if isinstance(v, dict) and "cpu_us" in v))
    print("   freshness", m.get("freshness"))
PY
