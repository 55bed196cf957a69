#!/bin/bash
# The seventeenth session's device batch (one call, <10 min): the GPU tests, then, where Nsight
# Systems is installed, a real capture of `gpuscope run` pageable and pinned under `nsys profile`
# exported to SQLite, analyzed beside the run's own recording (one story from every source), and
# whether JAX is importable (for a real XLA trace). Captures under $OUT/nsys17.tgz; a short table
# last.
set -u
source tools/gpu_setup.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
GS="python3 -m gpuscope"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
step "GPU tests"
timeout 150 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider 2>&1 | tail -3
step "tools on this machine"
NSYS=$(command -v nsys || ls -1 /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
[ -n "${NSYS:-}" ] && "$NSYS" --version
python3 -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
python3 -c "import torch; print('torch', torch.__version__)" 2>&1 | tail -1
W=$OUT/nsys17; mkdir -p "$W"
if [ -n "${NSYS:-}" ]; then
  for mode in pageable pinned; do
    step "nsys profile gpuscope run --mode $mode"
    timeout 150 "$NSYS" profile -t cuda,nvtx,osrt --force-overwrite true -o "$W/run_$mode" \
      $GS run --mode $mode --log-n 22 --partitions 6 --out "$W/runs/$mode" >"$W/run_$mode.stdout" 2>"$W/run_$mode.stderr"
    echo "profile rc=$?"; tail -2 "$W/run_$mode.stderr"
    timeout 120 "$NSYS" export --type sqlite --force-overwrite true -o "$W/run_$mode.sqlite" "$W/run_$mode.nsys-rep" >/dev/null 2>&1
    echo "export rc=$? $(ls -la "$W/run_$mode.sqlite" 2>&1 | awk '{print $5}')"
    timeout 60 "$NSYS" stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,cuda_api_sum "$W/run_$mode.sqlite" >"$W/stats_$mode.txt" 2>&1
    echo "stats rc=$?"
    $GS analyze "$W/run_$mode.sqlite" >"$W/analyze_nsys_$mode.txt" 2>&1; echo "analyze sqlite rc=$?"
    $GS analyze "$W/run_$mode.nsys-rep" >"$W/analyze_rep_$mode.txt" 2>&1; echo "analyze rep rc=$?"
    $GS analyze "$W/stats_$mode.txt" >"$W/analyze_stats_$mode.txt" 2>&1; echo "analyze stats rc=$?"
    $GS analyze "$W/runs/$mode" >"$W/analyze_run_$mode.txt" 2>&1; echo "analyze run rc=$?"
    $GS analyze "$W/runs/$mode" --trace "$W/run_$mode.sqlite" >"$W/analyze_joined_$mode.txt" 2>&1; echo "analyze joined rc=$?"
  done
  $GS compare "$W/run_pageable.sqlite" "$W/run_pinned.sqlite" >"$W/compare.txt" 2>&1; echo "compare rc=$?"
  rm -f "$W"/*.nsys-rep.bak
fi
step "pack"
ls -la "$W" | head -30
find "$W" -name '*.sqlite' -size +40M -exec rm -v {} \;
tar czf "$OUT/nsys17.tgz" -C "$OUT" nsys17 && rm -rf "$W"
ls -la "$OUT"
step done
