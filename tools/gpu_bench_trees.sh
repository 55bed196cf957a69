#!/bin/bash
# make bench's CPU rows for this tree and a base tree side by side, on the device host (16 quiet
# cores, where this 2-core VM is shared): issue 31's "make bench: no line slower by more than 10%".
#   bash tools/gpu_bench_trees.sh analyze|scale [ONLY]   (bench-base.tar: `git archive BASE` at the root)
# Part `analyze`: installs, unpacks and builds the base, makes every input (in parallel), then
# tools/bench_analyze.py and a 1M-event trace's analyze for both trees; `scale`: tools/bench_scale.py
# for both (ONLY: bench_scale's --only, to fit a call). The two trees run at the same time (each
# command one process; 16 cores, so neither waits), their outputs under $OUT (the setup, one BLAS
# thread and the base tree: tools/gpu_base_tree.sh).
set -u
source tools/gpu_base_tree.sh
PART=${1:-analyze}; ONLY=${2:-progressmeter,datacompute,kvunits,jsonl,samples,compare,draw}
SIZES=${SIZES:-100000,1000000,4000000}
step "inputs"
pids=()
for only in progressmeter datacompute kvunits jsonl samples compare; do
  case ",$ONLY," in *",$only,"*) ;; *) [[ ",$ONLY," == *",draw,"* && ($only == kvunits || $only == samples) ]] || continue ;; esac
  python3 tools/bench_scale.py --generate --sizes $SIZES --only $only >"$OUT/gen_$only.log" 2>&1 & pids+=($!)
done
[ "$PART" = analyze ] && python3 - >"$OUT/gen_analyze.log" 2>&1 <<'PY' & pids+=($!)
import sys; sys.path.insert(0, "tools")
import bench_analyze as b, bench_trace as t
b.log_of("daemon", 1_000_000, lambda p: b.generate(p, 1_000_000, 1))
b.log_of("daemon", 2_000_000, lambda p: b.generate(p, 2_000_000, 2))
for s in b.SHAPES:
    if s != "cuzk":
        b.log_of(s, 1_000_000, lambda p, s=s: b.generate_shape(p, 1_000_000, s))
path = b.REPO / "bench-out" / "trace_1000k.json.gz"
if not path.exists():
    t.generate(path, 1_000_000)
PY
wait "${pids[@]}"; cat "$OUT"/gen_*.log | grep -iE "error|Traceback" | head
if [ "$PART" = analyze ]; then
  step "bench_analyze, both trees"
  timeout 400 python3 tools/bench_analyze.py >"$OUT/analyze_main.txt" 2>&1 &
  timeout 400 python3 tools/bench_analyze.py --tree "$BASE" >"$OUT/analyze_base.txt" 2>&1 &
  python3 - >"$OUT/trace_both.txt" 2>&1 <<PY &
import sys; sys.path.insert(0, "tools")
import bench_analyze as b
from pathlib import Path
trace = str(b.REPO / "bench-out" / "trace_1000k.json.gz")
for tree in (None, Path("$BASE"), None, Path("$BASE")):  # interleaved
    b.TREE = tree
    r = b.bench(b.gpuscope("analyze", trace, "--json"), 3)
    print(f"analyze --json 1M-event trace, {'base' if tree else 'main'}: {b.fig(r)}, ok={r['ok']}", flush=True)
PY
  wait
  step done
  tail -n 14 "$OUT/analyze_main.txt" "$OUT/analyze_base.txt"; cat "$OUT/trace_both.txt"
else
  step "bench_scale, both trees"
  timeout 480 python3 -u tools/bench_scale.py --sizes $SIZES --only $ONLY >"$OUT/scale_main.txt" 2>&1 &
  timeout 480 python3 -u tools/bench_scale.py --sizes $SIZES --only $ONLY --tree "$BASE" >"$OUT/scale_base.txt" 2>&1 &
  wait
  step done
  tail -n 40 "$OUT/scale_main.txt" "$OUT/scale_base.txt"
fi
