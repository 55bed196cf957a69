#!/usr/bin/env bash
# The live view's and the exporter's cost on a real GPU (docs/BENCHMARKS.md "Live view"), and the
# ranks bench on the device's cores. Run from the repository root on the device machine:
#
#     bash tools/gpu_live_check.sh "$OUT"
#
# carrying .whl/ with the msgspec AND prometheus-client wheels (the device has no internet:
# `pip download prometheus-client==0.26.0 --no-deps -d .whl`). Beside tools/programs/tensor_bound.py
# it runs, each ~20 s:
#   1. gpuscope watch --plain --metrics (plain lines: stdout is no terminal there)
#   2. gpuscope watch under a pseudo-terminal (`script`), the Rich panel itself, when `script` exists
#   3. gpuscope record --live --metrics -- tensor_bound.py
#   4. gpuscope record --live of a longer run, SIGINT after 8 s: the run directory must be complete
# and reports for each the CPU seconds of gpuscope's process (getrusage of the child: sampler,
# view, endpoint, all threads), its own summary line (refresh rate, sampler share), and a scrape
# of the metrics endpoint mid-run. Then tools/bench_ranks.py (64 traces of 100k events, 1..16
# processes). The summary goes to stdout; $OUT keeps six files (the device returns at most 8):
# watch_metrics.txt, record_metrics.txt (the scrapes), watch_plain.txt (the plain lines),
# record_live.err (record's notes and plain lines), run_sigint.json (analyze of the interrupted
# run) and bench_ranks.txt; the rest stays in a scratch folder.
set -u
OUT=${1:-${OUT:-/tmp/gpu_live_check}}
mkdir -p "$OUT"
W=$(mktemp -d)
INSTALL_LOG="$W/install.log"
source tools/gpu_setup.sh
P=${PROGRAMS:-tools/programs}
python3 -c "import prometheus_client" 2>/dev/null || { echo "prometheus-client missing: carry its wheel in .whl/"; exit 1; }

# the child's CPU seconds (user + system, all threads) and wall time, after it exits
cpu_of() {
  python3 - "$@" <<'EOF'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
wall = time.monotonic() - t
cpu = u.ru_utime + u.ru_stime
print(f"CPU {cpu:.2f} s over {wall:.1f} s wall = {100 * cpu / wall:.1f}% of a core (rc={rc})", file=sys.stderr)
EOF
}

scrape() {  # scrape PORT FILE: one GET of the endpoint (curl when there is one)
  if command -v curl >/dev/null 2>&1; then curl -s "http://127.0.0.1:$1/metrics" >"$2"
  else python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics', timeout=5).read().decode())" >"$2"; fi
  echo "scrape of :$1 -> $(wc -l <"$2") lines, $(grep -c '^gpuscope_' "$2") samples; excerpt:"
  grep -E '^gpuscope_(sm_active_ratio|tensor_active_ratio|pcie_bytes_total|state_seconds_total|power_watts)' "$2" | head -12
}

step "1. watch --plain --metrics beside tensor_bound.py (20 s)"
python3 $P/tensor_bound.py --steps 2000 >"$W/tensor1.log" 2>&1 &
BG=$!
sleep 4
cpu_of python3 -m gpuscope watch --plain --seconds 20 --metrics 127.0.0.1:9400 >"$OUT/watch_plain.txt" 2>"$W/watch_plain.err" &
WP=$!
sleep 12; scrape 9400 "$OUT/watch_metrics.txt"
wait $WP
cat "$W/watch_plain.err"
echo "plain lines: $(wc -l <"$OUT/watch_plain.txt"); last:"; tail -1 "$OUT/watch_plain.txt" | cut -c1-300

if command -v script >/dev/null 2>&1; then
  step "2. watch under a pseudo-terminal (the Rich panel), 20 s"
  cpu_of script -qec "python3 -m gpuscope watch --seconds 20" "$W/watch_tty.typescript" >/dev/null 2>"$W/watch_tty.err"
  cat "$W/watch_tty.err"; tr -d '\r' <"$W/watch_tty.typescript" | sed 's/\x1b\[[?0-9;]*[a-zA-Z]//g' | grep -a "watched" | tail -1
else
  step "2. skipped: no \`script\` for a pseudo-terminal"
fi
kill $BG 2>/dev/null; wait $BG 2>/dev/null

step "3. record --live --metrics -- tensor_bound.py (~20 s)"
( sleep 12; scrape 9401 "$OUT/record_metrics.txt" ) &
S=$!
cpu_of python3 -m gpuscope record --live --metrics 127.0.0.1:9401 --out "$W/run_live" --no-summary -- \
  python3 $P/tensor_bound.py --steps 350 >"$W/record_live.out" 2>"$OUT/record_live.err"
wait $S
echo "(the 'CPU ... of a core' line counts the recorded command too: gpuscope's own is in 'live view: ...')"
grep -E "samples at|live view|run directory|^CPU" "$OUT/record_live.err"
python3 -c "import json; m=json.load(open('$W/run_live/meta.json')); print('meta status', m['status'], 'sampler cpu', m['sampler'].get('cpu_fraction_of_core'))"

step "4. record --live, SIGINT after 8 s: a complete run directory"
set -m  # job control: a background job keeps SIGINT (else bash starts it with SIGINT ignored)
python3 -m gpuscope record --live --out "$W/run_sigint" --no-summary -- python3 $P/tensor_bound.py --steps 5000 \
  >"$W/sigint.out" 2>"$W/sigint.err" &
R=$!
sleep 8; kill -INT $R; wait $R; echo "record exit code $? (130 = the command ended by SIGINT)"
set +m
python3 -c "import json; m=json.load(open('$W/run_sigint/meta.json')); print('meta status', m['status'], 'signals', m.get('signals_received'), 'rows', m['sampler'].get('rows'))"
python3 -m gpuscope analyze "$W/run_sigint" --json >"$OUT/run_sigint.json" && python3 -c "import json; d=json.load(open('$OUT/run_sigint.json')); a=d['activity']; print('analyze: busy', round(a['busy_fraction'],3), 'classes', {k: round(v,3) for k,v in a['classes'].items()}, 'first', [x['id'] for x in d['diagnoses']][:2])"

step "5. ranks bench: 64 traces of 100k events, 1..$(nproc) processes"
python3 tools/bench_ranks.py ${RANKS_ARGS:---ranks 64 --events 100000} >"$OUT/bench_ranks.txt" 2>&1; tail -8 "$OUT/bench_ranks.txt"
step done
