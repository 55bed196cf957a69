"""Peak RSS by stage of `gpuscope analyze --json` of an Nsight export (or the bench's read+analyze;
issue 32: where the memory of an export of 10M kernels goes).

    python tools/nsys_stages.py FILE [--bench]      (TREE=OTHER_CHECKOUT: that checkout's gpuscope)

Each wrapped function's entry and exit is an event; between two events the peak RSS (VmHWM,
reset after each event through /proc/self/clear_refs) is that segment's. Prints the timeline:
event, RSS at the event, the segment's peak before it, CPU s.
"""
import functools
import importlib
import json
import os
import sys
import time

TARGETS = [
    ("gpuscope.parsers.trace.nsys_sqlite", "read_nsys_sqlite"),
    ("gpuscope.parsers.trace.nsys_host", "NsysHost.read"),
    ("gpuscope.parsers.trace.host_summary", "Cover._flush"),
    ("gpuscope.parsers.trace.nsys_sqlite", "_Reader.gpu_parts"),  # (before gpuread)
    ("gpuscope.parsers.trace.nsys_sqlite", "_Reader.gpu_read"),
    ("gpuscope.parsers.trace.nsys_gpu", "GpuRead.frame"),
    ("gpuscope.parsers.trace.nsys_columns", "stack_parts"),
    ("gpuscope.parsers.trace.nsys_sqlite", "_Reader.devices"),
    ("gpuscope.parsers.trace.nsys_sqlite", "_kernel_spans"),
    ("gpuscope.analysis.trace_analysis", "analyze_trace"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "line_rate_floor"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "device_views"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "memcpy_rows"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "memset_rows"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "stream_rows"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "device_rows"),
    ("gpuscope.analysis.evidence.trace.trace_activity", "counters"),
    ("gpuscope.analysis.evidence.trace.trace_gaps", "device_gaps"),
    ("gpuscope.analysis.evidence.trace.trace_gaps", "gaps_json"),
    ("gpuscope.analysis.evidence.trace.trace_phases", "split_table"),
    ("gpuscope.analysis.evidence.trace.trace_phases", "phase_frame"),
    ("gpuscope.analysis.evidence.trace.top_kernels", "top_kernels"),
    ("gpuscope.analysis.rules.registry", "run_rules"),
    ("gpuscope.analysis.document", "trace_doc"),
]

events = []
t0 = time.process_time()


def mark(what):
    st = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmHWM", "VmRSS"):
            st[k] = int(v.split()[0]) // 1024
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    events.append((what, st["VmRSS"], st["VmHWM"], time.process_time() - t0))


def wrap(modname, qual):
    mod = importlib.import_module(modname)
    owner, name = mod, qual
    if "." in qual:
        cls, name = qual.split(".")
        owner = getattr(mod, cls)
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def w(*a, **k):
        mark(f"> {qual}")
        try:
            return fn(*a, **k)
        finally:
            mark(f"< {qual}")

    setattr(owner, name, w)
    # modules that imported the name directly
    for m in list(sys.modules.values()):
        if m is not None and m is not mod and getattr(m, name, None) is fn and "." not in qual:
            setattr(m, name, w)


def main():
    path = sys.argv[1]
    tree = os.environ.get("TREE")
    if tree:  # another checkout's gpuscope, not the venv's editable one
        sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in
                            (getattr(f, '__module__', '') + getattr(f, '__name__', '') + type(f).__name__).lower()]
        sys.path.insert(0, tree)
    open("/proc/self/oom_score_adj", "w").write("1000")
    import gpuscope.analysis  # noqa: F401
    import gpuscope.analysis.document  # noqa: F401
    import gpuscope.cli  # noqa: F401
    for m, q in TARGETS:
        try:
            wrap(m, q)
        except (ImportError, AttributeError) as e:
            print("skip", m, q, e, file=sys.stderr)
    import gpuscope
    print("gpuscope of", gpuscope.__file__, file=sys.stderr)
    mark("start")
    if "--bench" in sys.argv:
        from gpuscope.analysis.document import trace_doc
        from gpuscope.analysis.trace_analysis import analyze_trace
        from gpuscope.parsers.trace.nsys_sqlite import read_nsys_sqlite
        fr = read_nsys_sqlite(path)
        a = analyze_trace(fr, line_rate_gbs=50.0, line_rate_source="option")
        json.dumps(trace_doc(a))
    else:
        from gpuscope.cli import main as cli
        out = os.devnull
        saved = sys.stdout
        sys.stdout = open(out, "w")
        try:
            cli(["analyze", "--json", path])
        except SystemExit:
            pass
        finally:
            sys.stdout = saved
    mark("end")
    depth = 0
    peak = 0
    hidden = 0  # the cover flushes' segments: their peak shown on the next line
    for what, rss, hwm, cpu in events:
        if "_flush" in what:
            peak = max(peak, hwm)
            hidden = max(hidden, hwm)
            continue
        if what.startswith("<"):
            depth -= 1
        hwm, hidden = max(hwm, hidden), 0
        peak = max(peak, hwm)
        print(f"{'  ' * depth}{what:<40} rss {rss:>6} MiB  seg-peak {hwm:>6} MiB  cpu {cpu:7.1f}")
        if what.startswith(">"):
            depth += 1
    print(f"overall peak {peak} MiB, cpu {time.process_time() - t0:.1f}")


main()
