# Sourced by the device scripts that time this tree against a base tree (tools/gpu_bench_trees.sh,
# tools/gpu_startup_check.sh), from the repository root: the install (tools/gpu_setup.sh), one
# BLAS thread (numpy's OpenBLAS otherwise starts 16 spinning threads whose CPU seconds, 1-1.5 s a
# process here, would swamp the figures; the 2-core VM starts two), the repository on PYTHONPATH,
# $OUT, and the base tree: bench-base.tar (`git archive BASE` at the root) unpacked to $BASE and
# its C extensions built in place, once. $RUNNER runs the base's gpuscope: `python3 -c "$RUNNER"
# "$BASE" ARGS...` (tools/bench_analyze.py's RUNNER, the one definition).
source tools/gpu_setup.sh
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
BASE=/tmp/gpuscope-base; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -d "$BASE/gpuscope" ]; then
  step "base tree"
  mkdir -p "$BASE" && tar -xf bench-base.tar -C "$BASE"
  (cd "$BASE" && python3 setup.py -q build_ext --inplace >"$OUT/base_build.log" 2>&1) || echo "base build failed"
fi
RUNNER=$(python3 -c "import sys; sys.path.insert(0, 'tools'); import bench_analyze; print(bench_analyze.RUNNER)")
