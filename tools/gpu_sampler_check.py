#!/usr/bin/env python3
"""Measure the NVML sampler on a real GPU: call costs, achieved rate, accuracy, overhead.

    PYTHONPATH=. python tools/gpu_sampler_check.py [--json OUT.json] [--gpu 0]
    PYTHONPATH=. python tools/gpu_sampler_check.py --workload 2     # just the copy+compute loop

Checks (docs/BENCHMARKS.md "Sampler and bandwidth"):
1. cost of one GPM read, one PCIe-counter field read, one slow-field read;
2. achieved rate and interval jitter at 5, 10 and 20 ms;
3. RX bytes integrated from the samples over timed pinned H2D copies vs the bytes copied
   (GPM and counter sources);
4. overhead at 100 Hz: the sampler thread's CPU time (% of a core) and the slowdown of a
   copy+compute loop (pinned H2D + matmuls), median of 5 runs with and 5 without, interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuscope import cuda, nvml  # noqa: E402
from gpuscope.sampler import ListSink, Sampler  # noqa: E402


def _time_calls(fn, n: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def call_costs(nv: nvml.Nvml, gpu: int) -> dict:
    h = nv.handle(gpu)
    out: dict = {}
    r = nv.gpm(gpu)
    if r is not None:
        out["gpm_read_ms"] = _time_calls(r.read, 200) * 1e3
        r.close()
    fields = (nvml.FI_PCIE_COUNT_RX_BYTES, nvml.FI_PCIE_COUNT_TX_BYTES)
    if nv.read_fields(h, fields) is not None:
        out["counter_read_ms"] = _time_calls(lambda: nv.read_fields(h, fields), 200) * 1e3
    out["slow_fields_ms"] = _time_calls(lambda: nv.slow_fields(h), 50) * 1e3
    return out


def spaced_costs(nv: nvml.Nvml, gpu: int, spacing_s: float = 0.010, n: int = 150) -> dict:
    """Thread CPU per call when calls are `spacing_s` apart, as in the sampler (back-to-back
    calls can hit a driver cache and look cheaper)."""
    import threading

    h = nv.handle(gpu)
    ev = threading.Event()
    rx, tx = nvml.FI_PCIE_COUNT_RX_BYTES, nvml.FI_PCIE_COUNT_TX_BYTES
    gpm = nv.gpm(gpu)
    cases = {
        "idle_wait": lambda: None,
        "fields_rx_tx": lambda: nv.read_fields(h, (rx, tx)),
        "fields_rx": lambda: nv.read_fields(h, (rx,)),
        "gpm_sample": (lambda: nv.query("nvmlGpmSampleGet", h, gpm.cur)) if gpm else None,
        "utilization": lambda: nv.query("nvmlDeviceGetUtilizationRates", h),
    }
    out = {}
    for name, fn in cases.items():
        if fn is None:
            continue
        cpu = 0.0
        wall = 0.0
        for _ in range(n):
            ev.wait(spacing_s)
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            cpu += time.thread_time() - c0
            wall += time.perf_counter() - w0
        out[name] = {"cpu_us": 1e6 * cpu / n, "wall_us": 1e6 * wall / n}
    # the loop's own cost: timed waits only
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(n):
        ev.wait(spacing_s)
    out["wait_loop_pct_core"] = 100 * (time.thread_time() - c0) / (time.perf_counter() - w0)
    if gpm:
        gpm.close()
    for name, kw in (("sampler_pcie_gpm_100ms_pct_core", {"pcie": "gpm", "interval_s": 0.1}),
                     ("sampler_counter_20ms_pct_core", {"interval_s": 0.02})):
        smp = Sampler(nv, [gpu], ListSink(), **kw).start()
        time.sleep(2.0)
        out[name] = 100 * smp.stop().cpu_fraction
    return out


def explore(nv: nvml.Nvml, gpu: int, n: int = 60) -> dict:
    """What a PCIe counter read costs, and how fresh it is (for a cheaper 100 Hz sampler):
    thread CPU and wall per read against the spacing between reads, idle and while a pinned
    copy loop keeps the link busy; RX alone vs RX+TX; nvmlDeviceGetPcieThroughput's CPU vs
    wall; how often the counter's value and NVML's timestamp change when polled back to back."""
    import threading

    h = nv.handle(gpu)
    rx, tx = nvml.FI_PCIE_COUNT_RX_BYTES, nvml.FI_PCIE_COUNT_TX_BYTES
    ev = threading.Event()

    def spaced(fn, spacing: float) -> dict:
        cpu = wall = 0.0
        for _ in range(n):
            if spacing:
                ev.wait(spacing)
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            cpu += time.thread_time() - c0
            wall += time.perf_counter() - w0
        return {"cpu_us": round(1e6 * cpu / n, 1), "wall_us": round(1e6 * wall / n, 1)}

    def freshness(seconds: float = 0.3) -> dict:
        vals, stamps, t_end = [], [], time.perf_counter() + seconds
        reads = 0
        while time.perf_counter() < t_end:
            r = nv.read_fields(h, (rx,))
            reads += 1
            if r and r[0][0] is not None:
                vals.append(r[0][0])
                stamps.append(r[0][1])
        changes = sum(1 for a, b in zip(vals, vals[1:], strict=False) if a != b)
        ts_changes = sum(1 for a, b in zip(stamps, stamps[1:], strict=False) if a != b)
        return {"reads": reads, "reads_per_s": round(reads / seconds), "value_changes": changes,
                "timestamp_changes": ts_changes}

    def measure(tag: str) -> dict:
        out = {}
        for sp in (0.0, 0.001, 0.002, 0.005, 0.010, 0.020, 0.050):
            out[f"rx_tx_{sp * 1e3:g}ms"] = spaced(lambda: nv.read_fields(h, (rx, tx)), sp)
        out["rx_only_10ms"] = spaced(lambda: nv.read_fields(h, (rx,)), 0.010)
        out["throughput_rx"] = spaced(lambda: nv.query("nvmlDeviceGetPcieThroughput", h, nvml.PCIE_UTIL_RX_BYTES),
                                      0.0)
        out["freshness"] = freshness()
        return {tag: out}

    res = measure("idle")
    stop = threading.Event()
    cp = cuda.require("the sampler check")
    rt, size = cp.cuda.runtime, 512 * 1024**2
    host = rt.hostAlloc(size, 0)
    dev = cp.empty(size, dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)

    def copier() -> None:
        while not stop.is_set():
            rt.memcpyAsync(dev.data.ptr, host, size, 1, stream.ptr)  # 1: host to device
            stream.synchronize()

    th = threading.Thread(target=copier, daemon=True)
    th.start()
    time.sleep(0.2)
    try:
        res.update(measure("link_busy"))
    finally:
        stop.set()
        th.join(5)
        rt.freeHost(host)
    return res


def rates(nv: nvml.Nvml, gpu: int) -> list[dict]:
    """On an idle GPU: the rate, its jitter and the CPU it takes, steady (every tick) and
    adaptive (the default: the quiet interval while PCIe is quiet)."""
    res = []
    for ms in (5, 10, 20):
        for mode, quiet in (("steady", None), ("adaptive", 0.05)):
            s = Sampler(nv, [gpu], ListSink(), interval_s=ms / 1e3, quiet_interval_s=quiet).start()
            time.sleep(1.0)
            st = s.stop()
            res.append({"interval_ms": ms, "mode": mode, "achieved_hz": st.achieved_hz, "p50_ms": st.interval_p50_ms,
                        "p99_ms": st.interval_p99_ms, "max_ms": st.interval_max_ms,
                        "cpu_pct_core": 100 * st.cpu_fraction, "fast_ticks": st.fast_ticks, "ticks": st.ticks,
                        "source": st.sources.get(gpu)})
    return res


class Loop:
    """The copy+compute loop: pinned H2D of `chunk` bytes + `mm` 4096^2 fp32 matmuls, per iteration."""

    def __init__(self, chunk: int = 256 * 1024**2, mm: int = 4) -> None:
        cupy = cuda.require("the copy+compute loop")
        self.cp = cupy
        self.rt = cupy.cuda.runtime
        self.chunk = chunk
        self.mm = mm
        self.host = self.rt.hostAlloc(chunk, 0)
        self.dev = cupy.empty(chunk, dtype=cupy.uint8)
        import numpy as np

        rng = np.random.default_rng(1)
        self.a = cupy.asarray(rng.standard_normal((4096, 4096), dtype=np.float32))
        self.b = cupy.asarray(rng.standard_normal((4096, 4096), dtype=np.float32))
        self.c = cupy.empty_like(self.a)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.run(3)

    def run(self, iters: int) -> float:
        cp = self.cp
        self.stream.synchronize()
        t0 = time.perf_counter()
        with self.stream:
            for _ in range(iters):
                self.rt.memcpyAsync(self.dev.data.ptr, self.host, self.chunk, 1, self.stream.ptr)
                for _ in range(self.mm):
                    cp.matmul(self.a, self.b, out=self.c)
        self.stream.synchronize()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.rt.freeHost(self.host)


def cpu_profile(nv: nvml.Nvml, gpu: int) -> dict:
    """Where the sampler's CPU goes at 100 Hz: per NVML function, and per configuration."""
    out: dict = {"variants": {}}
    nv.profile = {}
    s = Sampler(nv, [gpu], ListSink(), interval_s=0.010).start()
    time.sleep(2.0)
    st = s.stop()
    prof, nv.profile = nv.profile, None
    dur = st.duration_s
    out["duration_s"] = dur
    out["sampler_cpu_s"] = st.cpu_s
    out["nvml"] = {k: {"calls": c, "cpu_us_per_call": 1e6 * t / c, "pct_core": 100 * t / dur}
                   for k, (c, t) in sorted(prof.items(), key=lambda kv: -kv[1][1])}
    out["python_rest_pct_core"] = 100 * (st.cpu_s - sum(t for _, t in prof.values())) / dur
    for name, kw in (("default", {}), ("slow_1hz", {"slow_interval_s": 1.0}), ("no_gpm", {"use_gpm": False}),
                     ("slow_1hz_no_gpm", {"slow_interval_s": 1.0, "use_gpm": False})):
        s = Sampler(nv, [gpu], ListSink(), interval_s=0.010, **kw).start()
        time.sleep(1.5)
        out["variants"][name] = 100 * s.stop().cpu_fraction
    return out


