#!/bin/bash
# Start-up cost on the device: the 12-line excerpt's analyze, this tree (as the console script and
# as `python3 -m gpuscope`) against the base tree (bench-base.tar), 7 runs each interleaved,
# median CPU-s, and each one's -X importtime under $OUT (tools/gpu_bench_trees.sh's setup).
set -u
source tools/gpu_setup.sh
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
unset PYTHONDONTWRITEBYTECODE
BASE=/tmp/gpuscope-base; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ ! -d "$BASE/gpuscope" ]; then
  mkdir -p "$BASE" && tar -xf bench-base.tar -C "$BASE"
  (cd "$BASE" && python3 setup.py -q build_ext --inplace >"$OUT/base_build.log" 2>&1) || echo "base build failed"
fi
R="import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in (getattr(f, '__module__', '') + getattr(f, '__name__', '') + type(f).__name__).lower()]; sys.path.insert(0, sys.argv.pop(1)); from gpuscope.cli import main; sys.argv[0] = 'gpuscope'; main()"
EX=examples/article_excerpt.log
python3 --version; which gpuscope; head -3 "$(which gpuscope)"
for i in 1 2 3 4 5 6 7 8; do
  /usr/bin/time -f "exe %U %S" gpuscope analyze $EX >/dev/null 2>>"$OUT/times.txt"
  /usr/bin/time -f "m %U %S" python3 -m gpuscope analyze $EX >/dev/null 2>>"$OUT/times.txt"
  /usr/bin/time -f "base %U %S" python3 -c "$R" $BASE analyze $EX >/dev/null 2>>"$OUT/times.txt"
  ( cd "$BASE" && /usr/bin/time -f "m_base %U %S" python3 -m gpuscope analyze "$OLDPWD/$EX" >/dev/null 2>>"$OUT/times.txt" )
done
python3 -X importtime -m gpuscope analyze $EX >/dev/null 2>"$OUT/imp_main.txt"
python3 -X importtime -c "$R" $BASE analyze $EX >/dev/null 2>"$OUT/imp_base.txt"
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
