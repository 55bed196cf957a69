#!/usr/bin/env bash
# Device call: the GPU tests and the record tests on a machine with a GPU, then `make demo`'s GPU
# path (bandwidth, a verified log-n 18 run, pageable and pinned at log-n 24, compare), keeping
# the two run directories. Usage: bash tools/gpu_demo_check.sh OUT   (carry .whl for msgspec)
set -u
OUT=${1:?output folder}
. tools/gpu_setup.sh
export PYTHONUNBUFFERED=1
step "gpu tests"
timeout 280 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -4 "$OUT/gpu_tests.log"
step "record tests"
timeout 90 python3 -m pytest -q tests/test_record_capture.py tests/test_record_signals.py -p no:cacheprovider >"$OUT/record_tests.log" 2>&1; echo "record tests rc=$?"
tail -2 "$OUT/record_tests.log"
step "demo"
timeout 300 python3 tools/demo.py >"$OUT/demo.log" 2>&1; echo "demo rc=$?"
grep -E "^\\$ gpuscope|Verdict|partitions verified|upload  |GPU lock held|SM activity|mutex_held median|h2d_bound|pcie_underused" "$OUT/demo.log" | head -40
tar czf "$OUT/demo_runs.tgz" runs/demo-* 2>/dev/null
step "done"
