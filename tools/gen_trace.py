#!/usr/bin/env python3
"""Synthetic PyTorch profiler (Kineto) Chrome traces, in the layout torch 2.x writes.

Two uses: tests build small traces event by event (`TraceBuilder`), and `make bench`
generates a realistic large one (`generate(n_events)`): training-style steps, each a
ProfilerStep# annotation holding a data-loader fetch, an upload of the batch (HtoD from
pinned or pageable memory), operators that launch kernels (cpu_op + cudaLaunchKernel +
kernel + the ac2g flow pair), a few memsets and a synchronize at the step's end.

    python tools/gen_trace.py --events 1000000 -o bench-out/trace_1m.json.gz

Times are microseconds (floats, as Kineto writes them) from a base near 5e12 us, with
baseTimeNanoseconds set so that epoch = base/1e9 + ts/1e6.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path
from typing import Any

BASE_NS = 1_790_857_026_000_000_000
T0_US = 5_258_599_310_000.0
KERNEL_NAMES = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, float const*)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
    "float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps>)",
    "sm90_xmma_fprop_implicit_gemm_indexed_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32",
)
OPS = ("aten::add", "aten::mul", "aten::conv2d", "aten::addmm", "aten::relu_", "aten::batch_norm")


class TraceBuilder:
    """Events of one rank's trace; times in microseconds from `t0` (add() them in any order)."""

    def __init__(self, *, pid: int = 549, device: int = 0, stream: int = 7, t0: float = T0_US,
                 base_ns: int | None = BASE_NS, rank: int | None = None) -> None:
        self.pid, self.device, self.stream, self.t0 = pid, device, stream, t0
        self.base_ns, self.rank = base_ns, rank
        self.events: list[dict[str, Any]] = []
        self._corr = 1000
        self._ext = 1

    # -- host side ------------------------------------------------------------------------
    def cpu(self, name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int | None = None) -> dict:
        self._ext += 1
        ev = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.pid if tid is None else tid,
              "ts": self.t0 + ts, "dur": dur, "args": {"External id": self._ext}}
        self.events.append(ev)
        return ev

    def annotation(self, name: str, ts: float, dur: float, *, gpu: bool = False) -> dict:
        if gpu:
            ev = {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": self.device,
                  "tid": self.stream, "ts": self.t0 + ts, "dur": dur, "args": {"External id": self._ext}}
            self.events.append(ev)
            return ev
        return self.cpu(name, ts, dur, cat="user_annotation")

    def runtime(self, name: str, ts: float, dur: float, *, correlation: int | None = None,
                cat: str = "cuda_runtime") -> int:
        """A runtime call; returns its correlation id (a new one unless given)."""
        if correlation is None:
            self._corr += 1
            correlation = self._corr
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.pid,
                            "ts": self.t0 + ts, "dur": dur, "args": {"cbid": 211, "correlation": correlation}})
        return correlation

    # -- device side ----------------------------------------------------------------------
    def _gpu(self, cat: str, name: str, ts: float, dur: float, corr: int | None, stream: int | None,
             extra: dict | None = None) -> dict:
        stream = self.stream if stream is None else stream
        args = {"External id": self._ext, "device": self.device, "context": 1, "stream": stream,
                "correlation": -1 if corr is None else corr}
        args.update(extra or {})
        ev = {"ph": "X", "cat": cat, "name": name, "pid": self.device, "tid": stream,
              "ts": self.t0 + ts, "dur": dur, "args": args}
        self.events.append(ev)
        if corr is not None:  # the ac2g flow pair Kineto writes for every launched GPU event
            self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.pid,
                                "ts": self.t0 + ts, "cat": "ac2g", "name": "ac2g"})
            self.events.append({"ph": "f", "id": corr, "pid": self.device, "tid": stream,
                                "ts": self.t0 + ts, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        return ev

    def kernel(self, ts: float, dur: float, name: str = KERNEL_NAMES[0], *, corr: int | None = None,
               stream: int | None = None) -> dict:
        return self._gpu("kernel", name, ts, dur, corr, stream,
                         {"grid": [128, 1, 1], "block": [256, 1, 1], "registers per thread": 32})

    def memcpy(self, ts: float, dur: float, nbytes: int, kind: str = "HtoD", src: str = "Pageable",
               dst: str = "Device", *, corr: int | None = None, stream: int | None = None) -> dict:
        gbs = nbytes / (dur * 1e3) if dur > 0 else 0.0
        return self._gpu("gpu_memcpy", f"Memcpy {kind} ({src} -> {dst})", ts, dur, corr, stream,
                         {"bytes": nbytes, "memory bandwidth (GB/s)": gbs})

    def memset(self, ts: float, dur: float, nbytes: int, *, corr: int | None = None,
               stream: int | None = None) -> dict:
        gbs = nbytes / (dur * 1e3) if dur > 0 else 0.0
        return self._gpu("gpu_memset", "Memset (Device)", ts, dur, corr, stream,
                         {"bytes": nbytes, "memory bandwidth (GB/s)": gbs})

    def launch(self, ts: float, kernel_start: float, kernel_dur: float, *, launch_dur: float = 5.0,
               op: str | None = None, name: str = KERNEL_NAMES[0], stream: int | None = None) -> dict:
        """An operator (optional), its cudaLaunchKernel at `ts` and the kernel it launched."""
        if op is not None:
            self.cpu(op, ts - 2.0, launch_dur + 4.0)
        corr = self.runtime("cudaLaunchKernel", ts, launch_dur)
        return self.kernel(kernel_start, kernel_dur, name, corr=corr, stream=stream)

    # -- the document ---------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        meta = [{"name": "process_name", "ph": "M", "ts": self.t0, "pid": self.pid, "tid": 0,
                 "args": {"name": "python3"}},
                {"name": "process_labels", "ph": "M", "ts": self.t0, "pid": self.pid, "tid": 0,
                 "args": {"labels": "CPU"}},
                {"name": "process_labels", "ph": "M", "ts": self.t0, "pid": self.device, "tid": 0,
                 "args": {"labels": f"GPU {self.device}"}},
                {"name": "thread_name", "ph": "M", "ts": self.t0, "pid": self.device, "tid": self.stream,
                 "args": {"name": f"stream {self.stream} "}}]
        doc: dict[str, Any] = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": self.device, "name": "NVIDIA H200", "numSms": 132,
                                  "totalGlobalMem": 150109880320}],
        }
        if self.rank is not None:
            doc["distributedInfo"] = {"backend": "nccl", "rank": self.rank, "world_size": 2}
        doc["displayTimeUnit"] = "ms"
        if self.base_ns is not None:
            doc["baseTimeNanoseconds"] = self.base_ns
        doc["traceEvents"] = meta + self.events
        doc["traceName"] = "synthetic.pt.trace.json"
        return doc

    def write(self, path: str | Path) -> Path:
        return write(self.document(), path)


