#!/bin/bash
# Start-up cost on the device: the 12-line excerpt's analyze, this tree (as the console script and
# as `python3 -m gpuscope`) against the base tree (bench-base.tar), 7 runs each interleaved,
# median CPU-s, and each one's -X importtime under $OUT (tools/gpu_base_tree.sh's setup).
set -u
source tools/gpu_base_tree.sh
unset PYTHONDONTWRITEBYTECODE
EX=examples/article_excerpt.log
python3 --version; which gpuscope; head -3 "$(which gpuscope)"
for i in 1 2 3 4 5 6 7 8; do
  /usr/bin/time -f "exe %U %S" gpuscope analyze $EX >/dev/null 2>>"$OUT/times.txt"
  /usr/bin/time -f "m %U %S" python3 -m gpuscope analyze $EX >/dev/null 2>>"$OUT/times.txt"
  /usr/bin/time -f "base %U %S" python3 -c "$RUNNER" $BASE analyze $EX >/dev/null 2>>"$OUT/times.txt"
  ( cd "$BASE" && /usr/bin/time -f "m_base %U %S" python3 -m gpuscope analyze "$OLDPWD/$EX" >/dev/null 2>>"$OUT/times.txt" )
done
python3 -X importtime -m gpuscope analyze $EX >/dev/null 2>"$OUT/imp_main.txt"
python3 -X importtime -c "$RUNNER" $BASE analyze $EX >/dev/null 2>"$OUT/imp_base.txt"
python3 - "$OUT/times.txt" <<'PY'
import sys, statistics, collections
c = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 3 and p[0] in ("exe", "m", "base", "m_base"):
        c[p[0]].append(float(p[1]) + float(p[2]))
for k, v in c.items():
    print(f"{k:7s} median {statistics.median(v[1:]):.3f} CPU-s  {v}")
PY
for t in main base; do awk -F'|' '{split($1,a,":"); gsub(/ /,"",$3); s+=a[2]; if ($3 ~ /^gpuscope/) g+=a[2]; n++} END {print "'$t' imports: all", s/1000, "ms, gpuscope", g/1000, "ms,", n, "modules"}' "$OUT/imp_$t.txt"; done
