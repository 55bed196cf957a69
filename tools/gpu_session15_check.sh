#!/bin/bash
# The fifteenth session's device batch (one call, ~5 min): make bench's analyze lines and the draw
# rows for this tree against the tree issue 31 was filed against (tools/gpu_bench_trees.sh; carry
# .whl and bench-base.tar), then the GPU tests. A short table last.
set -u
source tools/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
step "analyze lines, both trees"
timeout 200 bash tools/gpu_bench_trees.sh analyze >"$OUT/analyze_part.txt" 2>&1; echo "analyze part exit $?"
step "draw rows, both trees"
SIZES=1000000 timeout 170 bash tools/gpu_bench_trees.sh scale draw >"$OUT/draw_part.txt" 2>&1; echo "draw part exit $?"
step "GPU tests"
timeout 120 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider 2>&1 | tail -3
step done
grep -hE "^analyze|^plot|^export|^cuzk|^condensed|^kv |^lines|^==>" "$OUT/analyze_part.txt" "$OUT/draw_part.txt" | cut -c1-150