def accuracy(nv: nvml.Nvml, gpu: int, loop: Loop) -> list[dict]:
    res = []
    for pcie, n in (("counter", 32), ("counter", 400), ("gpm", 400)):
        sink = ListSink()
        s = Sampler(nv, [gpu], sink, interval_s=0.010, pcie=pcie)
        src = s.stats.sources.get(gpu)
        if src != pcie:
            s.stop()
            res.append({"source": pcie, "skipped": f"source is {src}"})
            continue
        s.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        with loop.stream:
            for _ in range(n):
                loop.rt.memcpyAsync(loop.dev.data.ptr, loop.host, loop.chunk, 1, loop.stream.ptr)
        loop.stream.synchronize()
        secs = time.perf_counter() - t0
        time.sleep(0.2)
        st = s.stop()
        rows = [r for r in sink.rows if r.get("rx_gbs") is not None]
        rx = 0.0
        peak = 0.0
        for prev, cur in zip(rows, rows[1:], strict=False):
            rx += cur["rx_gbs"] * 1e9 * (cur["t_mono"] - prev["t_mono"])
            peak = max(peak, cur["rx_gbs"])
        zeros = sum(1 for r in sink.rows if r.get("sm_active") == 0.0)
        sm_rows = sum(1 for r in sink.rows if r.get("sm_active") is not None)
        copied = n * loop.chunk
        res.append({"source": src, "copied_bytes": copied, "copy_gbs": copied / secs / 1e9,
                    "rx_integrated_bytes": rx, "ratio": rx / copied, "peak_rx_gbs": peak,
                    "rows": len(sink.rows), "rx_rows": len(rows), "gpm_rows": sm_rows,
                    "gpm_rows_sm_zero": zeros, "wrap_suspect_rows": st.wrap_suspect_rows})
    return res


