"""The one table of log formats: detection (parsers/log/detect.py), scanning (which scanner
reads a format, parsers/log/logparse.py), the CLI's `--format` help and the "no timing lines"
message all read it, so a format is added in one place.

Each format: its name, what it reads (one line), the text that selects it at detection
(markers; none: it is chosen by the vote of parsers/lines.sniff), and whether the compiled
scanner (parsers/_scan.c) reads it. SHAPES lists the line shapes the `lines` format reads,
each with the programs that print it. FRAMEWORKS has one entry per framework whose output is
read or refused (who prints it, how its lines are recognised, what is read, an example, its
corpus sample, where its reading lives, and the reader of parsers/log/lines/frameworks.py that
parsers/log/lines/line.py calls for its lines where the shared field reader cannot read them
alone); TABLES, the refusals' reasons, and docs/ANALYZE.md's list come from it."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str
    reads: str
    markers: tuple[str, ...] = ()
    native: bool = False


TABLE: tuple[Format, ...] = (
    Format("cuzk", "CuZK daemon lines (CUZK_TIMING:, CUZK_NTT_H:, TIMELINE, GPU_TIMING/FIN_TIMING tracing)",
           ("CUZK_TIMING:", "CUZK_NTT_H:", "TIMELINE,", "GPU_TIMING ", "FIN_TIMING "), native=True),
    Format("condensed", "the article's condensed lines (mutex_wait_ms=... | ntt_kernels=287ms | mutex_held_ms=...)",
           ("mutex_held_ms=", "mutex_wait_ms=", "ntt_kernels="), native=True),
    Format("kv", "key=value lines whose times carry a unit or a time-named key (upload_ms=12 compute=30ms)",
           native=True),
    Format("lines", "timing lines as people print them (the shapes below)"),
)

NAMES: tuple[str, ...] = tuple(f.name for f in TABLE)
BY_NAME = {f.name: f for f in TABLE}
NATIVE = frozenset(f.name for f in TABLE if f.native)

# the shapes the `lines` format reads: (shape, example, who prints it)
SHAPES: tuple[tuple[str, str, str], ...] = (
    ("key=value with a unit", "step=3 h2d_ms=231.7 compute=647ms", "hand-written loops, logging"),
    ("key: value / Label value with a unit", "data: 131.2ms compute 12.5 ms", "training scripts, timm"),
    ("a unit in the label", "elapsed time per iteration (ms): 412.0", "Megatron-LM, vLLM/TensorRT-LLM benchmarks"),
    ("a unit in the line's header", "time (ms) | fwd_microstep: 41.0 | bwd_microstep: 88.3", "DeepSpeed, Megatron"),
    ("a time word a framework documents in seconds", "Time 0.257 (0.257)  Data 0.175 (0.2)",
     "PyTorch examples' ProgressMeter, detectron2, fairseq"),
    ("a time per step", "35ms/step, 2.10s/it, 0.31 sec/step", "Keras, tqdm/Lightning bars"),
    ("a whole run's runtime", "{'train_runtime': 245.8, ...}", "Hugging Face Trainer"),
    ("statistics of a latency", "Mean TTFT (ms): 52.3, p99 latency: 5868 usec", "vLLM, TensorRT-LLM, perf_analyzer"),
    ("a label = value ms summary", "prompt eval time = 812.00 ms", "llama.cpp print_timings"),
    ("a timer tree's End lines", "End: Compute C ......12.004ms", "arkworks print-trace"),
    ("zerolog console lines", "DBG prover done ... took=2345.6", "gnark"),
    ("a timer tree (children indented)", "| 1.2210s to compute wires commitment", "plonky2, tracing-forest (plonky3)"),
    ("MLPerf interval events", ':::MLLOG {"key": "epoch_stop", "event_type": "INTERVAL_END", ...}', "mlperf-logging"),
)


def help_text() -> str:
    """The `--format` option's help."""
    return "Force the log format: " + ", ".join(NAMES) + "."


def shapes_read(fmt: str) -> str:
    """What a format reads, for the message of a log with no timing lines (kv and lines:
    the shapes of both, since detection chose between them)."""
    if fmt in ("lines", "kv"):
        return (", ".join(s for s, _, _ in SHAPES) + "; and the frameworks' own: "
                + ", ".join(f.name for f in FRAMEWORKS if not f.refuses))
    return BY_NAME[fmt].reads if fmt in BY_NAME else fmt


