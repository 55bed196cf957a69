"""The one table of log formats: detection (parsers/detect.py), scanning (which scanner
reads a format, parsers/logparse.py), the CLI's `--format` help and the "no timing lines"
message all read it, so a format is added in one place.

Each format: its name, what it reads (one line), the text that selects it at detection
(markers; none: it is chosen by the vote of parsers/lines.sniff), and whether the compiled
scanner (parsers/_scan.c) reads it. SHAPES lists the line shapes the `lines` format reads,
each with the programs that print it (docs/ANALYZE.md has the examples)."""

from __future__ import annotations

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
    ("a time word with seconds", "Time 0.257 (0.257)  Data 0.175", "PyTorch examples' ProgressMeter, detectron2"),
    ("a time per step", "35ms/step, 2.10s/it, 0.31 sec/step", "Keras, tqdm/Lightning bars"),
    ("a whole run's runtime", "{'train_runtime': 245.8, ...}", "Hugging Face Trainer"),
    ("statistics of a latency", "Mean TTFT (ms): 52.3, p99 latency: 5868 usec", "vLLM, TensorRT-LLM, perf_analyzer"),
    ("a label = value ms summary", "prompt eval time = 812.00 ms", "llama.cpp print_timings"),
    ("a timer tree's End lines", "End: Compute C ......12.004ms", "arkworks print-trace"),
    ("zerolog console lines", "DBG prover done ... took=2345.6", "gnark"),
    ("MLPerf interval events", ':::MLLOG {"key": "epoch_stop", "event_type": "INTERVAL_END", ...}', "mlperf-logging"),
)


def help_text() -> str:
    """The `--format` option's help."""
    return "Force the log format: " + ", ".join(NAMES) + "."


def shapes_read(fmt: str) -> str:
    """What a format reads, for the message of a log with no timing lines (kv and lines:
    the shapes of both, since detection chose between them)."""
    if fmt in ("lines", "kv"):
        return ", ".join(s for s, _, _ in SHAPES)
    return BY_NAME[fmt].reads if fmt in BY_NAME else fmt


# tables of measurements that are no steps: (a text that marks them, what they are)
TABLES: tuple[tuple[str, str], ...] = (
    ("out-of-place", "an nccl-tests table (time and bandwidth per message size)"),
    ("busbw", "an nccl-tests table (time and bandwidth per message size)"),
    ("Iterations", "a Google Benchmark table (time per iteration of each benchmark)"),
    (":::MLLOG", "MLPerf log lines without an interval (:::MLLOG events; their time_ms is a time stamp)"),
    ("it/s", "a progress bar that prints a rate (it/s), not a time per step"),
)


def table_kind(text: str) -> str | None:
    """What a log's head is when it is a table of measurements or a rate, else None."""
    return next((what for mark, what in TABLES if mark in text), None)


_TIME_HINTS = ("time", "elapsed", "took", "latency", "duration", "wall", "sec", "ms", "step", "iter")


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
        score = 1 + ("=" in t or ":" in t) + 2 * any(h in low for h in _TIME_HINTS)
        if score > best_score:
            best, best_score = t, score
            if score >= 4:
                break
    return best if best is None or len(best) <= 100 else best[:97] + "..."
