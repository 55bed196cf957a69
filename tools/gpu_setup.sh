# Sourced by the tools/gpu_*_check.sh device scripts (from the repository root): msgspec (and any
# other carried wheel: prometheus-client) from a carried .whl/ folder (the device has no
# internet), the project installed as the device README says (its output to $INSTALL_LOG, default
# /dev/null; "install failed" when pip fails), and `step NAME`, which prints the seconds since this
# file was first sourced before each stage. Sourced again by a script that another one runs, it
# installs nothing twice (GPUSCOPE_SETUP_DONE).
if [ -z "${GPUSCOPE_SETUP_DONE:-}" ]; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
  fi
  pip install -q --no-deps --no-build-isolation -e . >"${INSTALL_LOG:-/dev/null}" 2>&1 || echo "install failed"
  export GPUSCOPE_SETUP_DONE=1 GPUSCOPE_SETUP_T0=$(date +%s)
fi
T0=${GPUSCOPE_SETUP_T0:-$(date +%s)}
step() { echo "== $(( $(date +%s) - T0 ))s $*"; }