@dataclass(frozen=True)
class Framework:
    """One framework's timing output: where a newcomer finds how it is read.

    name; who prints it; how its lines are recognised; what is read from them (and what is
    not); an example as the framework prints it; `reader`: the function of
    parsers/log/lines/frameworks.py that reads its lines ("" when the shared field reader,
    parsers/log/lines/fields.py, reads them), called for a line holding one of `gates`; `refuses`:
    what its output is when it holds measurements, not timed steps (the reason a log of it
    alone is refused), recognised by `markers` in the log's head; `corpus`: its sample under
    tests/data/corpus (tests/test_parsers_corpus.py reads each as expected.toml says);
    `rules`: where its reading lives (`module.name` under gpuscope.parsers: the reader, the
    shared reader's rules it relies on; tests/test_parsers_frameworks.py resolves each)."""

    name: str
    who: str
    recognised: str
    reads: str
    example: str  # (lines of one example: read in order)
    corpus: str
    reader: str = ""
    gates: tuple[str, ...] = ()
    refuses: str = ""
    markers: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()  # where it is read: `module.name` under gpuscope.parsers


CPROFILE_HEADER = "ncalls  tottime  percall  cumtime"
# a pstats row: ncalls (`3752/1876` when recursive), tottime, percall, cumtime, percall, where
_CPROFILE_ROW = re.compile(r"^\s*\d+(?:/\d+)?(?:\s+\d+\.\d+){4}\s+\S")


