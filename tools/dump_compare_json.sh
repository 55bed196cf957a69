#!/bin/bash
# dump `gpuscope compare --json` for pairs of every kind of source into $1 (run from a checkout,
# or give it as $2): CuZK logs (with and without --abc-bytes), run directories (pinned vs pageable,
# gpuscope's own and foreign programs'), profiler traces, a run with its trace against another,
# and logs of the field's shapes. Used with tools/diff_analyze_json.py to check that a change
# leaves every compare document as it was.
out=${1:?outdir}; cd ${2:-.}; mkdir -p "$out"
G=.venv/bin/gpuscope
F=tests/data/h200_foreign
B=tests/data/h200_bounds
C=tests/data/h200_contention
pairs=(
  "cuzk_examples|examples/cuzk_daemon.log examples/article_excerpt.log"
  "cuzk_abc|examples/cuzk_daemon.log examples/article_excerpt.log --abc-bytes 1.5GiB"
  "contention|$C/pageable-c8 $C/pinned-c8"
  "copy_runs|$F/runs/copy_pageable $F/runs/copy_pinned"
  "copy_cap|$F/runs/copy_pinned $F/runs/copy_pinned_power_cap"
  "imagenet|$F/runs/imagenet_slow $F/runs/imagenet_fast"
  "imagenet_quiet|$F/runs/imagenet_quiet $F/runs/imagenet_fast"
  "train|$F/runs/train_slow $F/runs/train_fast"
  "launch_sync|$F/runs/launch_bound $F/runs/sync_bound"
  "printf|$F/runs/printf_pipe $F/runs/printf_pty"
  "copy_traces|$F/traces/copy_pageable.json.gz $F/traces/copy_pinned.json.gz"
  "train_traces|$F/traces/train_slow.json.gz $F/traces/launch_bound.json.gz"
  "readback|$B/runs/readback_pageable $B/runs/readback_pinned"
  "upload_hbm|$B/runs/upload_pageable $B/runs/hbm_bound"
  "ranks|$B/runs/ranks2 $B/runs/ranks4"
  "readback_traces|$B/traces/readback_pageable.json.gz $B/traces/readback_pinned.json.gz"
  "run_vs_trace|$B/runs/tensor_bound $B/traces/tensor_bound.json.gz"
  "samples_vs_log|$B/runs/duty_cycle/samples.csv examples/cuzk_daemon.log"
  "bounds6|tests/data/h200_bounds6/runs/occupancy_bound tests/data/h200_bounds6/runs/tensor_bound"
)
for f in tests/data/corpus/*/*; do  # each corpus log against itself and against the next one
  [ -f "$f" ] || continue
  case "$f" in *.toml|*.md) continue;; esac
  [ -n "$prev" ] && pairs+=("corpus_$(echo "$f" | tr '/' '_')|$prev $f")
  prev=$f
done
for p in "${pairs[@]}"; do
  name=${p%%|*}; args=${p#*|}
  timeout 120 $G compare $args --json > "$out/$name.json" 2> "$out/$name.err"; echo "$? $name" >> "$out/_rc.txt"
done