def write(doc: dict[str, Any], path: str | Path) -> Path:
    """Write a trace document (.gz: gzip level 1, as fast to write as to read)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc, separators=(", ", ": ")).encode()
    if p.suffix == ".gz":
        p.write_bytes(gzip.compress(data, compresslevel=1))
    else:
        p.write_bytes(data)
    return p


def generate(n_events: int = 1_000_000, seed: int = 1, *, kernels_per_step: int = 400,
             pageable: bool = True) -> dict[str, Any]:
    """A realistic training-style trace of about `n_events` events (see the module doc)."""
    rng = random.Random(seed)
    b = TraceBuilder()
    t = 0.0
    step = 0
    mib = 1 << 20
    while len(b.events) < n_events:
        step_start = t
        # the data-loader fetch: CPU only, the GPU idles
        fetch = rng.uniform(2000.0, 6000.0)
        b.annotation("data", t, fetch + 10.0)
        b.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 2.0, fetch)
        t += fetch + 12.0
        # the upload of the batch
        nbytes = 64 * mib
        rate = rng.uniform(6.5, 9.5) if pageable else rng.uniform(53.0, 55.5)  # GB/s
        dur = nbytes / (rate * 1e3)
        corr = b.runtime("cudaMemcpyAsync", t, dur + 20.0 if pageable else 8.0)
        b.memcpy(t + 6.0, dur, nbytes, "HtoD", "Pageable" if pageable else "Pinned", corr=corr)
        gpu_t = t + 6.0 + dur
        t += (dur + 25.0) if pageable else 10.0
        # forward/backward: operators launching kernels, the GPU running behind the host
        fb_start = t
        for k in range(kernels_per_step):
            kdur = rng.choice((2.5, 8.0, 35.0, 120.0, 400.0))
            op = OPS[k % len(OPS)]
            launch_dur = rng.uniform(3.0, 7.0)
            kstart = max(gpu_t + 1.5, t + 4.0)
            b.launch(t, kstart, kdur, launch_dur=launch_dur, op=op, name=KERNEL_NAMES[k % len(KERNEL_NAMES)])
            gpu_t = kstart + kdur
            t += launch_dur + rng.uniform(4.0, 9.0)
            if k % 100 == 50:
                c = b.runtime("cudaMemsetAsync", t, 4.0)
                ms = max(gpu_t + 1.0, t + 3.0)
                b.memset(ms, 1.5, 4096, corr=c)
                gpu_t = ms + 1.5
                t += 6.0
        b.annotation("forward_backward", fb_start, t - fb_start)
        sync_end = max(t, gpu_t) + 8.0
        b.runtime("cudaDeviceSynchronize", t, sync_end - t)
        t = sync_end + 20.0
        b.annotation(f"ProfilerStep#{step}", step_start, t - step_start)
        step += 1
    return b.document()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pinned", action="store_true", help="upload from pinned memory (default pageable)")
    ap.add_argument("-o", "--output", required=True, help="path (.json or .json.gz)")
    args = ap.parse_args(argv)
    write(generate(args.events, args.seed, pageable=not args.pinned), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
