#!/usr/bin/env bash
# The fifth session's one device call on the merged tree: install (carry .whl with the msgspec
# and prometheus-client wheels), the GPU tests, the bound programs re-recorded, captured and
# traced with this tree and judged source by source (tools/bounds_table.py), then the live view's
# and exporter's cost (tools/gpu_live_check.sh). Usage (repo root): bash tools/gpu_session5_check.sh OUT
set -u
OUT=${1:?output folder}
INSTALL_LOG="$OUT/install.log" . tools/gpu_setup.sh
step "installed"
python3 -c "import gpuscope, prometheus_client, msgspec; from gpuscope.parsers.log.logparse import compiled_scanner as c; print('compiled scanner:', c() is not None)"
step "gpu tests"
timeout 300 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu_tests.log"
step "bound programs"
mkdir -p "$OUT/b"
timeout 400 bash tools/gpu_capture_bounds.sh "$OUT/b" >"$OUT/capture.log" 2>&1; echo "capture rc=$?"
mkdir -p /tmp/bounds && tar xzf "$OUT/b/bounds.tgz" -C /tmp/bounds && mv "$OUT/b/bounds.tgz" "$OUT/bounds.tgz"
timeout 300 python3 tools/bounds_table.py /tmp/bounds --json "$OUT/bounds_table.json" >"$OUT/bounds_table.txt" 2>&1
cat "$OUT/bounds_table.txt" | cut -c1-200
if [ -n "${SKIP_LIVE:-}" ]; then step "live view skipped (SKIP_LIVE)"; exit 0; fi
step "live view and exporter"
mkdir -p "$OUT/live"
timeout 420 bash tools/gpu_live_check.sh "$OUT/live" >"$OUT/live.log" 2>&1; echo "live rc=$?"
tar czf "$OUT/live.tgz" -C "$OUT" live && rm -rf "$OUT/live" "$OUT/b"
grep -E "^==|CPU|refresh|scrape|status|exit code|busy|process" "$OUT/live.log" | cut -c1-200 | head -60
step "done"
