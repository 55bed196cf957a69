#!/usr/bin/env bash
# One device call before issues are closed: install the tree as the device's README says (the
# compiled scanner is built when the machine has a C compiler: which path ran is printed), the
# scanner-vs-Python and fast-path tests, the GPU tests, then the foreign programs recorded and
# judged (tools/gpu_capture_foreign.sh + tools/gpu_acceptance.py).
# Usage (device machine, repo root): bash tools/gpu_release_check.sh OUT   (carry .whl for msgspec)
set -u
OUT=${1:?output folder}
INSTALL_LOG="$OUT/install.log" . tools/gpu_setup.sh
step "installed"
python3 -c "import sys; from gpuscope.parsers.log.logparse import compiled_scanner as c; import gpuscope._groupstats as g; print('python', sys.version.split()[0], 'compiled scanner:', c() is not None, 'groupstats:', g.__file__)" 2>&1
which gcc cc 2>/dev/null | head -1
step "cpu tests that compare the two scanners and the fast path"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_scanner_paths.py tests/test_cli_fast.py \
  tests/test_parsers_truth.py tests/test_groupstats.py >"$OUT/cpu_tests.log" 2>&1; echo "cpu tests rc=$?"; tail -2 "$OUT/cpu_tests.log"
step "gpu tests"
timeout 300 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu_tests.log"
step "foreign programs"
timeout 420 bash tools/gpu_capture_foreign.sh "$OUT" >"$OUT/capture_stdout.log" 2>&1; echo "capture rc=$?"
grep -E "check\(s\) failed|^run |^trace " "$OUT/capture_stdout.log" | cut -c1-150
step "done"