def overhead(nv: nvml.Nvml, gpu: int, loop: Loop, iters: int, runs: int = 5) -> dict:
    """The copy+compute loop without a sampler and with one at 100 Hz (adaptive, the default),
    interleaved; the steady sampler's CPU over the same loop beside it."""
    without, with_, cpu, cpu_steady, fast = [], [], [], [], []
    for _ in range(runs):
        without.append(loop.run(iters))
        s = Sampler(nv, [gpu], ListSink(), interval_s=0.010).start()
        with_.append(loop.run(iters))
        st = s.stop()
        cpu.append(100 * st.cpu_fraction)
        fast.append(st.fast_ticks / max(1, st.ticks))
        s = Sampler(nv, [gpu], ListSink(), interval_s=0.010, quiet_interval_s=None).start()
        loop.run(iters)
        cpu_steady.append(100 * s.stop().cpu_fraction)
    m0, m1 = statistics.median(without), statistics.median(with_)
    return {"iters": iters, "without_s": without, "with_s": with_, "median_without_s": m0,
            "median_with_s": m1, "slowdown_pct": 100 * (m1 - m0) / m0,
            "spread_without_pct": 100 * (max(without) - min(without)) / m0,
            "sampler_cpu_pct_core": statistics.median(cpu), "sampler_cpu_pct_all": cpu,
            "fast_tick_share": statistics.median(fast),
            "steady_sampler_cpu_pct_core": statistics.median(cpu_steady)}