def cprofile_report(text: str) -> bool:
    """Whether a text is mostly a cProfile report: its header, and its rows at least half of
    its non-blank lines (a training log that prints a profile after its steps is read for them)."""
    if CPROFILE_HEADER not in text:
        return False
    lines = [ln for ln in text.split("\n", 2000)[:2000] if ln.strip()]
    return sum(1 for ln in lines if _CPROFILE_ROW.match(ln)) >= 0.5 * len(lines)


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("hf_trainer", "Hugging Face Trainer",
              "its logged dicts: `{'loss': ...}` per logging step, `{'train_runtime': ...}` at the end",
              "train_runtime (seconds: the whole run, one record) and train_steps_per_second (a rate, never "
              "a time: with the runtime, the steps that record covers); eval_* lines are kept apart",
              "{'train_runtime': 245.78, 'train_samples_per_second': 48.8, 'train_steps_per_second': 6.103}",
              "hf_trainer/train.txt",
              rules=('lines.vocabulary.key_info', 'lines.fields.Line.covered_steps', 'lines.steps.runtime_steps')),
    Framework("keras", "Keras / tf.keras model.fit",
              "a Progbar line that starts with its i/N counter (`[====]`, Keras 3's bar, or verbose=2's ` - `)",
              "an epoch's end (i == N): its elapsed seconds (the whole) and the mean time per step (`step.mean`, "
              "a statistic), covering N steps; a redraw before the end prints an ETA, a forecast of the time left: no "
              "time (a log of redraws only is refused, and says the epoch's end line would tell)",
              "1875/1875 [==============================] - 5s 2ms/step - loss: 0.2950 - accuracy: 0.9146",
              "keras/fit.txt", reader="read_keras", gates=("/step", "/sample"),
              rules=('lines.frameworks.read_keras', 'lines.frameworks.keras_eta_only', 'lines.steps.steps_per_record')),
    Framework("tqdm", "tqdm bars, PyTorch Lightning's progress bar",
              "`n/total [elapsed<remaining, rate]` (`n it [elapsed, rate]` without a total), redrawn in "
              "place (`\\r`-separated pieces of one line)",
              "the rate of one iteration (`it/s`: 1/x s; `s/it`: x s), tqdm's smoothed mean: `time_per_it`; the "
              "bar's n is its counter: a redraw every K iterations stands for K steps",
              "Epoch 0:   2%|\u258f         | 20/1000 [00:00<00:44, 22.10it/s, loss=2.25, v_num=0]",
              "lightning/bar_fast.txt", reader="read_tqdm", gates=("it/s", "s/it"),
              rules=('lines.frameworks.read_tqdm', 'lines.bars.bar_rows', 'lines.steps.steps_per_record')),
    Framework("tensorflow", "TensorFlow's training hooks (Estimator, MonitoredSession), TF-Slim",
              "LoggingTensorHook `tag = value, ... (0.320 sec)`, StepCounterHook `global_step/sec: x`, "
              "TF-Slim `global step N: loss = ... (0.31 sec/step)`",
              "the hook's seconds since its last line (`elapsed`, the whole of the steps its step counter "
              "advanced); global_step/sec is a rate: 1/x s per step, a statistic (`step.mean`), no step; "
              "sec/step is one step's time",
              "INFO:tensorflow:loss = 0.4121, step = 100 (0.320 sec)",
              "tensorflow/estimator.txt", reader="read_tensorflow", gates=("global_step/sec", " sec)"),
              rules=('lines.frameworks.read_tensorflow', 'lines.fields.Line.per_step', 'lines.steps.steps_per_record')),
    Framework("deepspeed", "DeepSpeed's timers and throughput lines",
              "a unit in the line's header: `time (ms) | name: value | ...`",
              "each timer (ms), `step:` (the optimizer step's timer) too, never a counter or the whole; a timer "
              "nested in another printed beside it (bwd_inner in bwd) is no part, nor a micro-step's timer where "
              "its global one is printed (forward_microstep in forward), nor ZeRO's optimizer timers (in step); "
              "SamplesPerSec rates and "
              "MemAllocated sizes are never times",
              "time (ms) | fwd_microstep: 41.03 | bwd_microstep: 88.31 | bwd_inner_microstep: 80.12",
              "deepspeed/timers.txt",
              rules=('lines.fields.Line.other', 'lines.fields.Line.take', 'lines.records.not_parts', 'lines.vocabulary.key_info',
                     'notparts._deepspeed', 'nestrecords.nested_only')),
    Framework("deepspeed_flops", "DeepSpeed's FLOPS profiler (its profile summary)",
              "`fwd latency:` / `bwd latency:` / `step latency:` / `iter latency:` lines, an aggregated profile's "
              "`fwd latency - {'<module>': '<t> ms', ...}`",
              "one profiled step: fwd, bwd and step latency its parts, iter latency (their sum) the whole; the "
              "aggregated profile's module latencies are a profile of the step, never parts; params, MACs, "
              "FLOPS and samples/second are no times",
              "fwd latency:                                                  76.67 ms\n"
              "iter latency:                                                 184.73 ms",
              "deepspeed/flops_profiler_summary.txt", reader="read_flops_profiler",
              gates=("fwd latency", "bwd latency", "step latency:", "iter latency:"),
              rules=("lines.frameworks.read_flops_profiler",)),
    Framework("megatron", "Megatron-LM iteration lines",
              "` | `-separated `label: value` fields with a unit in the label",
              "elapsed time per iteration (ms), the whole; the i/N counter's advance is the steps a line "
              "stands for (log-interval); consumed samples, batch size, loss scale are no times; the timers "
              "line printed after it (`time (ms) | forward-compute: ... | optimizer: ...`) is its record's, "
              "its timers nested in another printed beside it (batch-generator, the all-reduces, optimizer-*) "
              "no parts, its gradient reduction no GPU compute",
              "iteration 10/ 100 | consumed samples: 640 | elapsed time per iteration (ms): 412.0 | lm loss: 7.2E+00",
              "megatron/pretrain_gpt.txt",
              rules=('lines.vocabulary.label_of', 'lines.vocabulary.per_step', 'lines.read.sampled_every',
                     'notparts._megatron', 'lines.closing.close_records')),
    Framework("megatron_timers", "Megatron-LM's timers (--timing-log-level)",
              "one line per timer under its `(min, max) time across ranks (ms):` (or `max time ...`) header: "
              "four spaces, the name padded with dots to 48 columns, `: (min, max)` or `: max`",
              "each timer's minimum and maximum over the ranks (ms, a per-step mean over the log interval): "
              "statistics of one timer (`forward-backward.max`: the slowest rank's, the one the step waits for), "
              "never parts; the timers nest; `times across ranks (ms):` (each rank's line without its timer's "
              "name) is not read",
              "    forward-backward ...............................: (401.23, 402.10)",
              "megatron/pretrain_gpt_timers.txt", reader="read_megatron_timers",
              gates=("..: ",),
              rules=('lines.frameworks.read_megatron_timers', 'lines.frameworks.MEGATRON_MAX_WHY', 'lines.records.not_parts')),
    Framework("fairseq", "fairseq train_inner lines",
              "`key=value` fields after `epoch 001: 100 / 1000`",
              "wall and train_wall, cumulative seconds: read as their differences line to line; wps, ups, "
              "bsz, num_updates are rates and counters",
              "epoch 001:    100 / 1000 loss=9.123, wps=12345.6, ups=3.02, num_updates=100, train_wall=31, wall=33",
              "fairseq/train.txt",
              rules=('runtotals.running_totals', 'lines.read.sampled_every')),
    Framework("pytorch_examples", "the PyTorch examples' ProgressMeter (ImageNet, copied widely), timm",
              "`Epoch: [e][i/N]  Time v (avg)  Data v (avg)`",
              "Time and Data in seconds (the meter's convention); the i/N counter's advance (print-freq, "
              "default 10) is the steps a line stands for; `Test:` lines are kept apart",
              "Epoch: [0][ 10/500]\tTime  0.260 ( 0.412)\tData  0.002 ( 0.138)\tLoss 6.8990e+00 (6.9050e+00)",
              "pytorch_examples/every_10th.txt",
              rules=('lines.vocabulary.LABEL_SECONDS', 'lines.read.sampled_every', 'lines.vocabulary.EVAL_WORDS')),
    Framework("detectron2", "detectron2's CommonMetricPrinter",
              "`eta: 0:12:34  iter: 19  total_loss: ...  time: 0.4512  data_time: 0.0123  lr: ...`",
              "time and data_time in seconds (time-named keys); the iter counter's advance (every 20) is the "
              "steps a line stands for; eta is a forecast, max_mem a size",
              "eta: 0:12:25  iter: 39  total_loss: 1.874  time: 0.4498  data_time: 0.0119  lr: 0.00079922",
              "detectron2/train.txt",
              rules=('lines.fields.Line.seconds', 'lines.fields.FORECASTS', 'lines.steps.steps_per_record')),
    Framework("mmengine", "mmengine's logger (mmdet, mmseg, ...)",
              "`Epoch(train)  [e][  i/N]  lr: ...  eta: ...  time: 0.4850  data_time: 0.0100  memory: 3520`",
              "time and data_time in seconds; the i/N counter's advance (interval, default 50) is the steps a "
              "line stands for; `eta: 1 day, 3:36:30` is a forecast, memory a size",
              "Epoch(train)  [1][ 100/7330]  lr: 7.9880e-03  eta: 1 day, 3:30:11  time: 0.4790  data_time: 0.0098",
              "mmdet/train.txt",
              rules=('lines.fields.Line.seconds', 'lines.fields.FORECASTS', 'lines.read.sampled_every')),
    Framework("llama_cpp", "llama.cpp print_timings (llama_print_timings, llama_perf_*_print)",
              "`label time = value ms / N tokens (x ms per token, y tokens per second)`",
              "each label's time (total: the whole); load time is the model's load, a one-off setup: no "
              "part of a step, never a host stall; sample, prompt eval and eval (the generation, no evaluation "
              "line) get no role (GPU or CPU work the text does not split); `ms per token` and `tokens per "
              "second` are rates, never read",
              "llama_print_timings: prompt eval time =     812.00 ms /    32 tokens (   25.38 ms per token)",
              "llama_cpp/print_timings.txt", reader="read_llama_cpp",
              gates=("llama_print_timings:", "llama_perf_"),
              rules=('lines.frameworks.read_llama_cpp', 'lines.records.KNOWN_NOTE')),
    Framework("vllm", "vLLM benchmark_serving",
              "a summary: `Label (unit): value`",
              "the benchmark's duration; Mean/Median/P99 of TTFT, TPOT, ITL are statistics of one quantity "
              "each (`TTFT.mean`), never parts; request and token throughputs are rates",
              "Mean TTFT (ms):                          52.31",
              "vllm/benchmark_serving.txt",
              rules=('lines.vocabulary.STAT_WORDS', 'lines.vocabulary.label_of', 'lines.records.not_parts')),
    Framework("tensorrt_llm", "TensorRT-LLM trtllm-bench",
              "a summary: `Label (unit): value`",
              "Total Latency (the whole); Average/P99 request latency are statistics; throughputs are rates",
              "P99 request latency (ms):                     20011.9000",
              "tensorrt_llm/trtllm_bench.txt",
              rules=('lines.vocabulary.STAT_WORDS', 'lines.records.not_parts')),
    Framework("perf_analyzer", "Triton perf_analyzer",
              "its client and server summaries: `Avg latency: 4992 usec (standard deviation 314 usec)`",
              "latency statistics (avg, p50..p99); the server's queue/compute breakdown is of the mean "
              "request latency: statistics, no host stall by itself",
              "Avg request latency: 4232 usec (overhead 51 usec + queue 25 usec + compute infer 4067 usec)",
              "perf_analyzer/summary.txt",
              rules=('lines.records.not_parts',)),
    Framework("mlperf", "MLPerf's mlperf-logging (mllog)",
              "`:::MLLOG {json}` events",
              "INTERVAL_START/INTERVAL_END pairs (epoch, block, run): stop - start; time_ms is a time stamp",
              ':::MLLOG {"time_ms": 1700000061000, "event_type": "INTERVAL_END", "key": "epoch_stop", ...}',
              "mlperf/mllog.txt", reader="read_mlperf", gates=(":::MLLOG ",),
              rules=('lines.frameworks.read_mlperf', 'mllog.read_mllog')),
    Framework("gnark", "gnark (zerolog console lines)",
              "`HH:MM:SS DBG <event> ... took=<ms>`",
              "took in milliseconds (zerolog's unit), named by its event (prover_took); nbConstraints and "
              "other counts are no times",
              "11:02:07 DBG prover done backend=groth16 curve=bn254 nbConstraints=1048576 took=2345.678",
              "gnark/prove.txt",
              rules=('lines.vocabulary.ZEROLOG_LEVELS', 'lines.vocabulary.zerolog_event', 'lines.fields.Line.seconds')),
    Framework("arkworks", "arkworks' print-trace timer tree",
              "`Start:` / `End: <label> ......<time>` lines, children indented",
              "a tree: each End line's time (after its children's); the root's End is the whole of its tree, "
              "a deeper timer a part of its parent (named by its path); without the root's End a record of its "
              "children, no whole; roots without children alone are stages of one record",
              "End:     Groth16::Prover ......................................................45.120ms",
              "arkworks/print_trace.txt", reader="read_timer_tree", gates=("Start:", "End:"),
              rules=("lines.frameworks.read_timer_tree", "lines.trees.read_ark")),
    Framework("plonky2", "plonky2's TimingTree",
              "`{secs:.4}s to <scope>` lines, each child after one `| ` per level (env_logger's prefix or none)",
              "a tree: the root is the whole of one record, its children the parts, a deeper scope a part of "
              "its parent (named by its path, never counted beside it); a scope's name is all its words",
              "[2024-05-14T08:12:07Z DEBUG plonky2::util::timing] 2.8841s to prove\n"
              "[2024-05-14T08:12:07Z DEBUG plonky2::util::timing] | 1.2210s to compute wires commitment",
              "plonky2/prove.txt", reader="read_timer_tree", gates=("s to ",),
              rules=("lines.frameworks.read_timer_tree", "lines.trees.read_tree", "lines.trees.LEAF_ROOT")),
    Framework("plonky3", "tracing-forest span trees (plonky3 and its users)",
              "`INFO     <span> [ <time> | <share>% ]`, children after `┝━ ` / `┕━ ` with `│  ` per level",
              "a tree as plonky2's: the root is the whole of one record, a root without children a one-off "
              "stage; the percentages are shares of the root, never read; event lines hold no time",
              "INFO     prove [ 1.12s | 0.91% / 100.00% ]\nINFO     ┝━ commit to trace data [ 561ms | 30.12% / 50.09% ]",
              "plonky3/prove_keccak.txt", reader="read_timer_tree", gates=("% ]", "\u2501 "),
              rules=("lines.frameworks.read_timer_tree", "lines.trees.read_tree", "lines.trees.is_tree_event")),
    Framework("tritonvm", "Triton VM's profiler (`triton-cli --profile`)",
              "`### <root>  <time>  #Reps  Share  Category`, then a row per span after `├─` / `└─` with `│ ` "
              "per level",
              "a tree as plonky2's: the root is the whole of one record, a row a part of its parent (named by "
              "its path); repetitions, shares, categories and memory deltas (sizes) are never read",
              "### Triton VM \u2013 Prove      1417.02s    #Reps   Share  Category     395.8 GiB\n"
              "\u251c\u2500trace execution        7.50s        1   0.53%  (gen  \u2013  4.34%)    +3.1 GiB",
              "tritonvm/profile_prove.txt", reader="read_timer_tree", gates=("#Reps", "\u251c\u2500", "\u2514\u2500"),
              rules=("lines.frameworks.read_timer_tree", "lines.trees.read_tree")),
    Framework("bellperson", "bellperson / filecoin provers",
              "`label time: <value><unit>` info lines",
              "synthesis, prover and proof time (the whole)",
              "INFO bellperson::groth16::prover > prover time: 2.600s",
              "bellperson/prove.txt",
              rules=('lines.fields.Line.name_of', 'lines.vocabulary.GENERIC')),
    Framework("criterion", "Rust's criterion benchmarks",
              "`<bench>  time: [low estimate high]` and its `Benchmarking ...` progress",
              "a benchmark table (parsers/log/benchtable.py): each benchmark's low / estimate / high time per "
              "iteration (thrpt where set), a unit per cell; no timed steps: `analyze` shows the table, commands "
              "that need steps refuse it",
              "fib 20                  time:   [26.029 us 26.251 us 26.505 us]",
              "criterion/fib.txt", reader="read_criterion", gates=("Benchmarking ", "time:   ["),
              refuses="a criterion benchmark report (low, estimate and high of each benchmark's time per "
                      "iteration: statistics)", markers=("time:   [",),
              rules=('lines.frameworks.read_criterion', 'benchtable._criterion', 'formats.table_kind')),
    Framework("google_benchmark", "Google Benchmark",
              "its table: `Benchmark  Time  CPU  Iterations` between dashed lines; its JSON report "
              "(--benchmark_format=json: `context` and `benchmarks`)",
              "a benchmark table: wall and CPU time per iteration (a unit per cell), iterations, user counters "
              "(`bytes_per_second=...Gi/s`: rates), aggregates of repetitions (_mean, _median, _stddev, _cv) and "
              "failed runs; no timed steps: `analyze` shows the table, commands that need steps refuse it",
              "BM_memcpy/512           12.3 ns         12.3 ns     56872000",
              "google_benchmark/memcpy.txt",
              refuses="a Google Benchmark table (time and CPU time per iteration of each benchmark, with its "
                      "iteration count)", markers=("Iterations", '"benchmarks": ['),
              rules=('benchtable._google_console', 'benchtable._google_json', 'formats.table_kind')),
    Framework("nccl_tests", "nccl-tests (all_reduce_perf, ...)",
              "its table: `# size count type redop root time algbw busbw #wrong ...` over its units line",
              "a latency/bandwidth table per message size: time (us), algbw and busbw (GB/s), #wrong, out-of-place "
              "and in-place, its settings (`#` lines) and `# Avg bus bandwidth`; no timed steps: `analyze` shows "
              "the table, commands that need steps refuse it",
              "     1048576        262144     float     sum      -1    61.20   17.13   30.00      0",
              "nccl_tests/all_reduce_perf.txt",
              refuses="an nccl-tests table (time and bandwidth per message size)", markers=("out-of-place", "busbw"),
              rules=('benchtable._nccl', 'formats.table_kind')),
    Framework("cprofile", "Python's cProfile / pstats (Lightning's AdvancedProfiler)",
              "`N function calls (M primitive calls) in X seconds`, `Ordered by:` and its `ncalls  tottime  "
              "percall  cumtime  percall` header",
              "no timed steps: calls and seconds per function over one profiled run (cumtime holds its callees': "
              "the rows nest); the header line's `in X seconds` is the profiled run's total, no step",
              "         4869394 function calls (4863767 primitive calls) in 19.107 seconds",
              "lightning/advanced_profiler_get_train_batch.txt", reader="read_cprofile", gates=("function calls",),
              refuses="a cProfile report (calls and seconds per function over one profiled run: Python's profiler, "
                      "Lightning's AdvancedProfiler)", markers=(CPROFILE_HEADER,),
              rules=('lines.frameworks.read_cprofile', 'formats.table_kind', 'formats.cprofile_report', 'logparse.bench_first')),
)


