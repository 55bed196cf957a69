#!/bin/bash
# The sixteenth session's device batch (one call, ~8 min): make bench's analyze lines, the draw
# rows at 10^6 and the 10^5-line log rows, for this tree against the tree issue 31 was filed
# against (tools/gpu_bench_trees.sh; carry .whl and bench-base.tar), then the GPU tests. A short
# table last.
set -u
source tools/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
step "analyze lines, both trees"
timeout 200 bash tools/gpu_bench_trees.sh analyze >"$OUT/analyze_part.txt" 2>&1; echo "analyze part exit $?"
step "draw rows, both trees"
SIZES=1000000 timeout 170 bash tools/gpu_bench_trees.sh scale draw >"$OUT/draw_part.txt" 2>&1; echo "draw part exit $?"
step "10^5-line rows, both trees"
SIZES=100000 timeout 90 bash tools/gpu_bench_trees.sh scale progressmeter,kvunits,datacompute >"$OUT/small_part.txt" 2>&1; echo "small part exit $?"
step "GPU tests"
timeout 100 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider 2>&1 | tail -3
step done
grep -hE "^analyze|^plot|^export|^cuzk|^condensed|^kv |^lines|^progress|^datacompute|^kvunits|^==>" "$OUT/analyze_part.txt" "$OUT/draw_part.txt" "$OUT/small_part.txt" | cut -c1-150
