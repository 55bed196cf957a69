#!/usr/bin/env bash
# Record, trace and capture (nvidia-smi dmon and query-gpu) the bound programs of tools/programs/
# on a GPU machine: read-back-bound (pageable, pinned), upload-bound, HBM-bound, tensor-bound,
# occupancy-bound, a regular busy/idle duty cycle, two processes on one GPU, and per-rank traces
# of a 2- and 4-rank job. Packs everything into OUT/bounds.tgz (for tests/data/h200_bounds).
# Usage (device machine, repo root; carry .whl for msgspec): bash tools/gpu_capture_bounds.sh OUT
set -u
OUT=${1:?output folder}
INSTALL_LOG="$OUT/install.log" . tools/gpu_setup.sh
W=$(mktemp -d)
mkdir -p "$W/traces" "$W/runs" "$W/smi"
P=tools/programs
GS="python3 -m gpuscope"
log() { echo "== $(( $(date +%s) - T0 ))s $*" | tee -a "$W/capture.log"; }
# cap NAME -- CMD...: gpuscope record of CMD with dmon and query-gpu captures beside it
cap() {
  local name=$1; shift; shift
  log "$name: $*"
  nvidia-smi dmon -s pucmt -o DT -d 1 >"$W/smi/${name}_dmon.txt" 2>&1 &
  local dmon=$!
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm \
    --format=csv -lms 200 >"$W/smi/${name}_query.csv" 2>&1 &
  local query=$!
  $GS record --out "$W/runs/$name" --no-summary -- "$@" >"$W/runs/$name.stdout" 2>"$W/runs/$name.stderr"
  local rc=$?
  kill $dmon $query 2>/dev/null; wait $dmon $query 2>/dev/null
  echo "$name rc=$rc rows=$(($(wc -l <"$W/runs/$name/samples.csv") - 1)) lines=$(wc -l <"$W/runs/$name/timing.log")" | tee -a "$W/capture.log"
}
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv | tee -a "$W/capture.log"
python3 -c "import torch, cupy, pynvml; print('torch', torch.__version__, 'cupy', cupy.__version__)" | tee -a "$W/capture.log"
cap readback_pageable -- python3 $P/readback_loop.py --memory pageable --trace "$W/traces/readback_pageable.json"
cap readback_pinned -- python3 $P/readback_loop.py --memory pinned --steps 40 --trace "$W/traces/readback_pinned.json"
cap upload_pageable -- python3 $P/copy_loop.py --memory pageable --steps 10 --trace "$W/traces/upload_pageable.json"
cap hbm_bound -- python3 $P/hbm_bound.py --iters 150 --trace "$W/traces/hbm_bound.json"
cap tensor_bound -- python3 $P/tensor_bound.py --steps 100 --trace "$W/traces/tensor_bound.json"
cap occupancy_bound -- python3 $P/occupancy_bound.py --iters 100 --steps 10000000
cap duty_cycle -- python3 $P/duty_cycle.py --cycles 16
cap two_procs -- bash -c "python3 $P/hbm_bound.py --iters 120 & python3 $P/tensor_bound.py --steps 80; wait"
cap ranks2 -- python3 $P/ranks.py --world 2 --trace-dir "$W/traces/ranks2"
cap ranks4 -- python3 $P/ranks.py --world 4 --port 29544 --trace-dir "$W/traces/ranks4"
gzip -9 "$W"/traces/*.json "$W"/traces/*/*.json 2>/dev/null
du -sh "$W"/* | tee -a "$W/capture.log"
tar czf "$OUT/bounds.tgz" -C "$W" .
ls -la "$OUT"
log done