def docs_table() -> str:
    """The frameworks as docs/ANALYZE.md lists them (held equal by tests/test_parsers_frameworks.py)."""
    rows = ["| entry | who prints it | what is read (or why refused) | where (parsers/) |", "|---|---|---|---|"]
    for f in FRAMEWORKS:
        what = f.reads if not f.refuses else f"{f.reads} (no steps: {f.refuses})"
        where = ", ".join(f"`{r}`" for r in f.rules)
        rows.append(f"| `{f.name}` | {f.who} | {what.replace('|', '/')} | {where} |")
    return "\n".join(rows)
# tables of measurements that are no steps: (a text that marks them, what they are)
TABLES: tuple[tuple[str, str], ...] = (
    *((m, f.refuses) for f in FRAMEWORKS if f.refuses for m in f.markers),
    (":::MLLOG", "MLPerf log lines without an interval (:::MLLOG events; their time_ms is a time stamp)"),
)
# tables no reader reads, named only in the reason of a refusal (no timing line read from them:
# issue 33's corpus, tests/data/corpus/expected.toml); never a reason to refuse a log by itself
NAMED_ONLY: tuple[tuple[str, str], ...] = (
    ("Statistic ┃", "a genai-perf table (avg, min, max and percentiles of each metric over the requests: "
                   "statistics)"),
    ("[avg ms]", "a TensorFlow benchmark_model (stat_summarizer) table: count, average ms, shares and memory per "
                 "node or node type over the runs (a profiler's averages)"),
    (" ns/op", "a benchmark table of ns/op (go test -bench, benchstat, constantine: a mean time per operation "
               "over iterations: statistics)"),
    ("Section: GPU Speed Of Light", "an Nsight Compute report (each profiled kernel's Duration and its units' "
                                    "throughput as a share of peak, measured with the kernel replayed alone: "
                                    "no timeline of the program; `nsys profile` or `gpuscope record` shows where its "
                                    "time goes)"),
    ("torch.utils.benchmark.utils.common.Measurement", "torch.utils.benchmark measurements (the median time of a "
                                                       "statement over its runs: statistics)"),
)


