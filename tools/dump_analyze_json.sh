#!/bin/bash
# dump `gpuscope analyze --json` for every example, test capture and run directory into $1
out=${1:?outdir}; cd ${2:-.}; mkdir -p "$out"
G=.venv/bin/gpuscope
list() {
  find examples tests/data -type f \( -name '*.log' -o -name '*.csv' -o -name '*.txt' -o -name '*.json' -o -name '*.json.gz' \) \
     ! -path '*/golden/*' ! -path '*/timeline/*' ! -name meta.json ! -name README.md ! -name 'bandwidth.json' ! -name 'nvml_probe.json'
  find examples tests/data -type f -name '.gpuscope-run' -printf '%h\n'
  find examples tests/data -type f -name 'meta.json' -printf '%h\n'
  find tests/data -type d -name 'ranks[24]' -path '*traces*'
  find tests/data -type d -name 'train_fast_tb'
}
list | sort -u | while read -r p; do
  name=$(echo "$p" | tr '/' '_')
  timeout 120 $G analyze "$p" --json > "$out/$name.json" 2> "$out/$name.err"; echo "$? $p" >> "$out/_rc.txt"
done
# pairs: run dir with its trace
for n in readback_pageable upload_pageable hbm_bound tensor_bound readback_pinned; do
  timeout 120 $G analyze tests/data/h200_bounds/runs/$n --trace tests/data/h200_bounds/traces/$n.json.gz --json > "$out/pair_$n.json" 2> "$out/pair_$n.err"; echo "$? pair $n" >> "$out/_rc.txt"
done
