"""The words that say what a printed number is, shared by the `lines` and `kv` readers: time
words, counters, metrics, rates and the keys of a line's own time stamp.

`not_a_duration(key)`: a key whose bare number is never a duration (a counter, a metric, a
rate, a time stamp): `loss=0.5`, `v_num=0`, `epoch=3`, `lr=1e-4`, `ts=1764590000`. The kv
reader skips such fields instead of reading them as milliseconds (parsers/_scan.c hands every
kv line with one back to Python)."""

from __future__ import annotations

TIME_WORDS = frozenset(("time", "elapsed", "latency", "duration", "took", "runtime", "wall",
                        "walltime", "wallclock"))
COUNTERS = frozenset(("step", "steps", "global_step", "epoch", "iter", "iteration", "batch",
                      "round", "cycle", "loop", "microbatch", "micro_step"))
METRICS = frozenset(("loss", "acc", "accuracy", "lr", "learning_rate", "ppl", "perplexity",
                     "grad_norm", "norm", "score", "reward", "top1", "top5", "f1", "bleu", "mae",
                     "mse", "rmse", "auc", "map", "temp", "temperature", "mem", "memory", "util",
                     "utilization", "power"))
# the last word of a metric's name (`train_loss`, `val_acc`, `grad_norm`)
METRIC_ENDINGS = frozenset(("loss", "acc", "accuracy", "norm"))
RATES = frozenset(("fps", "qps", "tps", "rps", "ips", "throughput", "bandwidth", "bw", "speed",
                   "rate", "flops", "tflops", "mfu", "gbs", "mbs"))
# keys whose value may be the line's own time (epoch seconds or milliseconds)
STAMP_KEYS = frozenset(("printed_at", "logged_at", "emitted_at", "ts", "timestamp", "time", "now",
                        "t_wall", "unix_time"))


# key classes (parsers.lines.key_info)
PLAIN, TIMEK, COUNTER, METRIC, RATE, BYTES, STAMP = range(7)


def key_class(low: str) -> int:
    """The class of a key, lower-cased (`-` as `_`) and without its unit suffix: a rate, a byte
    count, a time stamp, a counter, a metric, a time, or plain."""
    parts = low.split("_")
    last = parts[-1]
    if "per" in parts or low in RATES or last in RATES:
        return RATE
    if low.endswith("bytes"):
        return BYTES
    if (low in STAMP_KEYS or low.endswith("_at")) and low not in TIME_WORDS:
        return STAMP
    if low in COUNTERS:
        return COUNTER
    if low in METRICS or last in METRIC_ENDINGS:
        return METRIC
    if last in TIME_WORDS or parts[0] in TIME_WORDS:
        return TIMEK
    return PLAIN


def not_a_duration(key: str) -> bool:
    """Whether a unit-less `key=N` is a counter, metric, rate or time stamp (never a duration):
    key_class, as the `lines` reader classes it, and `v_num` (PyTorch Lightning's version
    number) and other `*_num` / `num_*` counts."""
    low = key.lower().replace("-", "_")
    parts = low.split("_")
    return key_class(low) in (COUNTER, METRIC, RATE, STAMP) or parts[-1] == "num" or parts[0] == "num"


def is_stamp(name: str, ms: float) -> bool:
    """A stamp-named key (`ts`, `time`, `timestamp`, `*_at`, without its unit) holding a point
    in time (epoch milliseconds 2001..2286): the line's time, never a duration."""
    low = name.lower().replace("-", "_")
    return (low in STAMP_KEYS or low.endswith("_at")) and 1e12 <= ms < 1e13