def table_kind(text: str, named_only: bool = False) -> str | None:
    """What a log's head is when it is a table of measurements, else None (`named_only`: also
    the tables only a refusal names)."""
    return next((what for mark, what in (*TABLES, *(NAMED_ONLY if named_only else ())) if mark in text), None)


_TIME_HINTS = ("time", "elapsed", "took", "latency", "duration", "wall", "sec", "ms", "step", "iter")
# a number with a time unit after it (`  379.29 us`, torch.utils.benchmark's measurement): a hint too
_UNIT_NUMBER = re.compile(r"\d\s?(?:ns|us|\u00b5s|ms|s|sec|min)(?![A-Za-z])")


def closest_line(text: str, limit: int = 2000) -> str | None:
    """The line of a log's head that came closest to a timing line: one with a number and a
    word that hints at time (`time`, `took`, `step`, ...), else one with a number beside a
    `=` or `:`; None when no line has both a letter and a digit."""
    best, best_score = None, 0
    for line in text.split("\n", limit)[:limit]:
        t = line.strip()
        if not t or len(t) > 4096 or not any(c.isdigit() for c in t) or not any(c.isalpha() for c in t):
            continue
        low = t.lower()
        score = 1 + ("=" in t or ":" in t) + 2 * (any(h in low for h in _TIME_HINTS) or _UNIT_NUMBER.search(t) is not None)
        if score > best_score:
            best, best_score = t, score
            if score >= 4:
                break
    return best if best is None or len(best) <= 100 else best[:97] + "..."