def workload(seconds: float, upload: int = 512 * 1024**2) -> int:
    """A CuZK-shaped loop for `record`: per 'partition' a pageable H2D upload (logged as
    ntt_kernels) then matmuls (logged as msm_invoke), printed in the real CUZK formats."""
    import numpy as np

    cupy = cuda.require("the CuZK-shaped loop")
    loop = Loop(chunk=upload)
    host = np.ones(upload, dtype=np.uint8)  # pageable, as in the article
    ev = [cupy.cuda.Event() for _ in range(3)]
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        ev[0].record(loop.stream)
        loop.rt.memcpyAsync(loop.dev.data.ptr, host.ctypes.data, upload, 1, loop.stream.ptr)
        ev[1].record(loop.stream)
        with loop.stream:
            for _ in range(loop.mm * 4):
                loop.cp.matmul(loop.a, loop.b, out=loop.c)
        ev[2].record(loop.stream)
        ev[2].synchronize()
        up = round(cupy.cuda.get_elapsed_time(ev[0], ev[1]))
        mm = round(cupy.cuda.get_elapsed_time(ev[1], ev[2]))
        tot = up + mm
        for line in ("CUZK_TIMING: pre_lock_cpu_ms=0 mutex_wait_ms=0",
                     f"CUZK_NTT_H: d_b_alloc=0ms ntt_kernels={up}ms coset_intt_sync=0ms msm_init=0ms "
                     f"msm_invoke={mm}ms msm_dtor=0ms total={tot}ms",
                     f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={tot}", "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",
                     "CUZK_TIMING: gpu_tid=0 batch_add_ms=0", f"CUZK_TIMING: gpu_tid=0 tail_msm_ms=0 gpu_total_ms={tot}",
                     f"CUZK_TIMING: mutex_held_ms={tot} total_start_fn_ms={tot}"):
            print(line, file=sys.stderr, flush=True)
    loop.close()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the full results here")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--costs", action="store_true", help="only the spaced per-call CPU costs")
    ap.add_argument("--explore", action="store_true",
                    help="only the counter read's cost against its spacing, idle and with the link busy")
    ap.add_argument("--workload", type=float, default=None, metavar="S",
                    help="only run a CuZK-shaped upload+compute loop for S seconds, printing CUZK timing lines")
    a = ap.parse_args()
    if a.workload is not None:
        return workload(a.workload)
    nv = nvml.get()
    if nv is None:
        print(f"NVML not usable: {nvml.unavailable_reason()}", file=sys.stderr)
        return 5
    if a.costs:
        print(json.dumps(spaced_costs(nv, a.gpu), indent=1))
        return 0
    if a.explore:
        print(json.dumps(explore(nv, a.gpu), indent=1))
        return 0
    out: dict = {"device": nv.device(a.gpu), "system": nv.system(),
                 "capabilities": nv.probe(a.gpu).to_dict()}
    def stage(name, fn):
        try:
            out[name] = fn()
        except Exception as e:  # keep the other stages' results
            out.setdefault("errors", {})[name] = f"{type(e).__name__}: {e}"
            print(f"stage {name} failed: {type(e).__name__}: {e}", file=sys.stderr)

    stage("call_costs", lambda: call_costs(nv, a.gpu))
    stage("rates", lambda: rates(nv, a.gpu))
    stage("cpu_profile", lambda: cpu_profile(nv, a.gpu))
    loop = Loop()
    out["loop_iter_s"] = loop.run(10) / 10
    iters = max(10, int(1.0 / out["loop_iter_s"]))
    stage("accuracy", lambda: accuracy(nv, a.gpu, loop))
    stage("overhead", lambda: overhead(nv, a.gpu, loop, iters))
    loop.close()
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(json.dumps(out.get("errors", {})))
    d = out["device"]
    print(f"\n== sampler check: {d['name']} {d['uuid']} driver {out['system']['driver']}")
    print("call costs (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in out.get("call_costs", {}).items()))
    for r in out.get("rates", []):
        print(f"interval {r['interval_ms']:>2} ms {r['mode']:>8}: {r['achieved_hz']:7.1f} Hz  p50 {r['p50_ms']:.2f} ms  "
              f"p99 {r['p99_ms']:.2f} ms  max {r['max_ms']:.2f} ms  CPU {r['cpu_pct_core']:.2f}% core  [{r['source']}]")
    for r in out.get("accuracy", []):
        if "skipped" in r:
            print(f"accuracy [{r['source']}]: skipped ({r['skipped']})")
        else:
            print(f"accuracy [{r['source']}]: copied {r['copied_bytes'] / 1e9:.2f} GB at {r['copy_gbs']:.1f} GB/s, "
                  f"integrated RX {r['rx_integrated_bytes'] / 1e9:.2f} GB (ratio {r['ratio']:.3f}), "
                  f"peak {r['peak_rx_gbs']:.1f} GB/s, wrap_suspect {r['wrap_suspect_rows']}")
    cp = out.get("cpu_profile")
    if cp:
        print(f"sampler CPU at 100 Hz by NVML function (python rest {cp['python_rest_pct_core']:.2f}% core):")
        for k, v in cp["nvml"].items():
            print(f"  {k:40s} {v['calls']:5d} calls {v['cpu_us_per_call']:8.1f} us/call {v['pct_core']:6.2f}% core")
        print("  variants (% core): " + ", ".join(f"{k} {v:.2f}" for k, v in cp["variants"].items()))
    o = out.get("overhead")
    if o is None:
        return 1
    print(f"overhead at 100 Hz: loop {o['median_without_s']:.4f} s -> {o['median_with_s']:.4f} s "
          f"({o['slowdown_pct']:+.2f}%, run-to-run spread {o['spread_without_pct']:.2f}%), "
          f"sampler CPU {o['sampler_cpu_pct_core']:.2f}% of a core (adaptive, {100 * o['fast_tick_share']:.0f}% "
          f"of ticks fast; steady {o['steady_sampler_cpu_pct_core']:.2f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
