#!/usr/bin/env bash
# Record the foreign programs of tools/programs/ with `gpuscope record` on a GPU machine and pack
# run directories, profiler traces and an NVML probe into OUT/captures.tgz (for tests/data and
# the acceptance figures in docs/BENCHMARKS.md). Usage: bash tools/gpu_capture_foreign.sh OUT
set -u
OUT=${1:?output folder}
W=$(mktemp -d)
mkdir -p "$W/traces" "$W/runs"
P=tools/programs
GS="python3 -m gpuscope"
log() { echo "== $*" | tee -a "$W/capture.log"; }
rec() {  # rec NAME -- CMD...
  local name=$1; shift; shift
  log "$name: $*"
  local t0=$(date +%s%N)
  $GS record --out "$W/runs/$name" --no-summary -- "$@" >"$W/runs/$name.stdout" 2>"$W/runs/$name.stderr"
  local rc=$?
  echo "$name rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$W/capture.log"
}
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv | tee -a "$W/capture.log"
python3 -c "import torch, cupy, pandas; print('torch', torch.__version__, 'cupy', cupy.__version__, 'pandas', pandas.__version__)" | tee -a "$W/capture.log"
python3 tools/gpu_nvml_probe.py >"$W/nvml_probe.json" 2>&1
nvcc -O2 -o "$W/printf_cuda" $P/printf_cuda.cu 2>&1 | tail -3
$GS bandwidth --json >"$W/bandwidth.json" 2>"$W/bandwidth.stderr"; log "bandwidth rc=$?"
rec copy_pageable -- python3 $P/copy_loop.py --memory pageable --trace "$W/traces/copy_pageable.json"
rec copy_pinned -- python3 $P/copy_loop.py --memory pinned --trace "$W/traces/copy_pinned.json"
nvidia-smi dmon -s pucm -o DT -d 1 >"$W/train_slow_dmon.txt" 2>&1 &
DMON=$!
rec train_slow -- python3 $P/train_loop.py --loader slow --steps 40 --work 12 --trace "$W/traces/train_slow.json"
kill $DMON 2>/dev/null
rec train_fast -- python3 $P/train_loop.py --loader fast --steps 300 --trace-dir "$W/traces/train_fast_tb"
rec launch_bound -- python3 $P/launch_bound.py --iters 30 --trace "$W/traces/launch_bound.json"
rec sync_bound -- python3 $P/launch_bound.py --iters 20 --ops 400 --sync-every 1 --trace "$W/traces/sync_bound.json"
rec printf_pty -- "$W/printf_cuda" 30
log "printf_pipe (--no-pty)"
$GS record --no-pty --out "$W/runs/printf_pipe" --no-summary -- "$W/printf_cuda" 30 >"$W/runs/printf_pipe.stdout" 2>"$W/runs/printf_pipe.stderr"
rm -f "$W/printf_cuda"
ls -la "$W/traces" "$W/traces/train_fast_tb" >>"$W/capture.log" 2>&1
for d in "$W"/runs/*/; do
  n=$(basename "$d"); rows=$(($(wc -l <"$d/samples.csv") - 1)); lines=$(wc -l <"$d/timing.log")
  st=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); s=m.get('sampler'); print(m.get('status'), m.get('exit_code'), s.get('achieved_hz') if isinstance(s, dict) else s)" "$d/meta.json")
  printf '%-14s samples=%-6s lines=%-5s %s\n' "$n" "$rows" "$lines" "$st" | tee -a "$W/capture.log"
done
python3 tools/gpu_acceptance.py "$W" --json "$W/acceptance.json" | tee "$W/acceptance.txt"
tar czf "$OUT/captures.tgz" -C "$W" .
ls -la "$OUT"
