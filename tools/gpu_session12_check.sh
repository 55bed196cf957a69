#!/usr/bin/env bash
# One device call (twelfth session): the GPU tests (the sampler's GPM byte
# check in full when it fails); `gpuscope info`; a PyTorch copy loop recorded pageable and pinned with
# a profiler trace each, every run, trace and run+trace analyzed and their first causes set side by
# side (one story from a recording and a trace of the same run); the reference workload pageable vs
# pinned, compared; two workers sharing the GPU under a lock printing their tenure in their own
# words (tools/programs/lock_workers.py: kv and prose, pageable and pinned), recorded; plot, export --perfetto and --html of a real run. Prints a short table last and
# packs the captures into OUT/captures.tgz, everything else into OUT/rest.tgz (few files come back).
# Usage (device machine, repo root; carry .whl for msgspec): bash tools/gpu_session12_check.sh OUT
set -u
OUT=${1:?output folder}
W=$(mktemp -d); mkdir -p "$W/runs" "$W/traces"
. tools/gpu_setup.sh
GS="python3 -m gpuscope"
P=tools/programs
step "gpu"; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
$GS info >"$W/info.txt" 2>&1; echo "info rc=$?"; grep -E "GPU 0|PCIe link|compiled" "$W/info.txt"
step "gpu tests"
timeout 280 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider -rf >"$W/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
grep -E "^FAILED|passed|failed" "$W/gpu_tests.log" | tail -5
grep -E "^E .*(approx|assert|Error)" "$W/gpu_tests.log" | cut -c1-400 | head -8
for mem in pageable pinned; do
  step "record copy_loop $mem"
  timeout 200 $GS record --out "$W/runs/copy_$mem" --no-summary -- python3 $P/copy_loop.py --memory $mem --steps 8 \
      --trace "$W/traces/copy_$mem.json" >"$W/copy_$mem.stdout" 2>&1; echo "record rc=$?"
done
for mem in pageable pinned; do
  for style in kv prose; do
    step "record lock_workers $mem $style"
    timeout 150 $GS record --out "$W/runs/lock_${mem}_$style" --no-summary -- python3 $P/lock_workers.py \
        --memory $mem --style $style >"$W/lock_${mem}_$style.stdout" 2>&1; echo "record rc=$?"
  done
done
for mode in pageable pinned; do
  step "run $mode"
  timeout 200 $GS run --mode $mode --log-n 22 --partitions 8 --verify --out "$W/runs/run_$mode" >"$W/run_$mode.txt" 2>&1
  echo "run $mode rc=$?"
done
step "analyze"
for x in "$W"/runs/* "$W"/traces/*.json; do
  n=$(basename "$x")
  $GS analyze "$x" --json >"$W/$n.analysis.json" 2>"$W/$n.analysis.err"; echo "$n rc=$?" >>"$W/rcs.txt"
done
for mem in pageable pinned; do
  $GS analyze "$W/runs/copy_$mem" --trace "$W/traces/copy_$mem.json" --json >"$W/copy_$mem.joined.json" 2>&1
done
$GS compare "$W/runs/run_pageable" "$W/runs/run_pinned" >"$W/compare.txt" 2>&1; echo "compare rc=$?"
step "draw"
$GS plot "$W/runs/run_pageable" -o "$W/run_pageable.png" >/dev/null 2>&1; echo "plot rc=$?"
$GS export "$W/runs/copy_pageable" --perfetto "$W/copy_pageable.perfetto.json" >/dev/null 2>&1; echo "export rc=$?"
$GS analyze "$W/runs/copy_pageable" --html "$W/copy_pageable.html" >/dev/null 2>&1; echo "html rc=$?"
tar czf "$OUT/captures.tgz" -C "$W" runs traces
tar czf "$OUT/rest.tgz" -C "$W" --exclude runs --exclude traces .
step "table"
cat "$W/rcs.txt" | tr '\n' ' '; echo
python3 - "$W" <<'PY'
import json, sys, pathlib
w = pathlib.Path(sys.argv[1])
print(f"{'input':34} {'first_cause':18} findings")
for f in sorted(w.glob("*.analysis.json")) + sorted(w.glob("*.joined.json")):
    try:
        d = json.loads(f.read_text())
    except Exception as e:
        print(f"{f.name:34} unreadable: {str(e)[:60]}"); continue
    found = d.get("findings", d.get("diagnoses", []))
    ids = [f"{x['id']}:{x['severity']}" for x in found][:4]
    print(f"{f.name.replace('.analysis.json',''):34} {str(d.get('first_cause')):18} {' '.join(ids)}")
PY
tail -3 "$W/compare.txt"
