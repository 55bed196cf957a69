# Sourced by the tools/gpu_*_check.sh device scripts (from the repository root): msgspec from a
# carried .whl/ folder (the device has no internet), the project installed as the device README
# says (its output to $INSTALL_LOG, default /dev/null; "install failed" when pip fails), and
# `step NAME`, which prints the seconds since this file was sourced before each stage.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
pip install -q --no-deps --no-build-isolation -e . >"${INSTALL_LOG:-/dev/null}" 2>&1 || echo "install failed"
T0=$(date +%s)
step() { echo "== $(( $(date +%s) - T0 ))s $*"; }
