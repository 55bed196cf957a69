# gpuscope — every target sets up what it needs (a venv in .venv, rebuilt when pyproject.toml,
# setup.py or the compiled scanner's source changes; pip builds parsers/_scan.c when a C
# compiler is present and goes on without it otherwise).
PY       ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
STAMP    := $(VENV)/.installed-stamp
EXTRAS   ?= dev

.PHONY: venv browser demo test check test-gpu bench bench-gpu lint examples clean fuzz

$(STAMP): pyproject.toml setup.py parsers/_scan.c parsers/_samples.c gpuscope/_groupstats.c
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

venv: $(STAMP)

## demo: the main job on an embedded default (GPU when there is one, else the CPU reference)
demo: venv
	$(BIN)/python tools/demo.py

## browser: Debian's chromium for the HTML reports' browser tests (tests/test_html_browser.py),
## installed with apt-get where it is missing and this is root; else those tests skip, saying why
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  apt-get update -qq >/dev/null 2>&1 && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; } || \
	  echo "make: chromium is not installed and could not be: the browser tests skip"

## test: the linter and the type checker, then the whole suite; GPU tests skip cleanly without a GPU
test: venv browser
	$(BIN)/ruff check gpuscope parsers reports tests tools
	$(BIN)/python tools/typecheck.py
	$(BIN)/python -m pytest -q

## fuzz: hostile input at length: the Hypothesis suite's long profile (make test runs its short
## one), then the generators of tools/probe_hostile.py (both rounds, tools/probe_gen3.py the
## third: gzip shapes, odd files, encodings, hostile output places, a file-size rlimit, signals
## to record and run) over 3,200 inputs (about 30 minutes on a shared box)
fuzz: venv
	GPUSCOPE_FUZZ=long $(BIN)/python -m pytest -q tests/test_hostile_fuzz.py tests/test_hostile_signals.py
	$(BIN)/python tools/probe_hostile.py --n 3200 --budget 2400

## check: the fast loop while changing the code: ruff, then the suite without the tests marked slow
## (tests/slow_tests.txt, written by tools/mark_slow.py from a durations log: nvcc and packaging
## builds, browser pages, parity and fuzz runs) and without the GPU ones; make test runs them all
check: venv
	$(BIN)/ruff check gpuscope parsers reports tests tools
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow and not gpu"

test-gpu: venv
	$(BIN)/python -m pytest -q -m gpu

## bench: the analyzer's targets (1M- and 2M-line daemon logs, the article's excerpt, plot), each
## beside its figure, the format shapes, a 1,000,000-event profiler trace, every source and
## verb at 10^5, 10^6 and 4x10^6 lines or rows (tools/bench_scale.py: issue 21's table), and 64
## rank traces of 100,000 events analyzed per rank by 1, 2, 4, ... processes (tools/bench_ranks.py),
## and an Nsight Systems export of 1,000,000 kernels read against sqlite3's own scan (tools/bench_nsys.py)
# the Nsight row's scale (a quick one: make bench NSYS_KERNELS=100000)
NSYS_KERNELS ?= 1000000
bench: venv
	$(BIN)/python tools/bench_analyze.py
	$(BIN)/python tools/bench_trace.py
	$(BIN)/python tools/bench_scale.py
	$(BIN)/python tools/bench_ranks.py
	$(BIN)/python tools/bench_nsys.py --kernels $(NSYS_KERNELS)

## bench-gpu: kernel timings on the GPU (CUDA events, median of runs)
bench-gpu: venv
	$(BIN)/gpuscope bench kernels

lint: venv
	$(BIN)/ruff check gpuscope parsers reports tests tools
	$(BIN)/python tools/typecheck.py

## examples: regenerate examples/ from the generator
examples: venv
	$(BIN)/python tools/gen_daemon_log.py --partitions 40 --seed 7 -o examples/cuzk_daemon.log

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache parsers/_scan.*.so parsers/_samples.*.so gpuscope/_groupstats.*.so
